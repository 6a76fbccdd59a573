//! Shared informer figures (client-go's `BenchmarkSharedIndexInformer` and listener
//! benchmarks, in kclient): initial sync of N realistic Pods from `kclient-fake-apiserver`
//! in another process, and events per second from the server through an informer to three
//! handlers.
//!
//! ```sh
//! cargo build --release -p kclient-fake --features apiserver --bin kclient-fake-apiserver
//! cargo build --release -p kclient-informers --example informer_bench
//! # sync <server> <pods> <strip|keep> <stream|list> [typed|metadata]: one measurement per process
//! target/release/examples/informer_bench sync target/release/kclient-fake-apiserver 100000 strip stream
//! # the same Pods cached as PartialObjectMetadata by a metadata informer (MetadataClient)
//! target/release/examples/informer_bench sync target/release/kclient-fake-apiserver 100000 strip stream metadata
//! # list <server> <pods> [rounds]: a paged typed list, pages fetched ahead or one by one
//! target/release/examples/informer_bench list target/release/kclient-fake-apiserver 20000
//! # events <updates>: kclient-fake in this process, 1,000 ConfigMaps updated in rounds of
//! # one update each, every round delivered to 3 handlers before the next
//! target/release/examples/informer_bench events 200000
//! ```
//!
//! `sync` prints the time from start to synced (wall and CPU), the resident set after the
//! sync against the one before (bytes per cached Pod) and the peak during the sync; `parse
//! <pods>`, for scale, the time `serde_json` takes to parse the same Pods as one List into
//! k8s-openapi Pods in a process of its own. The Pods are kclient-fake's `samples::realistic_pod` with their
//! managedFields (about 5 KB of JSON each); `strip` is the factory's default transform,
//! `keep` turns it off. `typed` caches whole k8s-openapi Pods (the typed factory);
//! `metadata` caches their `PartialObjectMetadata` (the metadata factory's informer: the
//! server sends only metadata). Linux only (the figures come from `/proc/self`).

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kclient_cache::{
    Indexers, ResourceEventHandler, SharedIndexInformer, SharedIndexInformerOptions,
    SharedInformerFactory, TransformFunc,
};
use kclient_core::{CancellationToken, GroupResource, ObjectList, PartialObjectMetadata, Resource};
use kclient_dynamic::MetadataClient;
use kclient_fake::FakeApiServer;
use kclient_typed::Clientset;
use serde_json::json;
use support::{cpu_time, mib, status_bytes, Server};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), support::Error> {
    if support::write_manifest_if_asked()? {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sync") => {
            let binary = args.get(1).ok_or("the server binary")?;
            let count: usize = args.get(2).ok_or("a Pod count")?.parse()?;
            let strip = args.get(3).map(String::as_str) != Some("keep");
            let streaming = args.get(4).map(String::as_str) != Some("list");
            let metadata = args.get(5).map(String::as_str) == Some("metadata");
            sync(binary, count, strip, streaming, metadata).await
        }
        Some("list") => {
            let binary = args.get(1).ok_or("the server binary")?;
            let count: usize = args.get(2).ok_or("a Pod count")?.parse()?;
            let rounds: usize = args.get(3).map(|n| n.parse()).transpose()?.unwrap_or(5);
            list(binary, count, rounds).await
        }
        Some("parse") => {
            let count: usize = args.get(1).ok_or("a Pod count")?.parse()?;
            parse(count)
        }
        Some("events") => {
            let updates: usize = args.get(1).map(|n| n.parse()).transpose()?.unwrap_or(100_000);
            events(updates).await
        }
        _ => Err("usage: informer_bench sync <server> <pods> <strip|keep> <stream|list> [typed|metadata] | list <server> <pods> [rounds] | parse <pods> | events <updates>".into()),
    }
}

