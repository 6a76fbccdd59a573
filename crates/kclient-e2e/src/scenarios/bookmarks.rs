//! Bookmarks on an ordinary watch: asked for with `allowWatchBookmarks`, a watch with a
//! timeout gets one shortly before the server ends it, carrying only the kind and a
//! resourceVersion no older than the events already sent; without the flag, none.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{config_map, resource_version, Namespace, SCENARIO_LABEL};
use crate::client::ApiClient;
use crate::target::Target;
use crate::transcript::Transcript;

/// The watches' `timeoutSeconds`: the server sends its bookmark two seconds before.
const TIMEOUT_SECONDS: u64 = 4;
/// How long after the timeout the stream may take to close.
const CLOSE_SLACK: Duration = Duration::from_secs(10);

/// What one watch delivered until the server closed it: event types, ADDED names, and the
/// bookmarks' objects with their resourceVersion checked and removed.
async fn watch_until_closed(
    client: &ApiClient,
    url: &str,
    after_rv: u64,
    create: impl std::future::Future<Output = Result<u64>>,
) -> Result<Vec<Value>> {
    let mut watch = client.watch_accepted(url).await?;
    let created_rv = create.await?;
    let mut seen = Vec::new();
    let limit = Duration::from_secs(TIMEOUT_SECONDS) + CLOSE_SLACK;
    while let Some(event) = watch
        .next(limit)
        .await
        .context("the server did not end the watch after its timeoutSeconds")?
    {
        match event.event_type.as_str() {
            "BOOKMARK" => {
                let mut object = event.object.clone();
                let rv: u64 = resource_version(&object)?
                    .parse()
                    .context("a bookmark's resourceVersion is not a number")?;
                ensure!(
                    rv >= created_rv.max(after_rv),
                    "a bookmark at resourceVersion {rv} after an event at {created_rv}"
                );
                if let Some(metadata) = object["metadata"].as_object_mut() {
                    metadata.remove("resourceVersion");
                    // Go's zero time: kube-apiserver writes `"creationTimestamp": null`.
                    if metadata.get("creationTimestamp") == Some(&Value::Null) {
                        metadata.remove("creationTimestamp");
                    }
                }
                // kube-apiserver's bookmark timer ticks by whole seconds, so the bookmark due
                // two seconds before the timeout may come twice: the transcript records a run
                // of identical bookmarks once.
                let bookmark = json!({"BOOKMARK": object});
                if seen.last() != Some(&bookmark) {
                    seen.push(bookmark);
                }
            }
            other => seen.push(json!(format!("{other} {}", event.name()))),
        }
        ensure!(seen.len() < 20, "too many events: {seen:?}");
    }
    seen.push(json!("closed"));
    Ok(seen)
}

/// Two watches with `timeoutSeconds`, one asking for bookmarks and one not.
pub async fn watch_bookmarks(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "bookmarks").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let first = client
        .post(&path, &config_map("first", "bookmarks", json!({})))
        .await?
        .expect(StatusCode::CREATED)?;
    let from = resource_version(&first.body)?;
    let from_number: u64 = from.parse().context("resourceVersion is not a number")?;
    let selector = format!("labelSelector={SCENARIO_LABEL}%3Dbookmarks");

    for (step, name, bookmarks) in [
        ("with allowWatchBookmarks", "second", true),
        ("without allowWatchBookmarks", "third", false),
    ] {
        let url =
            format!(
            "{path}?watch=1&resourceVersion={from}&{selector}&timeoutSeconds={TIMEOUT_SECONDS}{}",
            if bookmarks { "&allowWatchBookmarks=true" } else { "" }
        );
        let (client_ref, path_ref) = (&client, &path);
        let create = async move {
            let created = client_ref
                .post(path_ref, &config_map(name, "bookmarks", json!({})))
                .await?
                .expect(StatusCode::CREATED)?;
            Ok(resource_version(&created.body)?.parse()?)
        };
        let seen = watch_until_closed(&client, &url, from_number, create).await?;
        t.record(step, Value::Array(seen.clone()));
        let bookmark_count = seen.iter().filter(|e| e.get("BOOKMARK").is_some()).count();
        if bookmarks {
            ensure!(
                bookmark_count >= 1,
                "no bookmark before the timeout: {seen:?}"
            );
        } else {
            ensure!(bookmark_count == 0, "bookmarks not asked for: {seen:?}");
        }
    }
    ns.delete().await?;
    Ok(t)
}
