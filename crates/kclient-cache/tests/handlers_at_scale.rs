//! A thousand handlers on one informer: they share a few threads (the process's lane pool),
//! not a thread each, and one that blocks still delays only its own listener.
//!
//! A binary of its own: it counts the process's threads, which other tests would change.
//! `cargo test -p kclient-cache --release --test handlers_at_scale -- --nocapture` prints the
//! figures (docs/benchmarks.md, "A thousand handlers").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{ResourceEventHandlerFuncs, SharedIndexInformer, SharedIndexInformerOptions};
use tokio_util::sync::CancellationToken;

const HANDLERS: usize = 1000;
const UPDATES: i64 = 100;
/// Far above what the pool needs (a thread per core, more only while jobs wait behind
/// blocked threads), far below a thread per handler.
const MAX_THREADS: usize = 64;

fn config_map(v: i64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    cm.data = Some(BTreeMap::from([("v".to_string(), v.to_string())]));
    cm
}

/// The process's threads now (Linux).
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Samples the process's threads every millisecond until dropped; the most seen.
struct ThreadSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicUsize>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl ThreadSampler {
    fn start() -> Self {
        let (stop, peak) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let sampler = std::thread::spawn({
            let (stop, peak) = (Arc::clone(&stop), Arc::clone(&peak));
            move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(threads(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        ThreadSampler {
            stop,
            peak,
            sampler: Some(sampler),
        }
    }

    fn peak(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            sampler.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

#[test]
fn a_thousand_handlers_share_a_few_threads_and_a_blocked_one_delays_only_itself() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let before = threads();
    let sampler = ThreadSampler::start();
    let started = Instant::now();
    runtime.block_on(async {
        let source = FakeControllerSource::<ConfigMap>::new();
        source.add(config_map(0));
        let informer =
            SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());

        // Handler 0 blocks on its first update until the end (or 60 s, bounding a hang).
        let (release, gate) = mpsc::channel::<()>();
        let gate = parking_lot::Mutex::new(gate);
        let (blocked_tx, mut blocked_rx) = tokio::sync::mpsc::unbounded_channel();
        let still_blocked = Arc::new(AtomicBool::new(true));
        let first = AtomicBool::new(true);
        let blocker = {
            let still_blocked = Arc::clone(&still_blocked);
            ResourceEventHandlerFuncs::new().update_func(move |_, _| {
                if first.swap(false, Ordering::SeqCst) {
                    let _ = blocked_tx.send(());
                    let _ = gate.lock().recv_timeout(Duration::from_secs(60));
                    still_blocked.store(false, Ordering::SeqCst);
                }
            })
        };
        informer.add_event_handler(blocker).unwrap();
        // The others count their updates (handlers that may block, the default).
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        for _ in 1..HANDLERS {
            let seen = AtomicUsize::new(0);
            let done_tx = done_tx.clone();
            let handler = ResourceEventHandlerFuncs::new().update_func(move |_, _| {
                if seen.fetch_add(1, Ordering::SeqCst) + 1 == UPDATES as usize {
                    let _ = done_tx.send(());
                }
            });
            informer.add_event_handler(handler).unwrap();
        }

        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        assert!(kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced()]).await);
        source.modify(config_map(1));
        tokio::time::timeout(Duration::from_secs(60), blocked_rx.recv())
            .await
            .expect("the blocking handler is called")
            .unwrap();
        for v in 2..=UPDATES {
            source.modify(config_map(v));
        }
        for handled in 1..HANDLERS {
            tokio::time::timeout(Duration::from_secs(60), done_rx.recv())
                .await
                .unwrap_or_else(|_| panic!("only {handled} handlers saw every update"))
                .unwrap();
        }
        assert!(
            still_blocked.load(Ordering::SeqCst),
            "the other handlers saw every update while one was blocked"
        );
        release.send(()).unwrap();
        cancel.cancel();
        run.await.unwrap();
    });
    let took = started.elapsed();
    let peak = sampler.peak();
    drop(runtime);
    println!(
        "{HANDLERS} handlers (one blocked), {UPDATES} updates each: {took:.2?}, \
         threads {before} before, {peak} at the peak"
    );
    assert!(
        peak <= MAX_THREADS,
        "{peak} threads at the peak for {HANDLERS} handlers"
    );
}
