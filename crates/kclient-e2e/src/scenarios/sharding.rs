//! Sharded list and watch (KEP-5866; both targets run with the alpha gate
//! `ShardedListAndWatch` on): three shards of a namespace's ConfigMaps by uid, listed whole
//! and in pages, in JSON and protobuf through kclient-rest; a watch of one shard; a shard by
//! namespace; and the selectors the server refuses, with its words.
//!
//! The uids differ between servers, so which object lands in which shard does too: the
//! transcript records what must agree (each list's `shardInfo`, that the shards are disjoint
//! and cover the collection, that every object is where its hash puts it, what the watch
//! delivers compared with what it should, the refusals), never names by shard.

use std::collections::BTreeSet;

use anyhow::{ensure, Result};
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::options::ListOptions;
use kclient_core::sharding::{ShardKey, ShardSelector};
use kclient_core::Resource;
use serde_json::{json, Value};

use super::{config_map, item_names, resource_version, Namespace, EVENT_TIMEOUT, SCENARIO_LABEL};
use crate::client::ApiClient;
use crate::target::Target;
use crate::transcript::Transcript;

const SCENARIO: &str = "sharding";
const OBJECTS: usize = 24;

/// The scenario's own objects (kube-controller-manager adds `kube-root-ca.crt` to every
/// namespace of the real server).
fn own() -> ListOptions {
    ListOptions::default().labels(format!("{SCENARIO_LABEL}={SCENARIO}"))
}

/// `path` with the query of `options`.
fn with_query(path: &str, options: &ListOptions) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(options.query_pairs())
        .finish();
    format!("{path}?{query}")
}

fn uids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["metadata"]["uid"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The three shards of the scenario's ConfigMaps, listed in JSON, then in pages through
/// kclient-rest's typed list in protobuf: what each shard's answer shows.
async fn shards(
    client: &ApiClient,
    ns: &Namespace,
    all: &BTreeSet<String>,
    t: &mut Transcript,
) -> Result<()> {
    let path = ns.core("configmaps");
    let mut seen = BTreeSet::new();
    for index in 0..3 {
        let selector = ShardSelector::shard(ShardKey::Uid, index, 3)?;
        let options = own().shard_selector(&selector);
        let list = client
            .get(&with_query(&path, &options))
            .await?
            .expect(StatusCode::OK)?
            .body;
        let in_shard = uids(&list);
        let placed = in_shard.iter().all(|uid| selector.matches_value(uid));
        let fresh = in_shard.iter().all(|uid| seen.insert(uid.clone()));
        ensure!(placed && fresh, "shard {index}: {in_shard:?}");
        t.record(
            format!("shard {index} of 3"),
            json!({
                "shardInfo": list["metadata"]["shardInfo"],
                "every object hashes into the shard": placed,
                "no object in an earlier shard": fresh,
                "remainingItemCount": list["metadata"].get("remainingItemCount"),
            }),
        );

        // The same shard in pages of 3, in protobuf, through kclient-rest.
        let mut paged = Vec::new();
        let mut options = options.clone().limit(3);
        let mut echoed = true;
        loop {
            let page = client
                .rest()
                .get()
                .api_resource(&ConfigMap::api_resource(&()))
                .namespace(ns.name.clone())
                .params(options.query_pairs())
                .accept_protobuf()
                .fetch_list::<ConfigMap>()
                .await?
                .decode()
                .await?;
            echoed &= selector.is_echoed_by(&page.metadata);
            paged.extend(page.items.iter().filter_map(|c| c.metadata.uid.clone()));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => options = options.continue_token(token),
                None => break,
            }
        }
        ensure!(
            echoed && paged == in_shard,
            "shard {index} in pages: {paged:?}"
        );
        t.record(
            format!("shard {index} of 3 in pages of 3, protobuf"),
            json!({
                "every page echoes the selector": echoed,
                "the same objects as whole": paged == in_shard,
            }),
        );
    }
    ensure!(&seen == all, "the shards do not cover the collection");
    t.record("the shards cover the collection", json!(true));
    Ok(())
}

