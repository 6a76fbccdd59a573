//! Metadata-only requests (`Accept: …;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`):
//! which header variants are served and how, the three kinds of `406` (the route's, the
//! negotiation's, the conversion's, worded as the server words them), a custom resource, and
//! watches whose events carry metadata.
//!
//! Left out because the real server answers them in encodings the suite's client does not
//! read: protobuf-only and YAML headers (kube-apiserver then writes even its `406` in
//! protobuf or YAML; kclient-fake speaks JSON only). kclient-fake's own tests cover them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::{config_map, item_names, poll, resource_version, Namespace, EVENT_TIMEOUT};
use super::{INITIAL_EVENTS_END, SCENARIO_LABEL};
use crate::client::{ApiClient, Response};
use crate::target::Target;
use crate::transcript::Transcript;

/// One object as metadata.
pub const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/// A list as metadata.
pub const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// What a response shows of itself: a failure's code, reason and message; a success's code,
/// type, top-level fields, and the names (and labels) it carries. Never uids, timestamps or
/// resourceVersions.
fn shape(response: &Response) -> Value {
    let body = &response.body;
    if body["kind"] == "Status" && !response.status.is_success() {
        return json!({
            "code": response.status.as_u16(),
            "reason": response.reason(),
            "message": body["message"],
            "details": body.get("details"),
        });
    }
    let mut keys: Vec<&String> = body
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    keys.sort();
    let mut shape = json!({
        "code": response.status.as_u16(),
        "kind": body["kind"],
        "apiVersion": body["apiVersion"],
        "fields": keys,
    });
    if body.get("items").is_some() {
        shape["names"] = json!(item_names(body));
        shape["items null"] = json!(body["items"].is_null());
        shape["item kinds"] = json!(body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| format!(
                "{} {}",
                i["apiVersion"].as_str().unwrap_or("-"),
                i["kind"].as_str().unwrap_or("-")
            ))
            .collect::<Vec<_>>());
        shape["remainingItemCount"] = body["metadata"]["remainingItemCount"].clone();
        shape["more"] = json!(body["metadata"].get("continue").is_some());
    } else {
        shape["name"] = body["metadata"]["name"].clone();
        shape["labels"] = body["metadata"]["labels"].clone();
        shape["managedFields"] = json!(body["metadata"].get("managedFields").is_some());
    }
    shape
}

async fn get(client: &ApiClient, path: &str, accept: &str) -> Result<Response> {
    client.get_accepting(path, accept).await
}

