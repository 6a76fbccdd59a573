//! Finalizers: a delete only marks the object, it stays readable and writable while
//! terminating, no new finalizer may be added, and removing the last one deletes it; the watch
//! sees each step.

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{config_map, outcome, resource_version, Namespace, EVENT_TIMEOUT, SCENARIO_LABEL};
use crate::target::Target;
use crate::transcript::Transcript;

const HOLD: &str = "e2e.kclient.dev/hold";

/// `finalizers` and whether `deletionTimestamp` is set, for transcripts.
fn deletion_state(object: &Value) -> Value {
    json!({
        "finalizers": object["metadata"]["finalizers"],
        "deleting": object["metadata"]["deletionTimestamp"].is_string(),
    })
}

/// A ConfigMap held by a finalizer through its deletion.
pub async fn finalizers(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "finalizers").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let item = format!("{path}/held");
    let mut body = config_map("held", "finalizers", json!({"n": "0"}));
    body["metadata"]["finalizers"] = json!([HOLD]);
    let created = client
        .post(&path, &body)
        .await?
        .expect(StatusCode::CREATED)?;
    let from = resource_version(&created.body)?;
    let mut watch = client
        .watch_accepted(&format!(
            "{path}?watch=1&resourceVersion={from}&labelSelector={SCENARIO_LABEL}%3Dfinalizers"
        ))
        .await?;

    let deleted = client.delete(&item).await?;
    t.record("delete", outcome(&deleted));
    let deleted = deleted.expect(StatusCode::OK)?;
    t.record("delete returns", deleted.body["kind"].clone());
    t.record("after delete", deletion_state(&deleted.body));
    ensure!(
        deleted.body["kind"] == "ConfigMap"
            && deleted.body["metadata"]["deletionTimestamp"].is_string(),
        "a delete held by a finalizer returns the marked object: {}",
        deleted.body
    );

    let got = client.get(&item).await?;
    t.record("get while terminating", outcome(&got));
    let got = got.expect(StatusCode::OK)?;
    t.record("state", deletion_state(&got.body));

    let added = client
        .patch(
            &item,
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": [HOLD, "e2e.kclient.dev/another"]}}),
        )
        .await?;
    t.record("add a finalizer while terminating", outcome(&added));
    ensure!(
        added.status == StatusCode::UNPROCESSABLE_ENTITY && added.reason() == Some("Invalid"),
        "adding a finalizer to a terminating object: {} {}",
        added.status,
        added.body
    );

    let again = client.delete(&item).await?;
    t.record("delete again", outcome(&again));
    let again = again.expect(StatusCode::OK)?;
    t.record("delete again returns", again.body["kind"].clone());

    let written = client
        .patch(
            &item,
            "application/merge-patch+json",
            &json!({"data": {"n": "1"}}),
        )
        .await?;
    t.record("write while terminating", outcome(&written));
    written.expect(StatusCode::OK)?;

    let released = client
        .patch(
            &item,
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await?;
    t.record("remove the finalizer", outcome(&released));
    let released = released.expect(StatusCode::OK)?;
    t.record("remove returns", deletion_state(&released.body));

    let gone = client.get(&item).await?;
    t.record("get after release", outcome(&gone));
    ensure!(gone.status == StatusCode::NOT_FOUND);

    let mut events = Vec::new();
    loop {
        let event = watch
            .next(EVENT_TIMEOUT)
            .await?
            .context("the watch closed before the DELETED event")?;
        if event.event_type == "BOOKMARK" {
            continue;
        }
        events.push(json!({
            "type": event.event_type,
            "n": event.object["data"]["n"],
            "state": deletion_state(&event.object),
        }));
        if event.event_type == "DELETED" || events.len() > 10 {
            break;
        }
    }
    t.record("events", Value::Array(events.clone()));
    ensure!(
        events
            .first()
            .map(|e| e["type"] == "MODIFIED" && e["state"]["deleting"] == true)
            == Some(true)
            && events.last().map(|e| e["type"] == "DELETED") == Some(true),
        "events: {events:?}"
    );

    ns.delete().await?;
    Ok(t)
}
