//! A CustomResourceDefinition created, then used: it becomes Established, its resource shows in
//! discovery, custom objects are validated against and pruned by its schema, its status
//! subresource splits writes, and deleting it removes its objects.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{item_names, outcome, poll, until_not_found, Namespace};
use crate::target::Target;
use crate::transcript::Transcript;

/// How long the real server may take to serve a new resource or to forget a deleted one.
pub(super) const SETTLE: Duration = Duration::from_secs(60);

fn definition(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wdg"],
            },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "properties": {
                                "size": {"type": "integer", "minimum": 1},
                                "colour": {"type": "string", "enum": ["red", "blue"]},
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "free": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": true,
                                },
                            },
                        },
                        "status": {
                            "type": "object",
                            "properties": {"ready": {"type": "boolean"}},
                        },
                    },
                }},
            }],
        },
    })
}

fn widget(group: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// The CRD's conditions of the given types, as `type=status`.
pub(super) fn conditions(crd: &Value, types: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| types.iter().any(|t| c["type"] == *t))
        .map(|c| {
            format!(
                "{}={}",
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?")
            )
        })
        .collect();
    found.sort();
    found
}

/// Creates a CRD of a group unique to this run, uses it, deletes it.
pub async fn crd_create_then_use(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "crd").await?;
    let mut t = Transcript::new();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let group = format!("w{nanos:x}.e2e.kclient.dev");
    let crd_path =
        format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}");

    let created = client
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &definition(&group),
        )
        .await?;
    t.record("create CRD", outcome(&created));
    created.expect(StatusCode::CREATED)?;

    let (client_ref, crd_ref) = (&client, &crd_path);
    let established = poll(SETTLE, move || async move {
        let crd = client_ref.get(crd_ref).await?.expect(StatusCode::OK)?;
        let found = conditions(&crd.body, &["Established", "NamesAccepted"]);
        Ok((found == ["Established=True", "NamesAccepted=True"]).then_some(found))
    })
    .await
    .context("the CRD did not become Established")?;
    t.record("CRD conditions", json!(established));

    let discovery = format!("/apis/{group}/v1");
    let discovery_ref = &discovery;
    let resources = poll(SETTLE, move || async move {
        let response = client_ref.get(discovery_ref).await?;
        if response.status != StatusCode::OK {
            return Ok(None);
        }
        let mut names: Vec<String> = response.body["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                format!(
                    "{} kind={} namespaced={} shortNames={}",
                    r["name"].as_str().unwrap_or("?"),
                    r["kind"].as_str().unwrap_or("?"),
                    r["namespaced"],
                    r["shortNames"]
                )
            })
            .collect();
        names.sort();
        Ok((!names.is_empty()).then_some(names))
    })
    .await
    .context("the CRD's resource did not appear in discovery")?;
    t.record("discovery", json!(resources));

    let path = format!("/apis/{group}/v1/namespaces/{}/widgets", ns.name);
    let item = format!("{path}/w1");
    // The real server may still refuse for a moment after discovery shows the resource.
    let (path_ref, group_ref) = (&path, &group);
    let first = poll(SETTLE, move || async move {
        let response = client_ref
            .post(
                path_ref,
                &widget(group_ref, "w1", json!({"size": 3, "colour": "red"})),
            )
            .await?;
        Ok((response.status != StatusCode::NOT_FOUND).then_some(response))
    })
    .await?;
    t.record("create custom object", outcome(&first));
    let first = first.expect(StatusCode::CREATED)?;
    t.record("created spec", first.body["spec"].clone());

    // A custom resource has no protobuf: asked for protobuf first (as client-go's generated
    // clients ask for built-in kinds), the server answers JSON.
    let negotiated = client
        .get_accepting(&item, kclient_rest::PROTOBUF_ACCEPT)
        .await?
        .expect(StatusCode::OK)?;
    let media_type = negotiated
        .content_type
        .as_deref()
        .and_then(|ct| ct.split(';').next())
        .map(str::to_owned);
    t.record(
        "custom object asked for protobuf first",
        json!({"media type": media_type, "spec": negotiated.body["spec"]}),
    );
    ensure!(
        media_type.as_deref() == Some("application/json"),
        "a custom resource answered {media_type:?}"
    );

    for (step, spec) in [
        ("invalid enum value", json!({"size": 3, "colour": "green"})),
        ("below minimum", json!({"size": 0})),
        ("missing required", json!({"colour": "blue"})),
        ("wrong type", json!({"size": "three"})),
    ] {
        let refused = client.post(&path, &widget(&group, "bad", spec)).await?;
        t.record(step, outcome(&refused));
        ensure!(
            refused.status == StatusCode::UNPROCESSABLE_ENTITY
                && refused.reason() == Some("Invalid"),
            "{step}: {} {}",
            refused.status,
            refused.body
        );
        t.record(format!("{step} causes"), causes(&refused.body));
        // The group is unique to the run: the transcript has a placeholder.
        let message = refused.body["message"].as_str().unwrap_or_default();
        t.record(
            format!("{step} message"),
            message.replace(&group, "<group>"),
        );
    }

    let pruned = client
        .post(
            &path,
            &widget(
                &group,
                "w2",
                json!({"size": 1, "unknown": "dropped", "free": {"anything": {"kept": true}}}),
            ),
        )
        .await?;
    t.record("create with unknown fields", outcome(&pruned));
    let pruned = pruned.expect(StatusCode::CREATED)?;
    t.record("stored spec", pruned.body["spec"].clone());
    ensure!(
        pruned.body["spec"] == json!({"size": 1, "free": {"anything": {"kept": true}}}),
        "unknown fields were not pruned: {}",
        pruned.body["spec"]
    );

    let mut status = first.body.clone();
    status["status"] = json!({"ready": true});
    status["spec"]["size"] = json!(5);
    let written = client.put(&format!("{item}/status"), &status).await?;
    t.record("update status", outcome(&written));
    let written = written.expect(StatusCode::OK)?;
    let observed = json!({"status": written.body["status"], "size": written.body["spec"]["size"]});
    t.record("after the status update", observed.clone());
    ensure!(observed == json!({"status": {"ready": true}, "size": 3}));

    let list = client.get(&path).await?.expect(StatusCode::OK)?;
    let mut names = item_names(&list.body);
    names.sort_unstable();
    t.record("list", json!(names));
    t.record("list kind", list.body["kind"].clone());

    let deleted = client.delete(&crd_path).await?;
    t.record("delete CRD", outcome(&deleted));
    deleted.expect(StatusCode::OK)?;
    let gone = until_not_found(&client, &path, SETTLE)
        .await
        .context("the deleted CRD's resource is still served")?;
    t.record("list after the CRD is deleted", outcome(&gone));
    until_not_found(&client, &crd_path, SETTLE)
        .await
        .context("the deleted CRD was not finalized")?;
    t.record("CRD gone", true);

    ns.delete().await?;
    Ok(t)
}

/// `field reason` of each cause of an `Invalid` status, sorted.
pub(super) fn causes(status: &Value) -> Value {
    let mut found: Vec<String> = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} {}",
                c["field"].as_str().unwrap_or("?"),
                c["reason"].as_str().unwrap_or("?")
            )
        })
        .collect();
    found.sort();
    json!(found)
}