/// The metadata of ConfigMaps through every kind of `Accept` header: served, refused, or
/// skipped for the next clause; lists in pages; the writes' answers.
pub async fn metadata_accept_variants(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "metadata").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let mut body = config_map(name, "metadata", json!({"big": "x".repeat(100)}));
        body["metadata"]["labels"]["tier"] = json!(tier);
        client
            .post(&path, &body)
            .await?
            .expect(StatusCode::CREATED)?;
    }
    let one = format!("{path}/a");
    for accept in [
        META,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
        "application/json; as=PartialObjectMetadata; g=meta.k8s.io; v=v1; x=y",
        "*/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2, application/json",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.5, application/json;q=0.9",
        "*/*, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.1",
        META_LIST,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
        "application/json;as=PartialObjectMetadata;g=example.com;v=v1",
        "application/json;as=Foo;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata",
        "application/json;sv=v2",
        "text/html",
        "application/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/JSON",
    ] {
        t.record(format!("get {accept}"), shape(&get(&client, &one, accept).await?));
    }
    let got = get(&client, &one, META).await?.expect(StatusCode::OK)?;
    ensure!(
        got.body["kind"] == "PartialObjectMetadata" && got.body.get("data").is_none(),
        "not metadata: {}",
        got.body
    );
    // Refused before the read (406), or converted after it (404 first).
    let missing = format!("{path}/missing");
    let v2 = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2";
    t.record("get missing, v2", shape(&get(&client, &missing, v2).await?));
    t.record(
        "get missing, list",
        shape(&get(&client, &missing, META_LIST).await?),
    );

    let scoped = format!("labelSelector={SCENARIO_LABEL}%3Dmetadata");
    let mut token: Option<String> = None;
    for page in 1..=3 {
        let mut url = format!("{path}?{scoped}&limit=2");
        if let Some(token) = &token {
            url.push_str(&format!("&continue={token}"));
        }
        let response = get(&client, &url, META_LIST).await?;
        t.record(format!("list page {page}"), shape(&response));
        token = response.body["metadata"]["continue"]
            .as_str()
            .map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    let selected = format!("{path}?{scoped},tier%3Dweb");
    t.record(
        "list tier=web",
        shape(&get(&client, &selected, META_LIST).await?),
    );
    let none = format!("{path}?{scoped},tier%3Dnone");
    t.record(
        "list of nothing",
        shape(&get(&client, &none, META_LIST).await?),
    );
    t.record(
        "list as one object",
        shape(&get(&client, &path, META).await?),
    );
    t.record(
        "list text/html",
        shape(&get(&client, &path, "text/html").await?),
    );

    // The writes' answers.
    let merge = "application/merge-patch+json";
    let created = client
        .request_accepting(
            Method::POST,
            &path,
            Some(("application/json", &config_map("d", "metadata", json!({})))),
            META,
        )
        .await?;
    t.record("create", shape(&created));
    let patched = client
        .request_accepting(
            Method::PATCH,
            &format!("{path}/d"),
            Some((merge, &json!({"metadata": {"labels": {"patched": "1"}}}))),
            META,
        )
        .await?;
    t.record("patch", shape(&patched));
    let refused = client
        .request_accepting(
            Method::PATCH,
            &format!("{path}/d"),
            Some((merge, &json!({"metadata": {"labels": {"patched": "2"}}}))),
            META_LIST,
        )
        .await?;
    t.record("patch answered as a list", shape(&refused));
    let after = client
        .get(&format!("{path}/d"))
        .await?
        .expect(StatusCode::OK)?;
    t.record(
        "patched all the same",
        after.body["metadata"]["labels"]["patched"].clone(),
    );
    let deleted = client
        .request_accepting(Method::DELETE, &format!("{path}/d"), None, META)
        .await?;
    t.record(
        "delete",
        json!([
            deleted.status.as_u16(),
            deleted.body["kind"],
            deleted.body["status"]
        ]),
    );
    let web = format!("{path}?{scoped},tier%3Dweb");
    let refused = client
        .request_accepting(Method::DELETE, &web, None, META)
        .await?;
    t.record("delete collection answered as one object", shape(&refused));
    let left = client
        .get(&format!("{path}?{scoped}"))
        .await?
        .expect(StatusCode::OK)?;
    t.record("left after it", json!(item_names(&left.body)));
    let all = format!("{path}?{scoped}");
    let deleted = client
        .request_accepting(Method::DELETE, &all, None, META_LIST)
        .await?;
    t.record("delete collection", shape(&deleted));
    ns.delete().await?;
    Ok(t)
}

/// A custom resource's metadata: served like a built-in's, but its objects (unstructured)
/// refuse differently, and the route check of built-ins does not apply.
pub async fn metadata_custom_resource(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "metacrd").await?;
    let mut t = Transcript::new();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let group = format!("m{nanos:x}.e2e.kclient.dev");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    client.post(crds, &crd).await?.expect(StatusCode::CREATED)?;
    let path = format!("/apis/{group}/v1/namespaces/{}/gadgets", ns.name);
    let gadget = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
                        "metadata": {"name": "g1", "labels": {SCENARIO_LABEL: "metacrd"}},
                        "spec": {"size": 3}});
    let (client_ref, path_ref, gadget_ref) = (&client, &path, &gadget);
    poll(Duration::from_secs(60), move || async move {
        let created = client_ref.post(path_ref, gadget_ref).await?;
        Ok((created.status == StatusCode::CREATED).then_some(()))
    })
    .await
    .context("the custom resource was never served")?;

    let one = format!("{path}/g1");
    for accept in [
        META,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
        META_LIST,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
        "text/html",
        "application/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ] {
        t.record(
            format!("get {accept}"),
            shape(&get(&client, &one, accept).await?),
        );
    }
    let got = get(&client, &one, META).await?.expect(StatusCode::OK)?;
    t.record("generation", got.body["metadata"]["generation"].clone());
    t.record("list", shape(&get(&client, &path, META_LIST).await?));
    t.record(
        "list as one object",
        shape(&get(&client, &path, META).await?),
    );
    let deleted = client
        .request_accepting(Method::DELETE, &one, None, META)
        .await?;
    t.record("delete", shape(&deleted));

    ns.delete().await?;
    client
        .delete(&format!("{crds}/gadgets.{group}"))
        .await?
        .expect(StatusCode::OK)?;
    Ok(t)
}

