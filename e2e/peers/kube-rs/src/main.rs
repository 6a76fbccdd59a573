//! kube-rs as a client in kclient's e2e suite (issue 49): kube-runtime's `finalizer()` step
//! by step on one ConfigMap, then a kube-runtime `Controller` whose reconcile goes through
//! `finalizer()`, against the API server of a kubeconfig, in a namespace the suite made.
//!
//! ```text
//! kube-rs-e2e --kubeconfig PATH --namespace NS
//! ```
//!
//! Prints what it saw as one JSON array of `[step, observation]` pairs (no uids, times or
//! resourceVersions); the suite's `kube_rs_finalizer` scenario requires kube-apiserver's and
//! kclient-fake's to be equal. `finalizer()` adds its finalizer with a JSON patch that tests
//! `metadata.finalizers` for null (or for the list it saw) and removes it with one that tests
//! its name at its index: a server that answers those patches differently stalls every
//! kube-rs operator with a finalizer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Error as FinalizerError, Event};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The suite's label: lists and watches see only the scenario's objects.
const SCENARIO_LABEL: &str = "e2e.kclient.dev/scenario";
/// This program's finalizer, and another controller's on the same objects.
const OURS: &str = "e2e.kclient.dev/cleanup";
const THEIRS: &str = "e2e.kclient.dev/other";
/// The label the controller's `Apply` sets, so that the program sees it ran.
const APPLIED: &str = "e2e.kclient.dev/applied";
/// How long the controller may take for each step.
const LIMIT: Duration = Duration::from_secs(60);

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(transcript) => println!("{}", Value::Array(transcript)),
        Err(error) => {
            eprintln!("kube-rs-e2e: {error}");
            std::process::exit(1);
        }
    }
}

async fn run(args: &[String]) -> Result<Vec<Value>, Error> {
    let flag = |name: &str| -> Result<&str, Error> {
        let at = args
            .iter()
            .position(|a| a == name)
            .ok_or(format!("{name} is required"))?;
        Ok(args.get(at + 1).ok_or(format!("{name} needs a value"))?)
    };
    let kubeconfig = Kubeconfig::read_from(flag("--kubeconfig")?)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let api: Api<ConfigMap> = Api::namespaced(Client::try_from(config)?, flag("--namespace")?);
    let mut t = Vec::new();
    finalizer_steps(&api, &mut t).await?;
    controller(&api, &mut t).await?;
    Ok(t)
}

fn record(t: &mut Vec<Value>, step: &str, seen: Value) {
    t.push(json!([step, seen]));
}

fn config_map(name: &str, scenario: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {SCENARIO_LABEL: scenario}},
        "data": {"k": "v"},
    }))
    .unwrap_or_default()
}

/// The object's finalizers, or `"gone"`.
async fn finalizers(api: &Api<ConfigMap>, name: &str) -> Result<Value, Error> {
    Ok(match api.get_opt(name).await? {
        Some(cm) => json!(cm.finalizers()),
        None => json!("gone"),
    })
}

/// One reconcile through `finalizer()`: which event it ran, and what it returned (its
/// `Action`, or the error with the server's `Status`).
async fn reconcile_once(api: &Api<ConfigMap>, name: &str, object: ConfigMap) -> Value {
    let ran = Arc::new(Mutex::new(None));
    let seen = ran.clone();
    let result = finalizer(api, name, Arc::new(object), |event| async move {
        let which = match event {
            Event::Apply(_) => "apply",
            Event::Cleanup(_) => "cleanup",
        };
        *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(which);
        Ok::<_, std::io::Error>(Action::requeue(Duration::from_secs(300)))
    })
    .await;
    let event = ran.lock().unwrap_or_else(|e| e.into_inner()).take();
    let result = match result {
        Ok(action) => json!(format!("{action:?}")),
        Err(FinalizerError::AddFinalizer(kube::Error::Api(status))) => {
            json!({"add finalizer failed": {"code": status.code, "reason": status.reason, "message": status.message}})
        }
        Err(FinalizerError::RemoveFinalizer(kube::Error::Api(status))) => {
            json!({"remove finalizer failed": {"code": status.code, "reason": status.reason, "message": status.message}})
        }
        Err(other) => json!({"failed": other.to_string()}),
    };
    json!({"event": event, "result": result})
}

