//! The scenarios. Each takes a [`Target`], works in a namespace of its own, asserts what must
//! hold on any conforming server, and returns a [`Transcript`] for differential comparison.
//!
//! [`DIFFERENTIAL`] lists the scenarios whose transcripts must agree between targets; the
//! others check the real server's set-up itself (its version, its controllers).

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::client::{ApiClient, WatchEvent};
use crate::target::{Target, TargetKind};
use crate::transcript::Transcript;

mod apply;
mod bookmarks;
mod crd;
mod derived_crds;
mod discovery;
mod finalizers;
mod garbage_collection;
mod immutable;
mod json_patch;
mod kube_rs;
mod metadata;
mod patch;
mod protobuf;
mod sharding;
mod status;
mod webhooks;
mod writes;

pub use apply::server_side_apply;
pub use bookmarks::watch_bookmarks;
pub use crd::crd_create_then_use;
pub use derived_crds::{derived_crd_rules, derived_crds};
pub use discovery::{discovery, AGGREGATED_DISCOVERY};
pub use finalizers::finalizers;
pub use garbage_collection::garbage_collection;
pub use immutable::{
    immutable_config_and_secrets, immutable_jobs, immutable_pods, immutable_service_cluster_ip,
    immutable_workload_selectors,
};
pub use json_patch::json_patch_semantics;
pub use kube_rs::kube_rs_finalizer;
pub use metadata::{metadata_accept_variants, metadata_custom_resource, metadata_watch};
pub use patch::{patches, strategic_merge_patch};
pub use protobuf::protobuf_built_in_kinds;
pub use sharding::sharded_list_and_watch;
pub use status::status_subresource;
pub use webhooks::webhooks;
pub use writes::{watch_selector_transitions, writes};

/// How long a watch may stay silent when an event is due.
pub(crate) const EVENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The label every object of a scenario carries (its value: the scenario's name), so that
/// lists and watches see only the scenario's own objects (kube-controller-manager adds a
/// `kube-root-ca.crt` ConfigMap to every namespace).
pub(crate) const SCENARIO_LABEL: &str = "e2e.kclient.dev/scenario";
/// The annotation on the bookmark that ends a streaming list's initial events.
pub(crate) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A scenario function.
pub type Scenario =
    for<'a> fn(&'a Target) -> Pin<Box<dyn Future<Output = Result<Transcript>> + Send + 'a>>;

/// The scenarios whose transcripts must agree between the real server and the fake.
pub const DIFFERENTIAL: &[(&str, Scenario)] = &[
    ("config_map_crud", |t| Box::pin(config_map_crud(t))),
    ("list_selectors_and_paging", |t| {
        Box::pin(list_selectors_and_paging(t))
    }),
    ("watch_from_resource_version", |t| {
        Box::pin(watch_from_resource_version(t))
    }),
    ("watch_too_old_resource_version", |t| {
        Box::pin(watch_too_old_resource_version(t))
    }),
    ("streaming_list", |t| Box::pin(streaming_list(t))),
    ("watch_bookmarks", |t| Box::pin(watch_bookmarks(t))),
    ("patches", |t| Box::pin(patches(t))),
    ("json_patch_semantics", |t| {
        Box::pin(json_patch_semantics(t))
    }),
    ("strategic_merge_patch", |t| {
        Box::pin(strategic_merge_patch(t))
    }),
    ("server_side_apply", |t| Box::pin(server_side_apply(t))),
    ("status_subresource", |t| Box::pin(status_subresource(t))),
    ("finalizers", |t| Box::pin(finalizers(t))),
    ("kube_rs_finalizer", |t| Box::pin(kube_rs_finalizer(t))),
    ("crd_create_then_use", |t| Box::pin(crd_create_then_use(t))),
    ("derived_crds", |t| Box::pin(derived_crds(t))),
    ("webhooks", |t| Box::pin(webhooks(t))),
    ("discovery", |t| Box::pin(discovery(t))),
    ("garbage_collection", |t| Box::pin(garbage_collection(t))),
    ("writes", |t| Box::pin(writes(t))),
    ("watch_selector_transitions", |t| {
        Box::pin(watch_selector_transitions(t))
    }),
    ("metadata_accept_variants", |t| {
        Box::pin(metadata_accept_variants(t))
    }),
    ("metadata_custom_resource", |t| {
        Box::pin(metadata_custom_resource(t))
    }),
    ("metadata_watch", |t| Box::pin(metadata_watch(t))),
    ("protobuf_built_in_kinds", |t| {
        Box::pin(protobuf_built_in_kinds(t))
    }),
    ("sharded_list_and_watch", |t| {
        Box::pin(sharded_list_and_watch(t))
    }),
    ("immutable_pods", |t| Box::pin(immutable_pods(t))),
    ("immutable_service_cluster_ip", |t| {
        Box::pin(immutable_service_cluster_ip(t))
    }),
    ("immutable_workload_selectors", |t| {
        Box::pin(immutable_workload_selectors(t))
    }),
    ("immutable_jobs", |t| Box::pin(immutable_jobs(t))),
    ("immutable_config_and_secrets", |t| {
        Box::pin(immutable_config_and_secrets(t))
    }),
];