/// Watches of metadata: changes (one by an independent client when there is one), a
/// streaming list ending in its bookmark, a 410, and a watch asking for lists, which the
/// server ends without a word.
pub async fn metadata_watch(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "metawatch").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let scoped = format!("labelSelector={SCENARIO_LABEL}%3Dmetawatch");
    let first = client
        .post(&path, &config_map("first", "metawatch", json!({"n": "0"})))
        .await?
        .expect(StatusCode::CREATED)?;
    let from = resource_version(&first.body)?;
    let mut watch = match client
        .watch_accepting(
            &format!("{path}?watch=1&resourceVersion={from}&{scoped}"),
            META,
        )
        .await?
    {
        Ok(watch) => watch,
        Err(refused) => anyhow::bail!("the watch was refused: {}", refused.body),
    };
    let mut changed = first.body.clone();
    changed["data"]["n"] = json!("1");
    client
        .put(&format!("{path}/first"), &changed)
        .await?
        .expect(StatusCode::OK)?;
    let mut second = config_map("second", "metawatch", json!({}));
    second["metadata"]["namespace"] = json!(ns.name);
    match target.kubectl_create(&second).await {
        Some(result) => {
            result?;
        }
        None => {
            client
                .post(&path, &second)
                .await?
                .expect(StatusCode::CREATED)?;
        }
    }
    // Leaving the selector is a DELETED of the last state.
    client
        .patch(
            &format!("{path}/second"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {SCENARIO_LABEL: "elsewhere"}}}),
        )
        .await?
        .expect(StatusCode::OK)?;
    client
        .delete(&format!("{path}/first"))
        .await?
        .expect(StatusCode::OK)?;
    let seen: Vec<Value> = watch
        .next_events(4, EVENT_TIMEOUT)
        .await?
        .iter()
        .map(|event| {
            let mut keys: Vec<&String> = event
                .object
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            keys.sort();
            json!([
                event.event_type,
                event.object["apiVersion"],
                event.object["kind"],
                event.name(),
                keys
            ])
        })
        .collect();
    t.record("events", json!(seen));

    let streaming = format!(
        "{path}?watch=1&{scoped}&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    );
    client
        .post(&path, &config_map("third", "metawatch", json!({})))
        .await?
        .expect(StatusCode::CREATED)?;
    let mut stream = match client.watch_accepting(&streaming, META).await? {
        Ok(watch) => watch,
        Err(refused) => anyhow::bail!("the streaming list was refused: {}", refused.body),
    };
    let added = stream
        .next(EVENT_TIMEOUT)
        .await?
        .context("no initial event")?;
    t.record(
        "initial event",
        json!([added.event_type, added.object["kind"], added.name()]),
    );
    let end = stream.next(EVENT_TIMEOUT).await?.context("no bookmark")?;
    t.record(
        "then",
        json!([
            end.event_type,
            end.object["metadata"]["annotations"][INITIAL_EVENTS_END]
        ]),
    );

    let gone = match client
        .watch_accepting(&format!("{path}?watch=1&resourceVersion=1"), META)
        .await?
    {
        Ok(mut watch) => {
            let event = watch.next(EVENT_TIMEOUT).await?.context("no event")?;
            json!([
                event.event_type,
                event.object["code"],
                event.object["reason"]
            ])
        }
        Err(refused) => json!([refused.status.as_u16(), refused.reason()]),
    };
    t.record("too old", gone);

    // The server cannot encode one object as a list: the watch ends at its first object.
    let ended = match client
        .watch_accepting(
            &format!("{path}?watch=1&resourceVersion=0&{scoped}&timeoutSeconds=30"),
            META_LIST,
        )
        .await?
    {
        Ok(mut watch) => match watch.next(EVENT_TIMEOUT).await? {
            None => json!("ended without an event"),
            Some(event) => json!([event.event_type, event.object["kind"]]),
        },
        Err(refused) => json!([refused.status.as_u16(), refused.reason()]),
    };
    t.record("watch of lists", ended);
    ns.delete().await?;
    Ok(t)
}
