//! The CRDs `#[derive(CustomResource)]` generates (kclient-derive-tests' golden CRDs, which
//! they pin to what the derive makes) installed on the server, and objects valid and invalid
//! by their schemas written to them: accepted and refused alike on both servers, with the
//! same messages. [`derived_crd_rules`] checks, on kube-apiserver only, that the CEL rules the
//! derive writes are enforced (kclient-fake does not evaluate CEL: docs/testing-with-kclient-fake.md).

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::crd::{causes, conditions, SETTLE};
use super::{outcome, poll, until_not_found, Namespace};
use crate::client::ApiClient;
use crate::target::{Target, TargetKind};
use crate::transcript::Transcript;

/// The golden CRDs, by name.
const GOLDEN: [(&str, &str); 5] = [
    (
        "memcached",
        include_str!("../../../kclient-derive-tests/tests/golden/memcached.yaml"),
    ),
    (
        "fields",
        include_str!("../../../kclient-derive-tests/tests/golden/fields.yaml"),
    ),
    (
        "enums",
        include_str!("../../../kclient-derive-tests/tests/golden/enums.yaml"),
    ),
    (
        "cel",
        include_str!("../../../kclient-derive-tests/tests/golden/cel.yaml"),
    ),
    (
        "versions",
        include_str!("../../../kclient-derive-tests/tests/golden/versions.yaml"),
    ),
];

/// A golden CRD in a group unique to this run (`<prefix>.<its group>`).
struct Installed {
    crd: Value,
    group: String,
    path: String,
}

impl Installed {
    /// The path of the collection of `version` in `namespace` (ignored when cluster-scoped).
    fn collection(&self, version: &str, namespace: &str) -> String {
        let plural = self.crd["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default();
        if self.crd["spec"]["scope"] == "Namespaced" {
            format!(
                "/apis/{}/{version}/namespaces/{namespace}/{plural}",
                self.group
            )
        } else {
            format!("/apis/{}/{version}/{plural}", self.group)
        }
    }

    /// An object of the kind in `version`.
    fn object(&self, version: &str, name: &str, spec: Value) -> Value {
        json!({
            "apiVersion": format!("{}/{version}", self.group),
            "kind": self.crd["spec"]["names"]["kind"],
            "metadata": {"name": name},
            "spec": spec,
        })
    }
}

/// Installs the golden CRD `name` in a group unique to the run, waits until it is served,
/// and records how it went.
async fn install(client: &ApiClient, name: &str, t: &mut Transcript) -> Result<Installed> {
    let yaml = GOLDEN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, y)| *y)
        .context("a golden CRD of that name")?;
    let mut crd: Value = serde_yaml_ng::from_str(yaml)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let group = format!(
        "d{nanos:x}.{}",
        crd["spec"]["group"].as_str().unwrap_or_default()
    );
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    crd["spec"]["group"] = json!(group);
    crd["metadata"]["name"] = json!(format!("{plural}.{group}"));
    let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}");
    let created = client
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await?;
    t.record(format!("{name}: create CRD"), outcome(&created));
    ensure!(
        created.status == StatusCode::CREATED,
        "the derived CRD {name} was refused: {}",
        created.body
    );
    let path_ref = &path;
    let established = poll(SETTLE, move || async move {
        let crd = client.get(path_ref).await?.expect(StatusCode::OK)?;
        let found = conditions(&crd.body, &["Established", "NamesAccepted"]);
        Ok((found == ["Established=True", "NamesAccepted=True"]).then_some(found))
    })
    .await
    .with_context(|| format!("the derived CRD {name} did not become Established"))?;
    t.record(format!("{name}: conditions"), json!(established));
    Ok(Installed { crd, group, path })
}

