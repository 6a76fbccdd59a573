//! `kclient-bench soak-server`: the soak's API server in a process of its own, so that the
//! resident set the soak measures is the client's alone. It starts kclient-fake with
//! `--objects` parents, prints one JSON line per event on stdout — `{"url": …}` once seeded,
//! a report every `--sample` seconds (its own resident set and heap, the resourceVersion, the
//! churn's writes, the faults, the informers' lists and watches), and `{"done": true, …}` once
//! the churn has run for `--seconds` and everything has converged (or 120 s have passed) —
//! then waits for its stdin to close.
//!
//! The churn is ~50 writes a second (a change to a random parent; one write in twenty a
//! deletion and a new parent) and a fault every `--fault-every` seconds: dropped watches, a
//! compaction, 20 answers of 503, 20 of 429 with `Retry-After`, in turn.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kclient_controller::owner::controller_of;
use kclient_core::{CreateOptions, DeleteOptions, Patch, PatchOptions, ResourceExt};
use kclient_fake::{ActionFilter, Failure, FakeApiServer, Reaction, Reactor};
use kclient_rest::{Config, RestClient};
use kclient_testkit::SeededRng;
use kclient_typed::Clientset;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use super::{v_of, NAMESPACE};
use crate::args::Options;
use crate::proc_stats::{heap_bytes, status_bytes};
use crate::Error;

/// The informers' lists and watches of parents (`[0]`) and children (`[1]`), counted by
/// reactors that let every request by.
#[derive(Default)]
struct Requests {
    lists: [AtomicU64; 2],
    watches: [AtomicU64; 2],
}

impl Requests {
    fn count_on(server: &FakeApiServer) -> Arc<Self> {
        let requests = Arc::new(Self::default());
        for (i, resource) in ["configmaps", "secrets"].into_iter().enumerate() {
            for verb in ["list", "watch"] {
                let requests = Arc::clone(&requests);
                let reactor = Reactor::from_fn(ActionFilter::new(verb, resource), move |_| {
                    let counters = if verb == "list" {
                        &requests.lists
                    } else {
                        &requests.watches
                    };
                    counters[i].fetch_add(1, Ordering::Relaxed);
                    Reaction::PassThrough
                });
                server.reactors().add(reactor);
            }
        }
        requests
    }

    fn json(&self) -> Value {
        let get = |c: &[AtomicU64; 2]| [c[0].load(Ordering::Relaxed), c[1].load(Ordering::Relaxed)];
        json!({"lists": get(&self.lists), "watches": get(&self.watches)})
    }
}

/// Parent `p-{i}` with `data.v` = `v`.
fn parent(i: usize, v: u64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(NAMESPACE.into());
    cm.metadata.name = Some(format!("p-{i}"));
    cm.data = Some([("v".to_string(), v.to_string())].into());
    cm
}

/// The parents on the server (the churn makes each one it deletes again at once), and how
/// many of them have a child or status that is not their `data.v`.
fn parents_and_unconverged(server: &FakeApiServer) -> (usize, usize) {
    let children: std::collections::HashMap<String, Secret> = server
        .list::<Secret>(Some(NAMESPACE))
        .into_iter()
        .map(|s| (s.name_any().to_owned(), s))
        .collect();
    let configmaps = server.list::<ConfigMap>(Some(NAMESPACE));
    let parents: Vec<_> = (configmaps.iter())
        .filter(|p| p.name_any().starts_with("p-"))
        .collect();
    let unconverged = parents.iter().filter(|p| {
        let v = v_of(p);
        let child_ok = children.get(p.name_any()).is_some_and(|c| {
            c.annotations().get("v") == Some(&v)
                && controller_of(c).is_some_and(|o| Some(o.uid.as_str()) == p.uid())
        });
        p.annotations().get("observed") != Some(&v) || !child_ok
    });
    (parents.len(), unconverged.count())
}

/// Prints one line of the protocol.
fn report(line: &Value) {
    println!("{line}");
}

/// Runs the soak's server (see the module documentation); prints its own lines.
pub(crate) async fn serve(o: &Options) -> Result<(), Error> {
    let objects = super::objects(o);
    let duration = Duration::from_secs(o.seconds.max(10));
    let sample_every = Duration::from_secs(o.sample.max(1));
    let fault_every = Duration::from_secs(o.fault_every.max(1));
    let server = FakeApiServer::builder().start().await?;
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(NAMESPACE.into());
    server.seed_typed(&namespace)?;
    for i in 0..objects {
        server.seed_typed(&parent(i, 0))?;
    }
    let requests = Requests::count_on(&server);
    let mut config = Config::new(server.url());
    config.qps = None;
    let churn = Clientset::from_client(RestClient::new(config)?);
    let churn = churn.core_v1().config_maps(NAMESPACE);
    report(&json!({"url": server.url()}));

    let started = Instant::now();
    let (mut next_sample, mut next_fault) = (sample_every, fault_every);
    let mut rng = SeededRng::new(0x9e37_79b9_7f4a_7c15);
    let (mut writes, mut faults_injected, mut version) = (0u64, 0u64, 0u64);
    let progress = |writes: u64, faults: u64| {
        let mut line = json!({"at_s": started.elapsed().as_secs_f64(),
            "rss": status_bytes("VmRSS:"), "heap": heap_bytes(),
            "resource_version": server.resource_version(),
            "churn_writes": writes, "faults": faults});
        line["requests"] = requests.json();
        line
    };
    // About 50 writes a second: a change, now and then a deletion and a new parent.
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while started.elapsed() < duration {
        tick.tick().await;
        version += 1;
        let i = rng.below(objects as u64) as usize;
        let name = format!("p-{i}");
        let written = if rng.below(20) == 0 {
            match churn.delete(&name, &DeleteOptions::background()).await {
                Ok(_) => churn
                    .create(&parent(i, version), &CreateOptions::default())
                    .await
                    .map(drop),
                Err(e) => Err(e),
            }
        } else {
            let patch = Patch::Merge(json!({"data": {"v": version.to_string()}}));
            churn
                .patch(&name, &patch, &PatchOptions::default())
                .await
                .map(drop)
        };
        // Faults fail some of the churn's writes too: the churn goes on.
        writes += u64::from(written.is_ok());
        let elapsed = started.elapsed();
        if elapsed >= next_fault {
            next_fault += fault_every;
            let faults = server.faults();
            match faults_injected % 4 {
                0 => faults.drop_watches(),
                1 => faults.compact_history(),
                2 => faults.fail_next(20, Failure::status(503).message("soak")),
                _ => faults.fail_next(20, Failure::status(429).retry_after(1).message("soak")),
            }
            faults_injected += 1;
        }
        if elapsed >= next_sample {
            next_sample += sample_every;
            report(&progress(writes, faults_injected));
        }
    }
    // The churn stops: everything converges.
    server.faults().clear_failures();
    let settle_started = Instant::now();
    let (mut parents, mut left) = parents_and_unconverged(&server);
    while left > 0 && settle_started.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        (parents, left) = parents_and_unconverged(&server);
    }
    let mut done = progress(writes, faults_injected);
    done["done"] = json!(true);
    done["unconverged_at_end"] = json!(left);
    done["parents_at_end"] = json!(parents);
    done["settle_s"] = json!((settle_started.elapsed().as_secs_f64() * 10.0).round() / 10.0);
    report(&done);
    // Serve until the client is done with the server (it closes our stdin).
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;
    server.shutdown().await;
    Ok(())
}
