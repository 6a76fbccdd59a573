//! Server-side apply: creation by apply, field ownership in `managedFields`, conflicts between
//! managers and `force`, removal of fields a manager stops applying, and the request errors.

use anyhow::{ensure, Result};
use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::{outcome, Namespace, SCENARIO_LABEL};
use crate::client::{ApiClient, Response};
use crate::target::Target;
use crate::transcript::Transcript;

const APPLY_PATCH: &str = "application/apply-patch+yaml";

fn applied(data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {SCENARIO_LABEL: "apply"}},
        "data": data,
    })
}

async fn apply(client: &ApiClient, item: &str, query: &str, body: &Value) -> Result<Response> {
    client
        .request(
            Method::PATCH,
            &format!("{item}?{query}"),
            Some((APPLY_PATCH, body)),
        )
        .await
}

/// `manager operation fieldsV1` for each entry of `managedFields`, sorted by manager.
fn managers(object: &Value) -> Value {
    let mut entries: Vec<Value> = object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            json!({
                "manager": entry["manager"],
                "operation": entry["operation"],
                "subresource": entry.get("subresource"),
                "fields": entry["fieldsV1"],
            })
        })
        .collect();
    entries.sort_by_key(|e| e["manager"].as_str().unwrap_or_default().to_string());
    Value::Array(entries)
}

/// Two appliers and one updater share a ConfigMap.
pub async fn server_side_apply(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "apply").await?;
    let mut t = Transcript::new();
    let item = format!("{}/cm", ns.core("configmaps"));

    let created = apply(
        &client,
        &item,
        "fieldManager=alice",
        &applied(json!({"a": "1", "x": "9"})),
    )
    .await?;
    t.record("apply creates", outcome(&created));
    let created = created.expect(StatusCode::CREATED)?;
    t.record("managers", managers(&created.body));

    let conflict = apply(
        &client,
        &item,
        "fieldManager=bob",
        &applied(json!({"a": "2"})),
    )
    .await?;
    t.record("conflicting apply", outcome(&conflict));
    ensure!(
        conflict.status == StatusCode::CONFLICT && conflict.reason() == Some("Conflict"),
        "bob's apply over alice's field: {} {}",
        conflict.status,
        conflict.body
    );
    t.record(
        "conflict causes",
        conflict.body["details"]["causes"].clone(),
    );
    t.record("conflict message", conflict.body["message"].clone());

    let same_value = apply(
        &client,
        &item,
        "fieldManager=bob",
        &applied(json!({"a": "1"})),
    )
    .await?;
    t.record(
        "apply of the same value shares the field",
        outcome(&same_value),
    );
    let same_value = same_value.expect(StatusCode::OK)?;
    t.record("managers", managers(&same_value.body));

    let forced = apply(
        &client,
        &item,
        "fieldManager=bob&force=true",
        &applied(json!({"a": "2"})),
    )
    .await?;
    t.record("forced apply", outcome(&forced));
    let forced = forced.expect(StatusCode::OK)?;
    t.record("data", forced.body["data"].clone());
    t.record("managers", managers(&forced.body));

    // alice stops applying x (which she alone owns): it goes; a (now bob's) stays.
    let dropped = apply(&client, &item, "fieldManager=alice", &applied(json!({}))).await?;
    t.record("apply without a field", outcome(&dropped));
    let dropped = dropped.expect(StatusCode::OK)?;
    t.record("data", dropped.body["data"].clone());
    ensure!(
        dropped.body["data"] == json!({"a": "2"}),
        "after alice dropped x: {}",
        dropped.body["data"]
    );

    let mut update = dropped.body.clone();
    update["data"]["u"] = json!("3");
    let updated = client
        .put(&format!("{item}?fieldManager=carol"), &update)
        .await?;
    t.record("update by another manager", outcome(&updated));
    let updated = updated.expect(StatusCode::OK)?;
    t.record("managers", managers(&updated.body));

    let no_manager = apply(&client, &item, "", &applied(json!({"a": "2"}))).await?;
    t.record("apply without fieldManager", outcome(&no_manager));
    ensure!(no_manager.status.is_client_error());

    let forced_merge = client
        .request(
            Method::PATCH,
            &format!("{item}?force=true"),
            Some(("application/merge-patch+json", &json!({"data": {}}))),
        )
        .await?;
    t.record("force on a merge patch", outcome(&forced_merge));
    ensure!(forced_merge.status.is_client_error());

    let wrong_kind = apply(
        &client,
        &item,
        "fieldManager=alice",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm"}}),
    )
    .await?;
    t.record("apply of another kind", outcome(&wrong_kind));
    ensure!(wrong_kind.status.is_client_error());

    ns.delete().await?;
    Ok(t)
}
