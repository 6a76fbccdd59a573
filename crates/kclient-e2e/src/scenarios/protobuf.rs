//! Protobuf for built-in kinds, the way the typed clients speak it (kclient-rest's
//! `ResourceRequests::prefer_protobuf_for`): for ConfigMaps, Pods, Deployments, Services and
//! Nodes, every verb's answer — create, get, list unpaged and in pages, update, patch, a
//! watch's events, a `Status` error — comes in protobuf and decodes to the object a client
//! speaking only JSON reads.
//!
//! The transcript holds what must agree between servers: which encoding each answer came in,
//! names, whether the two decodings were equal, event types, error codes and reasons. (A custom
//! resource asked for protobuf first gets JSON: `crd_create_then_use`.)

use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Node, NodeSpec, Pod, PodSpec, PodTemplateSpec, Service, ServicePort,
    ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kclient_core::{
    ApiStatus, CreateOptions, DeleteOptions, GetOptions, ListOptions, Patch, PatchOptions,
    Resource, ResourceExt, UpdateOptions, WatchEvent,
};
use kclient_rest::{ResourceRequests, Response, RestClient};
use kclient_tools::retry::{on_error, DEFAULT_RETRY};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::{Namespace, EVENT_TIMEOUT};
use crate::target::Target;
use crate::transcript::Transcript;

/// The label on every object of a run (its value: the run's namespace), so that lists of a
/// cluster-scoped kind see only this run's objects.
const RUN_LABEL: &str = "e2e.kclient.dev/run";

/// A client that speaks protobuf (the default) and one that speaks only JSON.
struct Clients {
    protobuf: RestClient,
    json: RestClient,
    namespace: String,
}

impl Clients {
    fn requests<'a, K: Resource<DynamicType = ()> + 'static>(
        &'a self,
        client: &'a RestClient,
        resource: &'a kclient_core::ApiResource,
    ) -> ResourceRequests<'a> {
        let namespace = resource.namespaced.then_some(self.namespace.as_str());
        ResourceRequests::new(client, resource, namespace, resource.namespaced)
            .prefer_protobuf_for::<K>()
    }
}

/// How an answer was encoded, for the transcript.
fn encoding(response: &Response) -> &'static str {
    if response.is_protobuf() {
        "protobuf"
    } else {
        "json"
    }
}

fn labelled(name: &str, run: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some([(RUN_LABEL.to_owned(), run.to_owned())].into()),
        ..Default::default()
    }
}