/// Runs `scenario` on every available target (all of them, even after a failure, so that a
/// failure on one can be read next to the other's transcript), printing each transcript;
/// compares the transcripts when `differential`. What each test of the suite does.
pub async fn run_everywhere(name: &str, scenario: Scenario, differential: bool) -> Result<()> {
    let targets = Target::available().await?;
    let mut transcripts: Vec<(TargetKind, Transcript)> = Vec::new();
    let mut failures = Vec::new();
    for target in &targets {
        match scenario(target).await {
            Ok(transcript) => {
                eprintln!("kclient-e2e: {name} against {}:\n{transcript}", target.kind);
                transcripts.push((target.kind, transcript));
            }
            Err(error) => failures.push(format!("against {}: {error:#}", target.kind)),
        }
    }
    if !failures.is_empty() {
        bail!("scenario {name} failed {}", failures.join("; "));
    }
    if differential {
        if let [(a_kind, a), (b_kind, b), ..] = transcripts.as_slice() {
            if let Some(difference) = a.first_difference(b) {
                bail!("{name}: {a_kind} and {b_kind} disagree at {difference}");
            }
        }
    }
    Ok(())
}

/// A namespace for one scenario run, with a unique name.
#[derive(Debug)]
pub struct Namespace {
    /// Its name.
    pub name: String,
    client: ApiClient,
}

impl Namespace {
    /// Creates `kclient-e2e-<prefix>-<unique>`.
    pub async fn create(client: &ApiClient, prefix: &str) -> Result<Namespace> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let name = format!(
            "kclient-e2e-{}-{:06x}",
            prefix.replace('_', "-"),
            (nanos ^ u128::from(std::process::id())) & 0xff_ffff
        );
        client
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .await?
            .expect(StatusCode::CREATED)
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(Namespace {
            name,
            client: client.clone(),
        })
    }

    /// The collection path of a core/v1 resource in this namespace.
    pub fn core(&self, resource: &str) -> String {
        format!("/api/v1/namespaces/{}/{resource}", self.name)
    }

    /// Deletes the namespace (the server finalizes it in the background).
    pub async fn delete(self) -> Result<()> {
        let response = self
            .client
            .delete(&format!("/api/v1/namespaces/{}", self.name))
            .await?;
        ensure!(
            response.status.is_success() || response.status == StatusCode::NOT_FOUND,
            "deleting namespace {}: HTTP {}: {}",
            self.name,
            response.status,
            response.body
        );
        Ok(())
    }
}

/// Waits, on the real server, until kube-controller-manager has created the `default`
/// ServiceAccount of `ns`: until then the ServiceAccount admission plugin refuses pods.
pub(crate) async fn default_service_account(
    target: &Target,
    client: &ApiClient,
    ns: &Namespace,
) -> Result<()> {
    if target.kind != TargetKind::Real {
        return Ok(());
    }
    let account = format!("{}/default", ns.core("serviceaccounts"));
    let account = &account;
    poll(Duration::from_secs(60), move || async move {
        Ok((client.get(account).await?.status == StatusCode::OK).then_some(()))
    })
    .await
    .context("the namespace's default ServiceAccount did not appear")
}

pub(crate) fn config_map(name: &str, scenario: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {SCENARIO_LABEL: scenario}},
        "data": data,
    })
}

pub(crate) fn resource_version(object: &Value) -> Result<String> {
    object["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no metadata.resourceVersion in {object}"))
}

/// `code reason` of a response, for transcripts.
pub(crate) fn outcome(response: &crate::client::Response) -> Value {
    json!({"code": response.status.as_u16(), "reason": response.reason()})
}