async fn sync(
    binary: &str,
    count: usize,
    strip: bool,
    streaming: bool,
    metadata: bool,
) -> Result<(), support::Error> {
    let server = Server::start(binary, count, true).await?;
    let cancel = CancellationToken::new();
    let (wall, cpu, baseline, peak, steady) = if metadata {
        // What the metadata factory's `for_resource` makes (the namespace index, the
        // managedFields transform unless kept), with the initial sync chosen here.
        let pods = Pod::api_resource(&());
        let lw = MetadataClient::for_config(server.config.clone())?.resource(&pods);
        let mut options = SharedIndexInformerOptions::<PartialObjectMetadata>::default()
            .name("v1/Pod")
            .indexers(Indexers::namespace())
            .transform(strip.then(TransformFunc::strip_managed_fields));
        options.reflector_options.use_watch_list = streaming;
        let informer = SharedIndexInformer::new_with(lw, options, &pods);
        let baseline = status_bytes("VmRSS:");
        support::reset_peak()?;
        let (wall, cpu) = (Instant::now(), cpu_time());
        let run = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        if !kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced()]).await {
            return Err("did not sync".into());
        }
        let (wall, cpu) = (wall.elapsed(), cpu_time() - cpu);
        let (peak, steady) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
        assert_eq!(informer.get_store().len(), count);
        cancel.cancel();
        run.await?;
        (wall, cpu, baseline, peak, steady)
    } else {
        let mut builder = SharedInformerFactory::builder(Clientset::new(server.config.clone())?);
        if !strip {
            builder = builder.keep_managed_fields();
        }
        let factory = builder.build();
        let informer = factory.informer_for::<Pod>(|client, settings| {
            use kclient_core::ListerWatcherFor;
            let mut options = settings.informer_options();
            options.reflector_options.use_watch_list = streaming;
            SharedIndexInformer::new(client.lister_watcher(None, None), options)
        });
        let baseline = status_bytes("VmRSS:");
        support::reset_peak()?;
        let (wall, cpu) = (Instant::now(), cpu_time());
        factory.start(&cancel);
        if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
            return Err("did not sync".into());
        }
        let (wall, cpu) = (wall.elapsed(), cpu_time() - cpu);
        let (peak, steady) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
        assert_eq!(informer.get_store().len(), count);
        factory.shutdown().await;
        (wall, cpu, baseline, peak, steady)
    };

    println!(
        "sync pods={count} cached={} managedFields={} mode={} wall_s={:.2} cpu_s={:.2} rss_before_mib={:.0} rss_after_mib={:.0} peak_mib={:.0} bytes_per_pod={}",
        if metadata { "metadata" } else { "typed" },
        if strip { "stripped" } else { "kept" },
        if streaming { "streaming" } else { "list" },
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        mib(baseline),
        mib(steady),
        mib(peak),
        steady.saturating_sub(baseline) / count,
    );
    Ok(())
}

/// A paged list of all Pods through the typed client (pages of 500), three ways, in rounds:
/// the transfer alone (each page fetched, its items never decoded), the list with each page
/// fetched only after the previous one decoded, and the list with the next page fetched
/// while the current one decodes (`ListPager`'s default). Prints the median of each.
async fn list(binary: &str, count: usize, rounds: usize) -> Result<(), support::Error> {
    use kclient_core::{ListOptions, ListPager};
    let server = Server::start(binary, count, true).await?;
    let pods = Clientset::new(server.config.clone())?.core_v1().pods("");
    let first = ListOptions::default().limit(kclient_core::DEFAULT_PAGE_SIZE);
    let (mut transfer, mut serial, mut ahead) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let mut options = first.clone();
        loop {
            let page = pods.fetch_list(&options).await?;
            let Some(token) = page.continue_token() else {
                break;
            };
            options.continue_token = Some(token.to_owned());
        }
        transfer.push(start.elapsed());
        for (prefetch, times) in [(false, &mut serial), (true, &mut ahead)] {
            let start = Instant::now();
            let all = ListPager::new(pods.clone())
                .prefetch(prefetch)
                .list(&ListOptions::default())
                .await?;
            times.push(start.elapsed());
            assert_eq!(all.items.len(), count);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64()
    };
    println!(
        "list pods={count} rounds={rounds} transfer_s={:.3} one_by_one_s={:.3} fetched_ahead_s={:.3}",
        median(&mut transfer),
        median(&mut serial),
        median(&mut ahead),
    );
    Ok(())
}