/// Reads `name` through both clients until both see the same resourceVersion (controllers
/// may change the object in between), and says whether the two decodings are equal (as
/// protobuf carries them).
async fn same_through_both<K>(
    clients: &Clients,
    resource: &kclient_core::ApiResource,
    name: &str,
) -> Result<(bool, &'static str)>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + PartialEq + 'static,
{
    for _ in 0..20 {
        let response = clients
            .requests::<K>(&clients.protobuf, resource)
            .get("get", name, &GetOptions::default(), None)?
            .send()
            .await?;
        let from_protobuf: K = response.decode()?;
        let from_json: K = clients
            .requests::<K>(&clients.json, resource)
            .get("get", name, &GetOptions::default(), None)?
            .json()
            .await?;
        if from_protobuf.meta().resource_version == from_json.meta().resource_version {
            // Equal as protobuf carries them: an empty struct Go always writes (a Pod's
            // `"resources": {}`) is `Some(default)` from protobuf; kube-apiserver's JSON has it
            // too, kclient-fake's JSON leaves it out.
            let codec = kclient_protobuf::registry::codec::<K>()
                .with_context(|| format!("{name}: no protobuf codec"))?;
            let equal = codec.encode_message(&from_protobuf) == codec.encode_message(&from_json);
            return Ok((equal, encoding(&response)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("{name}: the object kept changing between two reads")
}

/// Every verb on two objects of kind `K`, recorded under the kind's name.
async fn exercise<K>(clients: &Clients, t: &mut Transcript, make: impl Fn(&str) -> K) -> Result<()>
where
    K: Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + Clone
        + PartialEq
        + Send
        + Sync
        + std::fmt::Debug
        + 'static,
{
    let resource = K::api_resource(&());
    let kind = resource.kind.clone();
    let pb = || clients.requests::<K>(&clients.protobuf, &resource);
    let run = clients.namespace.clone();
    let names = [format!("{run}-a"), format!("{run}-b")];
    let selector = format!("{RUN_LABEL}={run}");

    let mut encodings = serde_json::Map::new();
    for name in &names {
        let created = pb()
            .create(&make(name), &CreateOptions::default())?
            .send()
            .await
            .with_context(|| format!("creating {kind} {name}"))?;
        encodings.insert("create".into(), json!(encoding(&created)));
        let object: K = created.decode()?;
        ensure!(
            object.name_any() == name,
            "{kind}: created {}",
            object.name_any()
        );
    }

    let (equal, how) = same_through_both::<K>(clients, &resource, &names[0]).await?;
    encodings.insert("get".into(), json!(how));
    t.record(
        format!("{kind}: get, protobuf equals JSON (as protobuf carries them)"),
        json!(equal),
    );

    // Unpaged, then in pages of one; each page's objects equal the JSON list's.
    let options = ListOptions::default().labels(selector.as_str());
    let json_list = clients
        .requests::<K>(&clients.json, &resource)
        .list(&options)?
        .fetch_list::<K>()
        .await?
        .decode()
        .await?;
    let list = pb().list(&options)?.send().await?;
    encodings.insert("list".into(), json!(encoding(&list)));
    let pb_list = pb()
        .list(&options)?
        .fetch_list::<K>()
        .await?
        .decode()
        .await?;
    let list_names = |l: &kclient_core::ObjectList<K>| -> Vec<String> {
        l.items.iter().map(|o| o.name_any().to_owned()).collect()
    };
    t.record(
        format!("{kind}: list"),
        json!({"items": list_names(&pb_list).len(), "names equal": list_names(&pb_list) == list_names(&json_list)}),
    );
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut options = ListOptions::default().labels(selector.as_str()).limit(1);
        options.continue_token = token.clone();
        let page = pb().list(&options)?.fetch_list::<K>().await?;
        token = page.continue_token().map(str::to_owned);
        pages.push(page.decode().await?.items.len());
        if token.is_none() || pages.len() > 5 {
            break;
        }
    }
    // kube-apiserver may end with an empty page (its selector is applied to etcd's pages,
    // which hold other objects too); kclient-fake knows the last match: compare the items.
    t.record(
        format!("{kind}: list in pages of one"),
        json!({"items": pages.iter().sum::<usize>(), "at most one per page": pages.iter().all(|n| *n <= 1)}),
    );

    // Update (PUT) and patch answers. The update reads afresh on a conflict, as client-go's
    // `retry.RetryOnConflict` does: kube-controller-manager writes to new objects of some kinds
    // at any moment (its node lifecycle controller taints a Node that has no kubelet).
    let conflict = |e: &anyhow::Error| {
        let e = e.downcast_ref::<kclient_rest::Error>();
        e.is_some_and(kclient_rest::Error::is_conflict)
    };
    let updated = on_error(DEFAULT_RETRY, conflict, || async {
        let mut changed: K = pb()
            .get("get", &names[0], &GetOptions::default(), None)?
            .decode()
            .await?;
        changed
            .meta_mut()
            .labels
            .get_or_insert_with(Default::default)
            .insert("e2e.kclient.dev/updated".into(), "yes".into());
        let update = pb().update_object("update", &changed, &UpdateOptions::default(), None)?;
        Ok::<_, anyhow::Error>(update.send().await?)
    })
    .await?;
    encodings.insert("update".into(), json!(encoding(&updated)));
    let updated: K = updated.decode()?;
    t.record(
        format!("{kind}: update kept the label"),
        json!(updated
            .labels()
            .get("e2e.kclient.dev/updated")
            .map(String::as_str)),
    );

    let mut watch_options = ListOptions::default().fields(format!("metadata.name={}", names[0]));
    watch_options.resource_version = updated.meta().resource_version.clone();
    watch_options.timeout_seconds = Some(30);
    let watch_request = pb().watch(&watch_options)?;
    let mut events = watch_request.watch::<K>().await?;

    let patch =
        Patch::Merge(json!({"metadata": {"annotations": {"e2e.kclient.dev/patched": "yes"}}}));
    let patched = pb()
        .patch("patch", &names[0], &patch, &PatchOptions::default(), None)?
        .send()
        .await?;
    encodings.insert("patch".into(), json!(encoding(&patched)));
    let patched: K = patched.decode()?;
    t.record(
        format!("{kind}: patch set the annotation"),
        json!(patched
            .annotations()
            .get("e2e.kclient.dev/patched")
            .map(String::as_str)),
    );

    // The watch's first event carrying the patch (controllers may write status first).
    let seen = tokio::time::timeout(EVENT_TIMEOUT, async {
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Modified(o)
                    if o.annotations().contains_key("e2e.kclient.dev/patched") =>
                {
                    return Ok::<_, anyhow::Error>(true);
                }
                WatchEvent::Error(status) => bail!("{kind}: watch error {status:?}"),
                _ => {}
            }
        }
        Ok(false)
    })
    .await
    .with_context(|| format!("{kind}: no watch event for the patch"))??;
    t.record(
        format!("{kind}: watch saw the patch (MODIFIED)"),
        json!(seen),
    );

    // A Status error in protobuf.
    let missing = pb()
        .get("get", "does-not-exist", &GetOptions::default(), None)?
        .decode::<K>()
        .await
        .expect_err("a missing object");
    t.record(
        format!("{kind}: get of a missing object"),
        json!({"code": missing.status_code(), "not found": missing.is_not_found()}),
    );

    for name in &names {
        pb().delete(name, &DeleteOptions::default())?.send().await?;
    }
    t.record(format!("{kind}: encodings"), Value::Object(encodings));
    Ok(())
}

/// Every verb's answer in protobuf for ConfigMaps, Pods, Deployments, Services and Nodes,
/// compared with a JSON-only client's reading (see this scenario module's documentation).
pub async fn protobuf_built_in_kinds(target: &Target) -> Result<Transcript> {
    let ns = Namespace::create(&target.client()?, "protobuf").await?;
    let mut json_config = target.config.clone();
    json_config.disable_protobuf = true;
    let clients = Clients {
        protobuf: RestClient::new(target.config.clone())?,
        json: RestClient::new(json_config)?,
        namespace: ns.name.clone(),
    };
    let run = ns.name.clone();
    let mut t = Transcript::new();
    let labels = || Some([("app".to_owned(), "web".to_owned())].into());
    let container = || Container {
        name: "c".into(),
        image: Some("registry.k8s.io/pause:3.10".into()),
        ..Default::default()
    };

    exercise(&clients, &mut t, |name| ConfigMap {
        metadata: labelled(name, &run),
        data: Some([("key".to_owned(), "value".to_owned())].into()),
        binary_data: Some([("bin".to_owned(), k8s_openapi::ByteString(vec![0, 1, 255]))].into()),
        ..Default::default()
    })
    .await?;
    exercise(&clients, &mut t, |name| Pod {
        metadata: labelled(name, &run),
        spec: Some(PodSpec {
            containers: vec![container()],
            ..Default::default()
        }),
        ..Default::default()
    })
    .await?;
    exercise(&clients, &mut t, |name| Deployment {
        metadata: labelled(name, &run),
        spec: DeploymentSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: labels(),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: labels(),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container()],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    })
    .await?;
    exercise(&clients, &mut t, |name| Service {
        metadata: labelled(name, &run),
        spec: Some(ServiceSpec {
            selector: labels(),
            ports: Some(vec![ServicePort {
                port: 80,
                target_port: Some(
                    k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8080),
                ),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await?;
    exercise(&clients, &mut t, |name| Node {
        metadata: labelled(name, &run),
        spec: Some(NodeSpec {
            unschedulable: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await?;
    ns.delete().await?;
    Ok(t)
}