/// `/version` reports the version the server was built as (real server only).
pub async fn server_version(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let version = client.get("/version").await?.expect(StatusCode::OK)?.body;
    let git_version = version["gitVersion"]
        .as_str()
        .with_context(|| format!("/version has no gitVersion: {version}"))?;
    ensure!(
        !git_version.contains("0.0.0"),
        "/version reports {git_version:?}: the build did not stamp the version"
    );
    if let Some(expected) = &target.expected_version {
        ensure!(
            git_version == expected,
            "/version reports {git_version}, expected {expected}"
        );
    }
    let minor = version["minor"].as_str().unwrap_or_default();
    ensure!(
        version["major"] == "1" && git_version.starts_with(&format!("v1.{minor}.")),
        "/version major/minor do not match gitVersion: {version}"
    );
    let mut transcript = Transcript::new();
    transcript.record("gitVersion", git_version);
    Ok(transcript)
}

/// Create, get, conflicting create, update with a stale resourceVersion, delete, get.
pub async fn config_map_crud(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "crud").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let item = format!("{path}/one");
    let body = config_map("one", "crud", json!({"k": "v1"}));

    let created = client.post(&path, &body).await?;
    t.record("create", outcome(&created));
    let created = created.expect(StatusCode::CREATED)?;
    let first_rv = resource_version(&created.body)?;

    let got = client.get(&item).await?;
    t.record("get", outcome(&got));
    let got = got.expect(StatusCode::OK)?;
    ensure!(got.body["data"]["k"] == "v1", "get returned {}", got.body);
    t.record("get data", got.body["data"].clone());

    let again = client.post(&path, &body).await?;
    t.record("create again", outcome(&again));
    ensure!(
        again.status == StatusCode::CONFLICT && again.reason() == Some("AlreadyExists"),
        "a second create: {} {}",
        again.status,
        again.body
    );

    let mut update = got.body.clone();
    update["data"]["k"] = json!("v2");
    let updated = client.put(&item, &update).await?;
    t.record("update", outcome(&updated));
    let updated = updated.expect(StatusCode::OK)?;
    ensure!(resource_version(&updated.body)? != first_rv);

    // The same body again carries the now stale resourceVersion.
    let stale = client.put(&item, &update).await?;
    t.record("update with a stale resourceVersion", outcome(&stale));
    ensure!(
        stale.status == StatusCode::CONFLICT && stale.reason() == Some("Conflict"),
        "a stale update: {} {}",
        stale.status,
        stale.body
    );

    let deleted = client.delete(&item).await?;
    t.record("delete", outcome(&deleted));
    deleted.expect(StatusCode::OK)?;

    let gone = client.get(&item).await?;
    t.record("get after delete", outcome(&gone));
    ensure!(
        gone.status == StatusCode::NOT_FOUND && gone.reason() == Some("NotFound"),
        "get after delete: {} {}",
        gone.status,
        gone.body
    );
    ns.delete().await?;
    Ok(t)
}

/// Lists with label selectors, and paging with `limit` and `continue`.
pub async fn list_selectors_and_paging(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "list").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    for (name, colour) in [
        ("a", "red"),
        ("b", "blue"),
        ("c", "red"),
        ("d", "red"),
        ("e", "blue"),
    ] {
        let mut body = config_map(name, "list", json!({}));
        body["metadata"]["labels"]["colour"] = json!(colour);
        client
            .post(&path, &body)
            .await?
            .expect(StatusCode::CREATED)?;
    }
    let names = item_names;
    let scoped = format!("{SCENARIO_LABEL}%3Dlist");

    let red = client
        .get(&format!("{path}?labelSelector={scoped},colour%3Dred"))
        .await?
        .expect(StatusCode::OK)?;
    t.record("list colour=red", json!(names(&red.body)));
    // A built-in type's list leaves the items' apiVersion and kind to the list's.
    let first = &red.body["items"][0];
    t.record(
        "list kind, items' apiVersion and kind",
        json!([red.body["kind"], first.get("apiVersion"), first.get("kind")]),
    );
    ensure!(
        names(&red.body) == ["a", "c", "d"],
        "colour=red: {:?}",
        names(&red.body)
    );

    let not_red = client
        .get(&format!("{path}?labelSelector={scoped},colour!%3Dred"))
        .await?
        .expect(StatusCode::OK)?;
    t.record("list colour!=red", json!(names(&not_red.body)));
    ensure!(names(&not_red.body) == ["b", "e"]);

    let set = client
        .get(&format!(
            "{path}?labelSelector={scoped},colour%20in%20(blue)"
        ))
        .await?
        .expect(StatusCode::OK)?;
    t.record("list colour in (blue)", json!(names(&set.body)));
    ensure!(names(&set.body) == ["b", "e"]);

    // Pages of two: a, b | c, d | e.
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut url = format!("{path}?labelSelector={scoped}&limit=2");
        if let Some(token) = &token {
            url.push_str(&format!("&continue={token}"));
        }
        let page = client.get(&url).await?.expect(StatusCode::OK)?;
        pages.push(names(&page.body));
        let remaining = page.body["metadata"]["remainingItemCount"].as_i64();
        token = page.body["metadata"]["continue"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        t.record(
            format!("page {}", pages.len()),
            json!({"names": pages.last(), "remainingItemCount": remaining, "more": token.is_some()}),
        );
        if token.is_none() {
            break;
        }
        ensure!(pages.len() < 10, "paging does not end");
    }
    ensure!(
        pages == [vec!["a", "b"], vec!["c", "d"], vec!["e"]],
        "pages: {pages:?}"
    );
    ns.delete().await?;
    Ok(t)
}