/// The same Pods as `sync` serves, as one List, parsed by serde_json into k8s-openapi Pods
/// with nothing else in the process: the floor an informer's sync is compared with.
fn parse(count: usize) -> Result<(), support::Error> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("pods.json");
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg("--write-manifest")
        .arg(&path)
        .arg(count.to_string())
        .arg("managed")
        .status()?;
    if !status.success() {
        return Err("writing the manifest failed".into());
    }
    let bytes = std::fs::read(&path)?;
    // Twice each, so that both decodings are measured once on memory the process already
    // has (the first decoding of a process also pays the kernel for every new page).
    let baseline = status_bytes("VmRSS:");
    let mut object_list = Duration::ZERO;
    let mut vec_of_pods = Duration::ZERO;
    let mut first_touch = Duration::ZERO;
    let mut rss = 0;
    let items = &bytes[bytes.iter().position(|b| *b == b'[').ok_or("no items")?..bytes.len() - 1];
    for round in 0..2 {
        let started = Instant::now();
        let parsed: ObjectList<Pod> = serde_json::from_slice(&bytes)?;
        let took = started.elapsed();
        assert_eq!(parsed.items.len(), count);
        if round == 0 {
            first_touch = took;
            rss = status_bytes("VmRSS:").saturating_sub(baseline);
        } else {
            object_list = took;
        }
        drop(parsed);
        let started = Instant::now();
        let pods: Vec<Pod> = serde_json::from_slice(items)?;
        vec_of_pods = started.elapsed();
        assert_eq!(pods.len(), count);
    }
    println!(
        "parse pods={count} json_bytes_per_pod={} first_object_list_s={:.2} object_list_s={:.2} vec_of_pods_s={:.2} bytes_per_pod={}",
        bytes.len() / count,
        first_touch.as_secs_f64(),
        object_list.as_secs_f64(),
        vec_of_pods.as_secs_f64(),
        rss / count,
    );
    Ok(())
}

/// Counts updates.
#[derive(Default)]
struct Counter(AtomicUsize);

impl ResourceEventHandler<ConfigMap> for Counter {
    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

async fn events(updates: usize) -> Result<(), support::Error> {
    const OBJECTS: usize = 1000;
    let server = FakeApiServer::builder().start().await?;
    for i in 0..OBJECTS {
        server.seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": format!("cm-{i}"), "namespace": "default"},
                           "data": {"v": "0"}}))?;
    }
    let mut config = server.config()?;
    config.qps = None;
    let informer = SharedIndexInformer::new(
        Clientset::new(config)?.namespaced::<ConfigMap>("default"),
        SharedIndexInformerOptions::default(),
    );
    let counters: Vec<Arc<Counter>> = (0..3).map(|_| Arc::default()).collect();
    for c in &counters {
        informer.add_event_handler(Arc::clone(c))?;
    }
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    if !kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced()]).await {
        return Err("did not sync".into());
    }
    // Rounds of one update per object: the watch never falls behind the server's history
    // window (which would end it with a 410, and the relist would coalesce the updates).
    let resource = GroupResource::new("", "configmaps");
    let rounds = updates.div_ceil(OBJECTS);
    let started = Instant::now();
    for round in 0..rounds {
        for i in 0..OBJECTS {
            server.modify(&resource, "default", &format!("cm-{i}"), |o| {
                o["data"]["v"] = json!((round + 1).to_string())
            })?;
        }
        let target = (round + 1) * OBJECTS;
        while counters
            .iter()
            .any(|c| c.0.load(Ordering::Relaxed) < target)
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let elapsed = started.elapsed();
    let updates = rounds * OBJECTS;
    cancel.cancel();
    task.await?;
    println!(
        "events updates={updates} handlers=3 in_rounds_of={OBJECTS} delivered_s={:.2} events_per_s={:.0}",
        elapsed.as_secs_f64(),
        updates as f64 / elapsed.as_secs_f64(),
    );
    Ok(())
}
