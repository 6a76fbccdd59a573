//! Every kind the server serves, read in protobuf and in JSON: for each listable resource of
//! discovery whose kind has a codec, the list in protobuf and the list in JSON decode to the
//! same objects, and re-encoding each protobuf item gives back the server's bytes exactly (the
//! golden check of the generated codecs against kube-apiserver's own `Marshal`, on whatever
//! objects the cluster holds). Runs on kclient-fake, and on kube-apiserver with
//! `cargo xtask e2e test`.

use std::collections::BTreeMap;

use anyhow::{ensure, Context, Result};
use kclient_discovery::{Discovery as _, DiscoveryClient};
use kclient_e2e::Target;
use kclient_protobuf::envelope;
use kclient_protobuf::registry::{self, Entry};
use kclient_protobuf::Ctx;
use kclient_rest::{RestClient, PROTOBUF_MEDIA_TYPE};
use serde_json::Value;

/// What one resource showed.
#[derive(Debug, Default)]
struct Compared {
    /// Items read in both encodings at the same resourceVersion, equal.
    equal: usize,
    /// Protobuf items whose re-encoding is byte for byte the server's.
    byte_identical: usize,
}

fn item_key(object: &Value) -> (String, String, String) {
    let meta = &object["metadata"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        s(&meta["namespace"]),
        s(&meta["name"]),
        s(&meta["resourceVersion"]),
    )
}

async fn compare(rest: &RestClient, path: &str, entry: &'static dyn Entry) -> Result<Compared> {
    let protobuf = rest
        .get()
        .abs_path(path)
        .header("Accept", PROTOBUF_MEDIA_TYPE)
        .send()
        .await?;
    ensure!(
        protobuf.is_protobuf(),
        "{path}: answered {:?}",
        protobuf.content_type()
    );
    let json: Value = rest
        .get()
        .abs_path(path)
        .header("Accept", "application/json")
        .json()
        .await?;
    let body = protobuf.body();
    let raw = envelope::decode_envelope(body)?.raw;
    let mut items: Vec<Vec<u8>> = Vec::new();
    envelope::decode_list_with(raw, Ctx::default(), |b, _| Ok(b.to_vec()), &mut |b| {
        items.push(b)
    })
    .with_context(|| format!("{path}: the protobuf list"))?;
    let by_key: BTreeMap<_, _> = json["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| (item_key(o), o))
        .collect();
    let mut compared = Compared::default();
    for item in &items {
        let decoded = entry
            .message_to_json(item)
            .with_context(|| format!("{path}: a protobuf item"))?;
        let again = entry.json_to_message(&decoded)?;
        if &again == item {
            compared.byte_identical += 1;
        } else {
            anyhow::bail!(
                "{path}: {:?} re-encodes to other bytes ({} against the server's {})",
                item_key(&decoded),
                again.len(),
                item.len()
            );
        }
        if let Some(json_item) = by_key.get(&item_key(&decoded)) {
            let from_json = entry.json_to_message(json_item)?;
            ensure!(
                from_json == again,
                "{path}: {:?} differs between protobuf and JSON",
                item_key(&decoded)
            );
            compared.equal += 1;
        }
    }
    Ok(compared)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_kind_reads_the_same_in_protobuf_and_json() -> Result<()> {
    for target in Target::available().await? {
        let rest = RestClient::new(target.config.clone())?;
        let discovered = DiscoveryClient::for_config(&target.config)?
            .server_groups_and_resources()
            .await?
            .complete()?;
        let (mut kinds, mut equal, mut identical) = (0, 0, 0);
        let mut without_codec = Vec::new();
        for list in &discovered.resources {
            let api_version = &list.group_version;
            let prefix = if api_version.contains('/') {
                "/apis"
            } else {
                "/api"
            };
            for resource in &list.resources {
                let listable = resource.verbs.iter().any(|v| v == "list");
                if resource.name.contains('/') || !listable {
                    continue;
                }
                let Some(entry) = registry::by_kind(api_version, &resource.kind) else {
                    without_codec.push(format!("{api_version} {}", resource.kind));
                    continue;
                };
                let path = format!("{prefix}/{api_version}/{}", resource.name);
                let c = compare(&rest, &path, entry).await?;
                kinds += 1;
                equal += c.equal;
                identical += c.byte_identical;
            }
        }
        eprintln!(
            "kclient-e2e: against {}: {kinds} kinds listed in protobuf; {identical} items re-encode to the server's bytes, {equal} equal to their JSON; kinds without a codec: {without_codec:?}",
            target.kind
        );
        ensure!(kinds >= 30, "only {kinds} kinds compared");
        ensure!(identical > 0 && equal > 0, "no objects compared");
    }
    Ok(())
}