/// A watch from a resourceVersion sees exactly the later changes, in order; one of them is
/// made by an independent client (kubectl) when there is one.
pub async fn watch_from_resource_version(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "watch").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let first = client
        .post(&path, &config_map("first", "watch", json!({"n": "0"})))
        .await?
        .expect(StatusCode::CREATED)?;
    let from = resource_version(&first.body)?;

    let mut watch = client
        .watch_accepted(&format!(
            "{path}?watch=1&resourceVersion={from}&labelSelector={SCENARIO_LABEL}%3Dwatch"
        ))
        .await?;

    let mut changed = first.body.clone();
    changed["data"]["n"] = json!("1");
    client
        .put(&format!("{path}/first"), &changed)
        .await?
        .expect(StatusCode::OK)?;
    let mut second = config_map("second", "watch", json!({"n": "2"}));
    second["metadata"]["namespace"] = json!(ns.name);
    let by_kubectl = match target.kubectl_create(&second).await {
        Some(result) => {
            result?;
            true
        }
        None => {
            client
                .post(&path, &second)
                .await?
                .expect(StatusCode::CREATED)?;
            false
        }
    };
    client
        .delete(&format!("{path}/first"))
        .await?
        .expect(StatusCode::OK)?;

    let seen: Vec<String> = watch
        .next_events(3, EVENT_TIMEOUT)
        .await?
        .iter()
        .map(|event| format!("{} {}", event.event_type, event.name()))
        .collect();
    t.record("events", json!(seen));
    ensure!(
        seen == ["MODIFIED first", "ADDED second", "DELETED first"],
        "events after resourceVersion {from} (second created by {}): {seen:?}",
        if by_kubectl { "kubectl" } else { "us" }
    );
    ns.delete().await?;
    Ok(t)
}

/// A watch from a resourceVersion older than the server keeps answers 410 Gone (`Expired`),
/// as an HTTP status or as an `ERROR` event.
pub async fn watch_too_old_resource_version(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "gone").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    // Some history first, so that resourceVersion 1 is far behind.
    for name in ["x", "y"] {
        client
            .post(&path, &config_map(name, "gone", json!({})))
            .await?
            .expect(StatusCode::CREATED)?;
    }
    let status = match client
        .watch(&format!("{path}?watch=1&resourceVersion=1"))
        .await?
    {
        Err(response) => {
            t.record("delivered as", "HTTP status");
            response.body
        }
        Ok(mut stream) => {
            let event: WatchEvent = stream
                .next(EVENT_TIMEOUT)
                .await?
                .context("the watch closed without an event")?;
            ensure!(
                event.event_type == "ERROR",
                "expected an ERROR event, got {} {}",
                event.event_type,
                event.object
            );
            t.record("delivered as", "ERROR event");
            event.object
        }
    };
    let observed = json!({"code": status["code"], "reason": status["reason"]});
    t.record("status", observed.clone());
    ensure!(
        observed == json!({"code": 410, "reason": "Expired"}),
        "a watch from resourceVersion 1: {status}"
    );
    ns.delete().await?;
    Ok(t)
}