/// A watch of the first of two shards from the list's resourceVersion: what it delivers
/// against what the hashes of the objects written after say it should.
async fn shard_watch(client: &ApiClient, ns: &Namespace, t: &mut Transcript) -> Result<()> {
    let path = ns.core("configmaps");
    let selector = ShardSelector::shard(ShardKey::Uid, 0, 2)?;
    let listed = client.get(&path).await?.expect(StatusCode::OK)?.body;
    let options = own()
        .shard_selector(&selector)
        .resource_version(resource_version(&listed)?);
    let mut watch = client
        .watch_accepted(&format!("{}&watch=true", with_query(&path, &options)))
        .await?;
    let mut due = Vec::new();
    for i in 0..12 {
        let created = client
            .post(
                &path,
                &config_map(&format!("later-{i}"), SCENARIO, json!({})),
            )
            .await?
            .expect(StatusCode::CREATED)?
            .body;
        let uid = created["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if selector.matches_value(&uid) {
            due.push(
                created["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
    }
    let mut delivered = Vec::new();
    while delivered.len() < due.len() {
        match watch.next(EVENT_TIMEOUT).await? {
            Some(event) if event.event_type == "ADDED" => delivered.push(event.name().to_owned()),
            Some(event) => delivered.push(format!("{} {}", event.event_type, event.name())),
            None => break,
        }
    }
    ensure!(
        delivered == due,
        "the watch delivered {delivered:?}, {due:?} were due"
    );
    t.record(
        "a watch of shard 0 of 2",
        json!({
            "delivers exactly the shard's new objects, in order": delivered == due,
            "some were due": !due.is_empty(),
        }),
    );
    Ok(())
}

/// Every ConfigMap listed across namespaces, by namespace shard: a namespace's objects are
/// all in or all out.
async fn namespace_shard(client: &ApiClient, ns: &Namespace, t: &mut Transcript) -> Result<()> {
    let selector = ShardSelector::shard(ShardKey::Namespace, 0, 2)?;
    let scoped = own().shard_selector(&selector);
    let list = client
        .get(&with_query("/api/v1/configmaps", &scoped))
        .await?
        .expect(StatusCode::OK)?
        .body;
    let names = item_names(&list);
    let expected = if selector.matches_value(&ns.name) {
        OBJECTS + 12
    } else {
        0
    };
    t.record(
        "by namespace",
        json!({
            "the namespace is whole or absent as its hash says": names.len() == expected,
            "shardInfo": list["metadata"]["shardInfo"],
        }),
    );
    Ok(())
}

/// Selectors the server refuses (a `500` without a reason, `invalid shard selector: …`), one
/// it reads in another spelling (its echo is canonical), and an empty one (no filter).
async fn refusals(client: &ApiClient, ns: &Namespace, t: &mut Transcript) -> Result<()> {
    let path = ns.core("configmaps");
    let uid = "object.metadata.uid";
    let valid = format!("(shardRange({uid}, \"0x0000000000000000\", '0x10000000000000000'))");
    for expression in [
        format!("shardRange({uid}, '0x0', '0x8000000000000000')"),
        format!("shardRange({uid}, '0x8000000000000000', '0x0000000000000000')"),
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')".to_owned(),
        format!("shardRange({uid}, '0x0000000000000000', '0x8000000000000000') && true"),
        format!("shardRange({uid}, 0, 8)"),
        format!("shardRange({uid}, '0x0000000000000000')"),
        format!("shardRange({uid}, '0x0000000000000000', '0x0000000000000001') || shardRange(object.metadata.namespace, '0x0000000000000001', '0x0000000000000002')"),
        "'0x00'".to_owned(),
        "   ".to_owned(),
        valid.clone(),
    ] {
        let mut options = own();
        options.shard_selector = Some(expression.clone());
        let response = client.get(&with_query(&path, &options)).await?;
        let body = &response.body;
        t.record(
            format!("list with {expression:?}"),
            json!({
                "code": response.status.as_u16(),
                "reason": response.reason(),
                "message": body.get("message"),
                "shardInfo": body["metadata"].get("shardInfo"),
                "items": body["items"].as_array().map(Vec::len),
            }),
        );
        if expression != valid {
            // Refused before the watch starts.
            let watch = client
                .get(&format!("{}&watch=true", with_query(&path, &options)))
                .await?;
            t.record(
                format!("watch with {expression:?}"),
                json!({"code": watch.status.as_u16(), "message": watch.body.get("message")}),
            );
        }
    }
    Ok(())
}

/// The scenario (see the module).
pub async fn sharded_list_and_watch(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, SCENARIO).await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let mut all = BTreeSet::new();
    for i in 0..OBJECTS {
        let created = client
            .post(
                &path,
                &config_map(&format!("c{i}"), SCENARIO, json!({"i": i.to_string()})),
            )
            .await?
            .expect(StatusCode::CREATED)?
            .body;
        all.insert(
            created["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    ensure!(all.len() == OBJECTS, "the uids are not distinct");
    shards(&client, &ns, &all, &mut t).await?;
    shard_watch(&client, &ns, &mut t).await?;
    namespace_shard(&client, &ns, &mut t).await?;
    refusals(&client, &ns, &mut t).await?;
    ns.delete().await?;
    Ok(t)
}
