//! Every generated CRD against kclient-fake, which checks structural schemas as
//! kube-apiserver does: accepted, Established, and its objects validated, pruned, scaled and
//! read back as the derived types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_core::{ApiStatus, CreateOptions};
use kclient_fake::FakeApiServer;
use kclient_typed::Clientset;
use serde_json::json;

use crate::types::{self, enums, fields, memcached};

async fn fake_with_crds() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::start().await.unwrap();
    let clientset = Clientset::new(server.config().unwrap()).unwrap();
    let crds = clientset.cluster_scoped::<CustomResourceDefinition>();
    for (name, crd) in types::golden() {
        let created = crds.create(&crd, &CreateOptions::default()).await;
        assert!(created.is_ok(), "{name}: {created:?}");
        let read = crds
            .get(&created.unwrap().metadata.name.unwrap())
            .await
            .unwrap();
        let conditions = read.status.unwrap().conditions.unwrap_or_default();
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True"),
            "{name}: {conditions:?}"
        );
    }
    (server, clientset)
}

#[tokio::test]
async fn derived_objects_are_written_read_validated_and_scaled() {
    let (_server, clientset) = fake_with_crds().await;
    let memcacheds = clientset.namespaced::<memcached::Memcached>("default");
    let spec = |size| memcached::MemcachedSpec {
        size,
        container_port: Some(11211),
    };
    let created = memcacheds
        .create(
            &memcached::Memcached::new("cache", spec(3)),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(created.spec, spec(3));
    assert_eq!(memcacheds.get("cache").await.unwrap().spec.size, 3);

    // Out of the schema's range, on both sides.
    for size in [0, 6] {
        let refused = memcacheds
            .create(
                &memcached::Memcached::new("bad", spec(size)),
                &CreateOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(refused.is_invalid(), "{refused}");
        let message = refused.api_status().unwrap().message.clone();
        let expected = if size == 0 {
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
        } else {
            "spec.size: Invalid value: 6: spec.size in body should be less than or equal to 5"
        };
        assert!(message.contains(expected), "{message}");
    }

    // The status subresource and the scale subresource.
    let mut with_status = created.clone();
    with_status.status = Some(memcached::MemcachedStatus {
        replicas: 2,
        selector: Some("app=memcached".into()),
        ..Default::default()
    });
    let updated = memcacheds
        .update_status(&with_status, &Default::default())
        .await
        .unwrap();
    assert_eq!(updated.status.as_ref().unwrap().replicas, 2);
    let scale = memcacheds.scale_to("cache", 5).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(5));
    assert_eq!(memcacheds.get("cache").await.unwrap().spec.size, 5);
}

#[tokio::test]
async fn enums_and_field_shapes_round_trip_through_the_server() {
    let (_server, clientset) = fake_with_crds().await;
    let choices = clientset.namespaced::<enums::Choice>("default");
    let choice = enums::Choice::new(
        "pick",
        enums::ChoiceSpec {
            phase: enums::Phase::Running,
            mode: enums::Mode::Safe,
            next_phase: None,
            source: enums::Source::Bucket {
                bucket: "b".into(),
                prefix: "p/".into(),
            },
            action: enums::Action::Restart {
                reason: "upgrade".into(),
            },
            port: enums::PortRef::Name("http".into()),
            strategy: enums::Strategy::Rolling { max_surge: 2 },
        },
    );
    let created = choices
        .create(&choice, &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(created.spec, choice.spec);

    let shapes = clientset.cluster_scoped::<fields::Fields>();
    let mut spec: fields::FieldsSpec = serde_json::from_value(json!({
        "name": "web",
        "displayName": "The web",
        "labels": {"a": "b"},
        "ports": [{"name": "http", "containerPort": 8080}],
        "backends": {"main": {"name": "api", "containerPort": 9090, "protocol": "TCP"}},
        "limits": {"cpu": "500m", "memory": "1Gi"},
        "target": 8080,
        "deadline": "2026-11-29T00:00:00Z",
        "settings": {"anything": [1, "two", {"three": 3}]},
        "annotations": {"x": {"y": true}},
        "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, "data": {"k": "v"}},
        "weight": 7,
        "ratio": 0.5,
        "enabled": true,
        "matrix": [[1, 2], [3]],
        "timeoutSeconds": 30,
    }))
    .unwrap();
    let created = shapes
        .create(
            &fields::Fields::new("all", spec.clone()),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(created.spec, spec);

    // A name the pattern refuses; a defaulted field the server fills in.
    spec.name = "Web".into();
    let refused = shapes
        .create(&fields::Fields::new("bad", spec), &CreateOptions::default())
        .await
        .unwrap_err();
    assert!(refused.is_invalid(), "{refused}");
    let raw = clientset
        .rest_client()
        .post()
        .abs_path("/apis/shapes.example.com/v1/fieldsets")
        .json_body(&json!({
            "apiVersion": "shapes.example.com/v1", "kind": "Fields",
            "metadata": {"name": "defaulted"},
            "spec": {"name": "d", "target": "http"},
        }))
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(raw["spec"]["replicas"], 1, "{raw}");
}