/// A streaming list (`sendInitialEvents=true`): the existing objects as `ADDED`, then a
/// bookmark annotated `k8s.io/initial-events-end`, then later changes.
pub async fn streaming_list(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "stream").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    for name in ["s1", "s2", "s3"] {
        client
            .post(&path, &config_map(name, "stream", json!({})))
            .await?
            .expect(StatusCode::CREATED)?;
    }
    let url = format!(
        "{path}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
         &allowWatchBookmarks=true&labelSelector={SCENARIO_LABEL}%3Dstream"
    );
    let mut watch = match client.watch(&url).await? {
        Ok(stream) => stream,
        Err(response) => bail!(
            "the streaming list was refused (is etcd >= 3.6?): {} {}",
            response.status,
            response.body
        ),
    };
    let mut initial = Vec::new();
    loop {
        let event = watch
            .next(EVENT_TIMEOUT)
            .await?
            .context("the stream closed before the initial-events-end bookmark")?;
        match event.event_type.as_str() {
            "ADDED" => initial.push(event.name().to_string()),
            "BOOKMARK" => {
                let end = &event.object["metadata"]["annotations"][INITIAL_EVENTS_END];
                if end == "true" {
                    ensure!(
                        event.object["metadata"]["resourceVersion"].is_string(),
                        "the bookmark has no resourceVersion: {}",
                        event.object
                    );
                    break;
                }
            }
            other => bail!(
                "unexpected {other} event during the initial events: {}",
                event.object
            ),
        }
    }
    initial.sort();
    t.record("initial events", json!(initial));
    t.record("then", "BOOKMARK k8s.io/initial-events-end=true");
    ensure!(initial == ["s1", "s2", "s3"], "initial events: {initial:?}");

    client
        .post(&path, &config_map("s4", "stream", json!({})))
        .await?
        .expect(StatusCode::CREATED)?;
    let next = loop {
        let event = watch
            .next(EVENT_TIMEOUT)
            .await?
            .context("the stream closed")?;
        if event.event_type != "BOOKMARK" {
            break event;
        }
    };
    t.record("after", format!("{} {}", next.event_type, next.name()));
    ensure!(next.event_type == "ADDED" && next.name() == "s4");
    ns.delete().await?;
    Ok(t)
}

/// kube-controller-manager runs: a Deployment gets a ReplicaSet, and a deleted namespace is
/// finalized (real server only).
pub async fn controllers_run(target: &Target) -> Result<Transcript> {
    ensure!(
        target.kind == TargetKind::Real,
        "controllers_run needs kube-controller-manager"
    );
    let client = target.client()?;
    let ns = Namespace::create(&client, "controllers").await?;
    let mut t = Transcript::new();
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.invalid/web:1"}]}
            }
        }
    });
    client
        .post(
            &format!("/apis/apps/v1/namespaces/{}/deployments", ns.name),
            &deployment,
        )
        .await?
        .expect(StatusCode::CREATED)?;
    let replica_sets = format!("/apis/apps/v1/namespaces/{}/replicasets", ns.name);
    let (client_ref, replica_sets) = (&client, &replica_sets);
    let owner = poll(Duration::from_secs(60), move || async move {
        let list = client_ref.get(replica_sets).await?.expect(StatusCode::OK)?;
        Ok(
            list.body["items"][0]["metadata"]["ownerReferences"][0]["name"]
                .as_str()
                .map(str::to_string),
        )
    })
    .await
    .context("no ReplicaSet for the Deployment: is kube-controller-manager running?")?;
    t.record("replicaset owner", owner.clone());
    ensure!(owner == "web");

    let namespace = format!("/api/v1/namespaces/{}", ns.name);
    ns.delete().await?;
    until_not_found(&client, &namespace, Duration::from_secs(60))
        .await
        .context("the deleted namespace was not finalized")?;
    t.record("namespace finalized", true);
    Ok(t)
}

/// Polls `path` until it answers 404, for at most `limit`, and returns that answer.
pub(crate) async fn until_not_found(
    client: &ApiClient,
    path: &str,
    limit: Duration,
) -> Result<crate::client::Response> {
    poll(limit, move || async move {
        let response = client.get(path).await?;
        Ok((response.status == StatusCode::NOT_FOUND).then_some(response))
    })
    .await
    .with_context(|| format!("{path} is still there"))
}

/// The `metadata.name` of each item of a list, in the server's order.
pub(crate) fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Polls `probe` every 250ms until it yields a value, for at most `limit`.
pub(crate) async fn poll<T, F, Fut>(limit: Duration, mut probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = probe().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("not within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
