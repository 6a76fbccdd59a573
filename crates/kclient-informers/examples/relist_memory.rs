//! Memory on relist: the peak RSS of a relist of N Pods against the steady state, measured
//! in this process while `kclient-fake-apiserver` serves the Pods from another one.
//!
//! ```sh
//! cargo build --release -p kclient-fake --features apiserver --bin kclient-fake-apiserver
//! cargo build --release -p kclient-informers --example relist_memory
//! for mode in list stream; do for objects in copy reuse; do
//!   target/release/examples/relist_memory target/release/kclient-fake-apiserver 100000 $mode $objects
//! done; done
//! # lists in one page, as a real cluster serves relists at a resourceVersion:
//! target/release/examples/relist_memory target/release/kclient-fake-apiserver 100000 list reuse one-page
//! ```
//!
//! The pipeline is an informer's: reflector → RealFIFO → `process_deltas` → indexer. After the
//! initial sync the resident set is the steady state; then the high-water mark is reset
//! (`/proc/self/clear_refs`) and the reflector relists once: by a list (`list`) or a
//! streaming list (`stream`), with (`reuse`) or without (`copy`)
//! `ReflectorOptions::known_objects`. One measurement per process, since freed memory stays
//! with the allocator. Linux only.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kclient_cache::{
    process_deltas, Indexer, Indexers, KeyFunc, ProcessError, Queue, RealFifo, RealFifoOptions,
    Reflector, ReflectorOptions,
};
use kclient_typed::Clientset;
use support::{mib, status_bytes, Server};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), support::Error> {
    if support::write_manifest_if_asked()? {
        return Ok(());
    }
    let mut args = std::env::args().skip(1);
    let binary = args
        .next()
        .unwrap_or_else(|| "target/release/kclient-fake-apiserver".into());
    let count: usize = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let streaming = args.next().as_deref() == Some("stream");
    let reuse = args.next().as_deref() == Some("reuse");
    // `one-page`: every list is one page (as a real cluster's relists at a resourceVersion
    // are, the watch cache ignoring `limit`), to show reuse inside a page.
    let one_page = args.next().as_deref() == Some("one-page");

    eprintln!("RSS at start: {:.0} MiB", mib(status_bytes("VmRSS:")));
    // kclient-fake's realistic Pods without managedFields: about 2.5 KB of JSON each.
    let server = Server::start(&binary, count, false).await?;
    let config = server.config.clone();
    let pods = Clientset::new(config)?.all_namespaces::<Pod>();

    {
        let indexer = Indexer::new(
            KeyFunc::deletion_handling_meta_namespace(),
            Indexers::<Pod>::namespace(),
        );
        let fifo = Arc::new(RealFifo::new(RealFifoOptions::default()));
        let mut options = ReflectorOptions::default()
            .use_watch_list(streaming)
            .watch_list_page_size(if one_page { 10_000_000 } else { 0 });
        if reuse {
            options = options.known_objects(indexer.clone());
        }
        let reflector = Arc::new(Reflector::new(pods.clone(), Arc::clone(&fifo), options));
        let processed = Arc::new(AtomicUsize::new(0));
        let consumer = tokio::spawn({
            let (fifo, indexer, processed) =
                (Arc::clone(&fifo), indexer.clone(), Arc::clone(&processed));
            async move {
                while fifo
                    .pop(|deltas, initial| {
                        process_deltas(&indexer, deltas, initial, |_| {})
                            .map_err(|e| ProcessError::Failed(e.into()))
                    })
                    .await
                    .is_ok()
                {
                    processed.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let baseline = status_bytes("VmRSS:");

        // The initial list, then the steady state.
        let first = CancellationToken::new();
        let run = tokio::spawn({
            let (r, c) = (Arc::clone(&reflector), first.clone());
            async move { r.list_and_watch(&c).await }
        });
        while !(fifo.has_synced() && processed.load(Ordering::SeqCst) > 0 && indexer.len() == count)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        first.cancel();
        run.await??;
        let steady = status_bytes("VmRSS:");

        // One relist, with the high-water mark reset first.
        support::reset_peak()?;
        let pops = processed.load(Ordering::SeqCst);
        let relist_started = Instant::now();
        let second = CancellationToken::new();
        let run = tokio::spawn({
            let (r, c) = (Arc::clone(&reflector), second.clone());
            async move { r.list_and_watch(&c).await }
        });
        while processed.load(Ordering::SeqCst) == pops {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let relist_time = relist_started.elapsed();
        let peak = status_bytes("VmHWM:");
        second.cancel();
        run.await??;
        fifo.close();
        consumer.await?;

        let cache = steady.saturating_sub(baseline);
        let relist = peak.saturating_sub(baseline);
        println!(
            "{count} Pods, {}, {}: RSS before {:.0} MiB, steady {:.0} (cache {:.0}), relist peak {:.0} (cache {:.0}): peak/steady {:.2} for the cache, {:.2} for the process; relist {:.2} s",
            if streaming { "streaming list" } else { "list" },
            if reuse { "reusing unchanged objects" } else { "copying every object" },
            mib(baseline),
            mib(steady),
            mib(cache),
            mib(peak),
            mib(relist),
            relist as f64 / cache.max(1) as f64,
            peak as f64 / steady.max(1) as f64,
            relist_time.as_secs_f64(),
        );
        drop(indexer);
    }
    Ok(())
}
