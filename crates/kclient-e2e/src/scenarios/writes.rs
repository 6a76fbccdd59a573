//! The write options and admission rules around ordinary writes: `generateName`, `dryRun`,
//! delete-collection with a selector, and the namespace lifecycle (a missing namespace, a
//! terminating one).

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::{config_map, item_names, outcome, until_not_found, Namespace, SCENARIO_LABEL};
use crate::target::Target;
use crate::transcript::Transcript;

/// How long the real server may take to finalize a namespace.
const FINALIZED: Duration = Duration::from_secs(60);

/// The names of a list's items, sorted.
fn names(list: &Value) -> Vec<String> {
    let mut names = item_names(list);
    names.sort();
    names
}

/// `reason` and the cause types of a failure, for transcripts (messages name the run's
/// namespaces).
fn failure(response: &crate::client::Response) -> Value {
    json!({
        "code": response.status.as_u16(),
        "reason": response.reason(),
        "details kind": response.body["details"]["kind"],
        "causes": response.body["details"]["causes"]
            .as_array()
            .map(|c| c.iter().map(|c| c["type"].clone()).collect::<Vec<_>>()),
    })
}

/// generateName, dryRun, delete-collection, namespace lifecycle.
pub async fn writes(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "writes").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let selector = format!("labelSelector={SCENARIO_LABEL}%3Dwrites");

    // generateName: the server appends five characters.
    let mut generated = config_map("", "writes", json!({}));
    generated["metadata"] = json!({"generateName": "gen-", "labels": {SCENARIO_LABEL: "writes"}});
    let created = client.post(&path, &generated).await?;
    t.record("create with generateName", outcome(&created));
    let created = created.expect(StatusCode::CREATED)?;
    let name = created.body["metadata"]["name"]
        .as_str()
        .unwrap_or_default();
    let shape = json!({"prefix": name.starts_with("gen-"), "length": name.len()});
    t.record("generated name", shape.clone());
    ensure!(
        shape == json!({"prefix": true, "length": 9}),
        "generated {name:?}"
    );

    // dryRun: answered as if done, nothing stored.
    let dry = client
        .post(
            &format!("{path}?dryRun=All"),
            &config_map("dry", "writes", json!({})),
        )
        .await?;
    t.record("dry-run create", outcome(&dry));
    let dry = dry.expect(StatusCode::CREATED)?;
    t.record(
        "dry-run create answers a uid",
        dry.body["metadata"]["uid"].is_string(),
    );
    let after = client.get(&format!("{path}/dry")).await?;
    t.record("get after the dry-run create", outcome(&after));
    ensure!(after.status == StatusCode::NOT_FOUND);

    let real_item = format!("{path}/{name}");
    let dry_patch = client
        .patch(
            &format!("{real_item}?dryRun=All"),
            "application/merge-patch+json",
            &json!({"data": {"k": "v"}}),
        )
        .await?;
    t.record("dry-run patch", outcome(&dry_patch));
    t.record("dry-run patch answers", dry_patch.body["data"].clone());
    let stored = client.get(&real_item).await?.expect(StatusCode::OK)?;
    t.record(
        "stored after the dry-run patch",
        stored.body["data"].clone(),
    );
    ensure!(stored.body["data"] == json!({}) || stored.body["data"].is_null());

    let dry_delete = client
        .request(Method::DELETE, &format!("{real_item}?dryRun=All"), None)
        .await?;
    t.record("dry-run delete", outcome(&dry_delete));
    let still = client.get(&real_item).await?;
    t.record("get after the dry-run delete", outcome(&still));
    ensure!(still.status == StatusCode::OK);

    // Delete-collection with a label selector: only the matching objects go.
    for (n, colour) in [("c1", "red"), ("c2", "red"), ("c3", "blue")] {
        let mut body = config_map(n, "writes", json!({}));
        body["metadata"]["labels"]["colour"] = json!(colour);
        client
            .post(&path, &body)
            .await?
            .expect(StatusCode::CREATED)?;
    }
    let collection = client
        .request(
            Method::DELETE,
            &format!("{path}?{selector},colour%3Dred"),
            None,
        )
        .await?;
    t.record("delete-collection colour=red", outcome(&collection));
    let collection = collection.expect(StatusCode::OK)?;
    t.record(
        "delete-collection answers",
        json!({"kind": collection.body["kind"], "items": names(&collection.body)}),
    );
    let left = client
        .get(&format!("{path}?{selector}"))
        .await?
        .expect(StatusCode::OK)?;
    let mut left_names = names(&left.body);
    left_names.retain(|n| !n.starts_with("gen-"));
    t.record("left after delete-collection", json!(left_names));
    ensure!(left_names == ["c3"], "left: {left_names:?}");

    // A namespace that does not exist.
    let missing = client
        .post(
            "/api/v1/namespaces/kclient-e2e-no-such-namespace/configmaps",
            &config_map("x", "writes", json!({})),
        )
        .await?;
    t.record("create in a missing namespace", failure(&missing));
    t.record("missing namespace message", missing.body["message"].clone());
    ensure!(missing.status == StatusCode::NOT_FOUND);

    // A terminating namespace: a finalizer on its content holds it in Terminating.
    let held = Namespace::create(&client, "terminating").await?;
    let held_path = held.core("configmaps");
    let mut blocker = config_map("blocker", "writes", json!({}));
    blocker["metadata"]["finalizers"] = json!(["e2e.kclient.dev/hold"]);
    client
        .post(&held_path, &blocker)
        .await?
        .expect(StatusCode::CREATED)?;
    let namespace_path = format!("/api/v1/namespaces/{}", held.name);
    let deleted = client.delete(&namespace_path).await?;
    t.record("delete the namespace", outcome(&deleted));
    let deleted = deleted.expect(StatusCode::OK)?;
    t.record("namespace phase", deleted.body["status"]["phase"].clone());
    let refused = client
        .post(&held_path, &config_map("late", "writes", json!({})))
        .await?;
    t.record("create in a terminating namespace", failure(&refused));
    ensure!(
        refused.status == StatusCode::FORBIDDEN,
        "a create in a terminating namespace: {} {}",
        refused.status,
        refused.body
    );
    client
        .patch(
            &format!("{held_path}/blocker"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await?
        .expect(StatusCode::OK)?;
    until_not_found(&client, &namespace_path, FINALIZED)
        .await
        .context("the namespace was not finalized once its content was gone")?;
    t.record("namespace gone once its content is", true);

    ns.delete().await?;
    Ok(t)
}

/// A watch with a label selector sees an object enter (ADDED), change (MODIFIED), leave
/// (DELETED) and come back (ADDED) as its labels change, and its deletion.
pub async fn watch_selector_transitions(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "transitions").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let item = format!("{path}/moving");
    let anchor = client
        .post(&path, &config_map("anchor", "other", json!({})))
        .await?
        .expect(StatusCode::CREATED)?;
    let from = super::resource_version(&anchor.body)?;
    let mut watch = client
        .watch_accepted(&format!(
            "{path}?watch=1&resourceVersion={from}&labelSelector={SCENARIO_LABEL}%3Dtransitions"
        ))
        .await?;
    let relabel = |value: &str| json!({"metadata": {"labels": {SCENARIO_LABEL: value}}});
    client
        .post(
            &path,
            &config_map("moving", "transitions", json!({"n": "0"})),
        )
        .await?
        .expect(StatusCode::CREATED)?;
    let merge = "application/merge-patch+json";
    for body in [
        json!({"data": {"n": "1"}}),
        relabel("elsewhere"),
        json!({"data": {"n": "2"}}), // not seen: outside the selector
        relabel("transitions"),
    ] {
        client
            .patch(&item, merge, &body)
            .await?
            .expect(StatusCode::OK)?;
    }
    client.delete(&item).await?.expect(StatusCode::OK)?;

    let seen: Vec<String> = watch
        .next_events(5, super::EVENT_TIMEOUT)
        .await?
        .iter()
        .map(|event| {
            format!(
                "{} {} n={} label={}",
                event.event_type,
                event.name(),
                event.object["data"]["n"].as_str().unwrap_or("-"),
                event.object["metadata"]["labels"][SCENARIO_LABEL]
                    .as_str()
                    .unwrap_or("-"),
            )
        })
        .collect();
    t.record("events", json!(seen));
    let types: Vec<&str> = seen
        .iter()
        .map(|e| e.split(' ').next().unwrap_or_default())
        .collect();
    ensure!(
        types == ["ADDED", "MODIFIED", "DELETED", "ADDED", "DELETED"],
        "events: {seen:?}"
    );
    ns.delete().await?;
    Ok(t)
}
