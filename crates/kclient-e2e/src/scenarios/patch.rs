//! Patches of every kind but apply (which has its own scenario): JSON patch (RFC 6902), JSON
//! merge patch (RFC 7386) and strategic merge patch, their failures, and what each does to a
//! list.

use anyhow::{ensure, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{config_map, outcome, Namespace, SCENARIO_LABEL};
use crate::target::Target;
use crate::transcript::Transcript;

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// JSON patch and merge patch on a ConfigMap: each operation's effect, a failing `test`
/// operation, a stale resourceVersion in a merge patch, an unknown content type, a body of the
/// wrong shape, a patch of a missing object.
pub async fn patches(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "patch").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let item = format!("{path}/p");
    let created = client
        .post(
            &path,
            &config_map("p", "patch", json!({"a": "1", "b": "2"})),
        )
        .await?
        .expect(StatusCode::CREATED)?;

    let ops = json!([
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "remove", "path": "/data/b"},
        {"op": "copy", "from": "/data/c", "path": "/data/d"},
        {"op": "move", "from": "/data/d", "path": "/data/e"},
        {"op": "test", "path": "/data/e", "value": "3"},
    ]);
    let patched = client.patch(&item, JSON_PATCH, &ops).await?;
    t.record("json patch", outcome(&patched));
    let patched = patched.expect(StatusCode::OK)?;
    t.record("json patch data", patched.body["data"].clone());
    ensure!(
        patched.body["data"] == json!({"a": "10", "c": "3", "e": "3"}),
        "after the JSON patch: {}",
        patched.body["data"]
    );

    let failing = json!([
        {"op": "test", "path": "/data/a", "value": "not 10"},
        {"op": "replace", "path": "/data/a", "value": "never"},
    ]);
    let refused = client.patch(&item, JSON_PATCH, &failing).await?;
    t.record("json patch with a failing test", outcome(&refused));
    ensure!(
        refused.status.is_client_error(),
        "a failing test operation: {} {}",
        refused.status,
        refused.body
    );

    let missing_path = json!([{"op": "remove", "path": "/data/nope"}]);
    let refused = client.patch(&item, JSON_PATCH, &missing_path).await?;
    t.record("json patch removing a missing key", outcome(&refused));
    ensure!(refused.status.is_client_error());

    let merge = json!({"data": {"a": null, "f": "6"}, "metadata": {"labels": {"added": "yes"}}});
    let merged = client.patch(&item, MERGE_PATCH, &merge).await?;
    t.record("merge patch", outcome(&merged));
    let merged = merged.expect(StatusCode::OK)?;
    t.record("merge patch data", merged.body["data"].clone());
    t.record(
        "merge patch labels",
        merged.body["metadata"]["labels"].clone(),
    );
    ensure!(
        merged.body["data"] == json!({"c": "3", "e": "3", "f": "6"}),
        "after the merge patch: {}",
        merged.body["data"]
    );
    ensure!(merged.body["metadata"]["labels"][SCENARIO_LABEL] == "patch");

    // A resourceVersion in a patch is a precondition.
    let stale_rv = &created.body["metadata"]["resourceVersion"];
    let stale = json!({"metadata": {"resourceVersion": stale_rv}, "data": {"g": "7"}});
    let stale = client.patch(&item, MERGE_PATCH, &stale).await?;
    t.record("merge patch with a stale resourceVersion", outcome(&stale));
    ensure!(
        stale.status == StatusCode::CONFLICT && stale.reason() == Some("Conflict"),
        "a stale merge patch: {} {}",
        stale.status,
        stale.body
    );

    // A strategic merge patch of a ConfigMap's map behaves as a merge patch.
    let strategic = json!({"data": {"c": null, "h": "8"}});
    let strategic = client
        .patch(&item, STRATEGIC_MERGE_PATCH, &strategic)
        .await?;
    t.record("strategic merge patch", outcome(&strategic));
    let strategic = strategic.expect(StatusCode::OK)?;
    t.record("strategic merge patch data", strategic.body["data"].clone());

    let unsupported = client.patch(&item, "text/plain", &json!({})).await?;
    t.record("unsupported patch type", outcome(&unsupported));
    ensure!(
        unsupported.status == StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "an unknown patch type: {} {}",
        unsupported.status,
        unsupported.body
    );

    let wrong_shape = client
        .patch(&item, JSON_PATCH, &json!({"op": "add"}))
        .await?;
    t.record("json patch that is not a list", outcome(&wrong_shape));
    ensure!(wrong_shape.status.is_client_error());

    let missing = client
        .patch(
            &format!("{path}/missing"),
            MERGE_PATCH,
            &json!({"data": {}}),
        )
        .await?;
    t.record("merge patch of a missing object", outcome(&missing));
    ensure!(missing.status == StatusCode::NOT_FOUND && missing.reason() == Some("NotFound"));

    ns.delete().await?;
    Ok(t)
}

/// Strategic merge patch on a list with a merge key (a Deployment's containers, merged by
/// name), the `$patch: delete` directive, and how a JSON merge patch replaces the same list.
pub async fn strategic_merge_patch(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "smp").await?;
    let mut t = Transcript::new();
    let path = format!("/apis/apps/v1/namespaces/{}/deployments", ns.name);
    let item = format!("{path}/web");
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {SCENARIO_LABEL: "smp"}},
        "spec": {
            // No pods, so the real server's controllers have nothing to run.
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "a", "image": "registry.invalid/a:1"},
                    {"name": "b", "image": "registry.invalid/b:1"},
                ]}
            }
        }
    });
    client
        .post(&path, &deployment)
        .await?
        .expect(StatusCode::CREATED)?;
    let containers = |object: &Value| -> Value {
        let list = object["spec"]["template"]["spec"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Value::Array(
            list.iter()
                .map(|c| {
                    json!(format!(
                        "{}={}",
                        c["name"].as_str().unwrap_or("?"),
                        c["image"].as_str().unwrap_or("?")
                    ))
                })
                .collect(),
        )
    };

    let by_name = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "b", "image": "registry.invalid/b:2"},
        {"name": "c", "image": "registry.invalid/c:1"},
    ]}}}});
    let merged = client.patch(&item, STRATEGIC_MERGE_PATCH, &by_name).await?;
    t.record("strategic merge by name", outcome(&merged));
    let merged = merged.expect(StatusCode::OK)?;
    t.record("containers", containers(&merged.body));
    let mut names: Vec<String> = containers(&merged.body)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    names.sort();
    ensure!(
        names
            == [
                "a=registry.invalid/a:1",
                "b=registry.invalid/b:2",
                "c=registry.invalid/c:1"
            ],
        "containers after merging by name: {names:?}"
    );

    let delete_a = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "a", "$patch": "delete"},
    ]}}}});
    let deleted = client
        .patch(&item, STRATEGIC_MERGE_PATCH, &delete_a)
        .await?;
    t.record("$patch: delete", outcome(&deleted));
    let deleted = deleted.expect(StatusCode::OK)?;
    t.record("containers", containers(&deleted.body));

    let replace = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "z", "image": "registry.invalid/z:1"},
    ]}}}});
    let replaced = client.patch(&item, MERGE_PATCH, &replace).await?;
    t.record("merge patch replaces the list", outcome(&replaced));
    let replaced = replaced.expect(StatusCode::OK)?;
    t.record("containers", containers(&replaced.body));
    ensure!(containers(&replaced.body) == json!(["z=registry.invalid/z:1"]));

    ns.delete().await?;
    Ok(t)
}