/// Writes `spec` as object `object` of `installed` in `version`; records the outcome, and
/// for a refusal its causes and message (the run's group replaced by a placeholder).
async fn write(
    client: &ApiClient,
    installed: &Installed,
    ns: &Namespace,
    version: &str,
    (step, object, spec): (&str, &str, Value),
    t: &mut Transcript,
) -> Result<StatusCode> {
    let path = installed.collection(version, &ns.name);
    let body = installed.object(version, object, spec);
    // The real server may refuse for a moment after the CRD is established.
    let (path_ref, body_ref) = (&path, &body);
    let response = poll(SETTLE, move || async move {
        let response = client.post(path_ref, body_ref).await?;
        Ok((response.status != StatusCode::NOT_FOUND).then_some(response))
    })
    .await?;
    t.record(step, outcome(&response));
    if response.status == StatusCode::CREATED {
        t.record(
            format!("{step}: stored spec"),
            response.body["spec"].clone(),
        );
    } else {
        t.record(format!("{step}: causes"), causes(&response.body));
        let message = response.body["message"].as_str().unwrap_or_default();
        t.record(
            format!("{step}: message"),
            message.replace(&installed.group, "<group>"),
        );
    }
    Ok(response.status)
}

/// Deletes what [`install`] made and waits until it is gone.
async fn uninstall(client: &ApiClient, installed: Installed) -> Result<()> {
    client.delete(&installed.path).await?;
    until_not_found(client, &installed.path, SETTLE)
        .await
        .context("a derived CRD was not deleted")?;
    Ok(())
}

/// Every derived CRD accepted; objects valid and invalid by their schemas.
pub async fn derived_crds(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "derived").await?;
    let mut t = Transcript::new();
    let mut installed = Vec::new();
    for (name, _) in GOLDEN {
        installed.push((name, install(&client, name, &mut t).await?));
    }
    let crd = |name: &str| {
        installed
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, i)| i)
            .expect("installed above")
    };
    let memcached = [
        (
            "memcached: size 3",
            "m1",
            json!({"size": 3, "containerPort": 11211}),
        ),
        ("memcached: size 0", "m2", json!({"size": 0})),
        ("memcached: size 6", "m3", json!({"size": 6})),
        ("memcached: no size", "m4", json!({"containerPort": 11211})),
        ("memcached: size as a string", "m5", json!({"size": "3"})),
        (
            "memcached: port out of range",
            "m6",
            json!({"size": 1, "containerPort": 70000}),
        ),
    ];
    let fields = [
        (
            "fields: every field",
            "f1",
            json!({
                "name": "web", "displayName": "The web", "labels": {"a": "b"},
                "ports": [{"name": "http", "containerPort": 8080}],
                "backends": {"main": {"name": "api", "containerPort": 9090, "protocol": "TCP"}},
                "limits": {"cpu": "500m", "memory": "1Gi"}, "target": 8080,
                "deadline": "2026-11-29T00:00:00Z", "settings": {"any": [1, "two"]},
                "annotations": {"x": {"y": true}},
                "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}},
                "weight": 7, "ratio": 0.5, "enabled": true, "matrix": [[1, 2], [3]],
                "timeoutSeconds": 30, "unknownField": "pruned",
            }),
        ),
        (
            "fields: defaults",
            "f2",
            json!({"name": "d", "target": "http"}),
        ),
        (
            "fields: a name the pattern refuses",
            "f3",
            json!({"name": "Web", "target": 1}),
        ),
        (
            "fields: weight over 255",
            "f4",
            json!({"name": "w", "target": 1, "weight": 300}),
        ),
        (
            "fields: a port without its number",
            "f5",
            json!({"name": "p", "target": 1, "ports": [{"name": "http"}]}),
        ),
        (
            "fields: an embedded object without a kind",
            "f6",
            json!({"name": "e", "target": 1, "template": {"apiVersion": "v1", "metadata": {"name": "t"}}}),
        ),
        (
            "fields: target neither number nor string",
            "f7",
            json!({"name": "t", "target": true}),
        ),
    ];
    let valid_choice = json!({
        "phase": "Running", "mode": "safe", "source": {"type": "http", "url": "https://example.com"},
        "action": {"scale": {"replicas": 2}}, "port": "http", "strategy": "recreate",
    });
    let with = |key: &str, value: Value| {
        let mut spec = valid_choice.clone();
        spec[key] = value;
        spec
    };
    let enums = [
        ("enums: valid", "e1", valid_choice.clone()),
        (
            "enums: an unknown phase",
            "e2",
            with("phase", json!("Bogus")),
        ),
        (
            "enums: an unknown source type",
            "e3",
            with("source", json!({"type": "ftp"})),
        ),
        (
            "enums: two actions",
            "e4",
            with(
                "action",
                json!({"scale": {"replicas": 1}, "restart": {"reason": "r"}}),
            ),
        ),
        ("enums: no action", "e5", with("action", json!({}))),
        (
            "enums: a port of the wrong type",
            "e6",
            with("port", json!(true)),
        ),
        (
            "enums: a struct variant",
            "e7",
            with("strategy", json!({"rolling": {"max_surge": 1}})),
        ),
    ];
    for (crd_name, version, cases) in [
        ("memcached", "v1alpha1", &memcached[..]),
        ("fields", "v1", &fields[..]),
        ("enums", "v1", &enums[..]),
    ] {
        for (step, object, spec) in cases.iter().cloned() {
            write(
                &client,
                crd(crd_name),
                &ns,
                version,
                (step, object, spec),
                &mut t,
            )
            .await?;
        }
    }
    // Two versions of one kind, both served; v1 deprecated.
    let widgets = crd("versions");
    for (step, version, spec) in [
        ("versions: a v1 widget", "v1", json!({"size": 3})),
        (
            "versions: a v2 widget",
            "v2",
            json!({"width": 2, "height": 3}),
        ),
        ("versions: a v1 spec in v2", "v2", json!({"size": 3})),
    ] {
        let object = format!("w-{version}-{}", step.len());
        write(
            &client,
            widgets,
            &ns,
            version,
            (step, &object, spec),
            &mut t,
        )
        .await?;
    }
    let accepted = write(
        &client,
        crd("cel"),
        &ns,
        "v1beta1",
        (
            "cel: valid",
            "g-one",
            json!({"minReplicas": 1, "maxReplicas": 3, "color": "red"}),
        ),
        &mut t,
    )
    .await?;
    ensure!(
        accepted == StatusCode::CREATED,
        "a valid guarded object was refused"
    );
    for (_, i) in installed {
        uninstall(&client, i).await?;
    }
    ns.delete().await?;
    Ok(t)
}

