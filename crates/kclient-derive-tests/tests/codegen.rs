//! `cargo xtask codegen crd` and the derive agree: the types codegen makes from the derived
//! CRDs (`tests/generated/`, from `tests/golden/`, kept current by `cargo xtask test`'s
//! `codegen crd --check`) read and write the same objects as the derived types.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::generated;
use crate::types::{cel, enums, fields, memcached, versions};

/// `object` (a derived type's) read as `G` (codegen's) and written again is the same JSON,
/// and so the other way round.
fn agree<D, G>(object: &D)
where
    D: Serialize + DeserializeOwned,
    G: Serialize + DeserializeOwned,
{
    let derived = serde_json::to_value(object).unwrap();
    let generated: G = serde_json::from_value(derived.clone()).unwrap();
    let through_generated = serde_json::to_value(&generated).unwrap();
    assert_eq!(through_generated, derived, "derived -> generated -> JSON");
    let back: D = serde_json::from_value(through_generated).unwrap();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        derived,
        "generated -> derived -> JSON"
    );
}

fn from<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[test]
fn memcached() {
    let mut m = memcached::Memcached::new(
        "cache",
        memcached::MemcachedSpec {
            size: 3,
            container_port: Some(11211),
        },
    );
    m.metadata.namespace = Some("default".into());
    m.status = Some(from(json!({
        "conditions": [{"type": "Available", "status": "True", "reason": "Ready", "message": "3 ready",
                        "lastTransitionTime": "2026-11-29T00:00:00Z", "observedGeneration": 2}],
        "replicas": 3, "selector": "app=memcached", "nodes": ["a", "b"],
    })));
    agree::<_, generated::memcached::v1alpha1::Memcached>(&m);
}

#[test]
fn every_field_shape() {
    let spec: fields::FieldsSpec = from(json!({
        "name": "web", "displayName": "The web", "labels": {"a": "b"},
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "backends": {"main": {"name": "api", "containerPort": 9090}},
        "limits": {"cpu": "500m"}, "target": "http", "deadline": "2026-11-29T00:00:00Z",
        "settings": {"x": [1, "two"]}, "annotations": {"k": {"v": true}},
        "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}},
        "replicas": 2, "weight": 7, "ratio": 0.25, "enabled": false, "matrix": [[1], [2, 3]],
        "timeoutSeconds": 30,
    }));
    agree::<_, generated::fields::v1::Fields>(&fields::Fields::new("all", spec));
}

#[test]
fn enums_of_every_representation() {
    for spec in [
        json!({"phase": "Running", "mode": "safe", "nextPhase": "Succeeded",
               "source": {"type": "http", "url": "https://example.com"},
               "action": {"scale": {"replicas": 2}}, "port": 8080, "strategy": "recreate"}),
        json!({"phase": "Pending", "mode": "fast",
               "source": {"type": "bucket", "bucket": "b", "prefix": "p/"},
               "action": {"restart": {"reason": "r"}}, "port": "http",
               "strategy": {"rolling": {"max_surge": 1}}}),
    ] {
        let choice = enums::Choice::new("pick", from(spec));
        agree::<_, generated::choice::v1::Choice>(&choice);
    }
}

#[test]
fn rules_and_versions() {
    let guarded = cel::Guarded::new(
        "g-one",
        from(json!({
            "minReplicas": 1, "maxReplicas": 3, "color": "red", "tags": ["a"], "limits": {"x": 1}, "note": "n",
        })),
    );
    agree::<_, generated::guarded::v1beta1::Guarded>(&guarded);
    let v1 = versions::v1::Widget::new("w", versions::v1::WidgetSpec { size: 4 });
    agree::<_, generated::widget::v1::Widget>(&v1);
    let v2 = versions::v2::Widget::new(
        "w",
        versions::v2::WidgetSpec {
            width: 2,
            height: 3,
        },
    );
    agree::<_, generated::widget::v2::Widget>(&v2);
}