/// `finalizer()` called as a controller would, one reconcile at a time.
async fn finalizer_steps(api: &Api<ConfigMap>, t: &mut Vec<Value>) -> Result<(), Error> {
    const NAME: &str = "memcached";
    let created = api
        .create(
            &PostParams::default(),
            &config_map(NAME, "kube-rs-finalizer"),
        )
        .await?;
    // The copy a cache that lags behind would still hold later.
    let stale = created.clone();

    let seen = reconcile_once(api, OURS, created).await;
    record(t, "the first reconcile adds the finalizer", seen);
    record(t, "finalizers", finalizers(api, NAME).await?);

    let seen = reconcile_once(api, THEIRS, api.get(NAME).await?).await;
    record(t, "another controller's first reconcile adds its own", seen);
    record(t, "finalizers", finalizers(api, NAME).await?);

    let seen = reconcile_once(api, OURS, api.get(NAME).await?).await;
    record(t, "the next reconcile applies", seen);

    let seen = reconcile_once(api, OURS, stale).await;
    record(t, "a reconcile of a copy from before the finalizers", seen);
    record(t, "finalizers", finalizers(api, NAME).await?);

    let deleted = api.delete(NAME, &DeleteParams::default()).await?;
    let seen = deleted
        .map_left(|cm| json!({"terminating": cm.metadata.deletion_timestamp.is_some(), "finalizers": cm.finalizers()}))
        .map_right(|status| json!({"status": status.status}))
        .into_inner();
    record(t, "delete", seen);

    for (step, name) in [
        ("the reconcile of the deleted object cleans up", OURS),
        ("the other controller's cleans up too", THEIRS),
    ] {
        let seen = match api.get_opt(NAME).await? {
            Some(current) => reconcile_once(api, name, current).await,
            None => json!("gone before"),
        };
        record(t, step, seen);
        record(t, "finalizers", finalizers(api, NAME).await?);
    }
    Ok(())
}

/// A kube-runtime `Controller` whose reconcile goes through `finalizer()`: a new object gets
/// the finalizer, then is applied (a label), and once deleted is cleaned up and goes.
async fn controller(api: &Api<ConfigMap>, t: &mut Vec<Value>) -> Result<(), Error> {
    const NAME: &str = "controlled";
    const SCENARIO: &str = "kube-rs-controller";
    let events = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let context = Arc::new((api.clone(), events.clone()));
    let selector = format!("{SCENARIO_LABEL}={SCENARIO}");
    let running = Controller::new(api.clone(), watcher::Config::default().labels(&selector))
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(200)),
            context,
        )
        .for_each(|_| async {});
    let task = tokio::spawn(running);

    let created = api
        .create(&PostParams::default(), &config_map(NAME, SCENARIO))
        .await?;
    let applied = within_limit(await_condition(
        api.clone(),
        NAME,
        |cm: Option<&ConfigMap>| {
            cm.is_some_and(|cm| cm.labels().get(APPLIED).is_some_and(|v| v == "yes"))
        },
    ));
    record(
        t,
        "the controller added its finalizer and applied",
        json!(applied.await),
    );
    record(t, "finalizers", finalizers(api, NAME).await?);

    api.delete(NAME, &DeleteParams::default()).await?;
    let uid = created.uid().unwrap_or_default();
    let gone = within_limit(await_condition(
        api.clone(),
        NAME,
        conditions::is_deleted(&uid),
    ));
    record(
        t,
        "the controller cleaned up and the object went",
        json!(gone.await),
    );
    task.abort();
    // Each kind of event the reconcile ran, in the order they first came.
    let mut kinds: Vec<&str> = Vec::new();
    for event in events.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        if !kinds.contains(event) {
            kinds.push(event);
        }
    }
    record(t, "the controller's events", json!(kinds));
    Ok(())
}

/// Whether `condition` (an `await_condition`) is met within [`LIMIT`].
async fn within_limit<T, E>(condition: impl std::future::Future<Output = Result<T, E>>) -> bool {
    tokio::time::timeout(LIMIT, condition)
        .await
        .is_ok_and(|met| met.is_ok())
}

type Context = (Api<ConfigMap>, Arc<Mutex<Vec<&'static str>>>);

async fn reconcile(
    object: Arc<ConfigMap>,
    context: Arc<Context>,
) -> Result<Action, FinalizerError<kube::Error>> {
    let (api, events) = &*context;
    finalizer(api, OURS, object, |event| async move {
        match event {
            Event::Apply(cm) => {
                events
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push("apply");
                if cm.labels().get(APPLIED).is_none() {
                    let label = json!({"metadata": {"labels": {APPLIED: "yes"}}});
                    api.patch(
                        &cm.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(label),
                    )
                    .await?;
                }
                Ok(Action::await_change())
            }
            Event::Cleanup(_) => {
                events
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push("cleanup");
                Ok(Action::await_change())
            }
        }
    })
    .await
}