/// The derive's CEL rules enforced by kube-apiserver: on the object, on a field, a transition
/// rule and a message expression (real server only).
pub async fn derived_crd_rules(target: &Target) -> Result<Transcript> {
    let mut t = Transcript::new();
    if target.kind != TargetKind::Real {
        return Ok(t);
    }
    let client = target.client()?;
    let ns = Namespace::create(&client, "rules").await?;
    let guarded = install(&client, "cel", &mut t).await?;
    let good = json!({"minReplicas": 1, "maxReplicas": 3, "color": "red", "note": "short"});
    let spec = |key: &str, value: Value| {
        let mut s = good.clone();
        s[key] = value;
        s
    };
    let cases = [
        (
            "min above max",
            "g-a",
            spec("minReplicas", json!(5)),
            "failed rule: self.spec.minReplicas <= self.spec.maxReplicas",
        ),
        (
            "a name without the prefix",
            "other",
            good.clone(),
            "the name starts with g-",
        ),
        (
            "a note too long",
            "g-b",
            spec("note", json!("far too long")),
            "too long: far too long",
        ),
    ];
    for (step, name, spec, expected) in cases {
        let status = write(
            &client,
            &guarded,
            &ns,
            "v1beta1",
            (step, name, spec),
            &mut t,
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY,
            "{step}: accepted"
        );
        let message = t
            .steps()
            .last()
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default()
            .to_owned();
        ensure!(message.contains(expected), "{step}: {message}");
    }
    let created = write(
        &client,
        &guarded,
        &ns,
        "v1beta1",
        ("valid", "g-c", good.clone()),
        &mut t,
    )
    .await?;
    ensure!(
        created == StatusCode::CREATED,
        "a valid guarded object was refused"
    );
    let path = format!("{}/g-c", guarded.collection("v1beta1", &ns.name));
    let patched = client
        .patch(
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"color": "blue"}}),
        )
        .await?;
    t.record("change the immutable color", outcome(&patched));
    let message = patched.body["message"].as_str().unwrap_or_default();
    ensure!(
        patched.status == StatusCode::UNPROCESSABLE_ENTITY
            && message.contains("color is immutable"),
        "the transition rule did not hold: {} {message}",
        patched.status
    );
    uninstall(&client, guarded).await?;
    ns.delete().await?;
    Ok(t)
}
