//! Many producers and many workers on real threads: no item is lost, no item is handed to
//! two workers at once, and every add is followed by a processing that starts after it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kclient_workqueue::rate_limiter::ItemExponentialFailureRateLimiter;
use kclient_workqueue::{RateLimitingQueue, WorkQueue};

const KEYS: usize = 256;

/// Per-key bookkeeping shared by producers and workers.
struct Ledger {
    /// A global clock of events: taken before each add and at the start of each processing.
    clock: AtomicU64,
    /// The clock value taken before the latest add of each key.
    last_add: Vec<AtomicU64>,
    /// The clock value at the start of the latest processing of each key.
    last_start: Vec<AtomicU64>,
    /// Whether a worker holds the key right now.
    in_flight: Vec<AtomicBool>,
    processed: AtomicUsize,
}

impl Ledger {
    fn new() -> Self {
        Self {
            clock: AtomicU64::new(1),
            last_add: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
            last_start: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
            in_flight: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
            processed: AtomicUsize::new(0),
        }
    }

    fn before_add(&self, key: usize) {
        let t = self.clock.fetch_add(1, Ordering::SeqCst);
        self.last_add[key].fetch_max(t, Ordering::SeqCst);
    }

    fn start(&self, key: usize) {
        assert!(
            !self.in_flight[key].swap(true, Ordering::SeqCst),
            "key {key} handed to two workers at once"
        );
        let t = self.clock.fetch_add(1, Ordering::SeqCst);
        self.last_start[key].fetch_max(t, Ordering::SeqCst);
        self.processed.fetch_add(1, Ordering::Relaxed);
    }

    fn finish(&self, key: usize) {
        assert!(self.in_flight[key].swap(false, Ordering::SeqCst));
    }

    /// Every key that was ever added was processed after its last add.
    fn assert_nothing_lost(&self) {
        for key in 0..KEYS {
            let added = self.last_add[key].load(Ordering::SeqCst);
            let started = self.last_start[key].load(Ordering::SeqCst);
            if added > 0 {
                assert!(
                    started > added,
                    "key {key}: last add at {added}, last processing started at {started}"
                );
            }
            assert!(!self.in_flight[key].load(Ordering::SeqCst));
        }
    }
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// 8 producer tasks and 8 worker tasks on a 4-thread runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_producers_many_workers_on_a_multi_thread_runtime() {
    let q: WorkQueue<usize> = WorkQueue::new();
    let ledger = Arc::new(Ledger::new());

    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, ledger) = (q.clone(), ledger.clone());
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    ledger.start(key);
                    // Let other workers and producers run while this key is held.
                    tokio::task::yield_now().await;
                    ledger.finish(key);
                    q.done(&key);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..8u64)
        .map(|p| {
            let (q, ledger) = (q.clone(), ledger.clone());
            tokio::spawn(async move {
                let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (p + 1);
                for i in 0..20_000 {
                    let key = (xorshift(&mut seed) % KEYS as u64) as usize;
                    ledger.before_add(key);
                    q.add(key);
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();

    for producer in producers {
        producer.await.unwrap();
    }
    q.shut_down();
    for worker in workers {
        worker.await.unwrap();
    }
    ledger.assert_nothing_lost();
    assert!(ledger.processed.load(Ordering::Relaxed) >= KEYS);
    assert_eq!(q.len(), 0);
}

/// Producers on plain OS threads (no runtime: `add` is synchronous) and workers on OS threads
/// that each drive their own current-thread runtime, all sharing one queue.
#[test]
fn producers_and_workers_on_separate_threads_and_runtimes() {
    let q: WorkQueue<usize> = WorkQueue::new();
    let ledger = Arc::new(Ledger::new());

    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (q, ledger) = (q.clone(), ledger.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    while let Some(key) = q.get().await {
                        ledger.start(key);
                        std::thread::yield_now();
                        ledger.finish(key);
                        q.done(&key);
                    }
                });
            })
        })
        .collect();

    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let (q, ledger) = (q.clone(), ledger.clone());
            std::thread::spawn(move || {
                let mut seed = 0xD1B5_4A32_D192_ED03 ^ (p + 1);
                for _ in 0..20_000 {
                    let key = (xorshift(&mut seed) % KEYS as u64) as usize;
                    ledger.before_add(key);
                    q.add(key);
                }
            })
        })
        .collect();

    for producer in producers {
        producer.join().unwrap();
    }
    q.shut_down();
    for worker in workers {
        worker.join().unwrap();
    }
    ledger.assert_nothing_lost();
}

/// Workers that fail every key a few times: retries go through the rate limiter and the
/// delaying queue; every key eventually succeeds exactly once, with at most one worker on it
/// at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retries_under_contention_lose_nothing() {
    const FAILURES: usize = 3;
    let q: RateLimitingQueue<usize> = RateLimitingQueue::new(
        ItemExponentialFailureRateLimiter::new(Duration::from_micros(50), Duration::from_millis(2)),
    );
    let ledger = Arc::new(Ledger::new());
    let succeeded = Arc::new(Mutex::new(HashSet::new()));
    let all_done = Arc::new(tokio::sync::Notify::new());

    let workers: Vec<_> = (0..6)
        .map(|_| {
            let (q, ledger) = (q.clone(), ledger.clone());
            let (succeeded, all_done) = (succeeded.clone(), all_done.clone());
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    ledger.start(key);
                    tokio::task::yield_now().await;
                    ledger.finish(key);
                    if q.num_requeues(&key) < FAILURES {
                        q.add_rate_limited(key);
                    } else {
                        q.forget(&key);
                        let mut done = succeeded.lock().unwrap();
                        assert!(done.insert(key), "key {key} succeeded twice");
                        if done.len() == KEYS {
                            all_done.notify_one();
                        }
                    }
                    q.done(&key);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..4)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                for key in (p..KEYS).step_by(4) {
                    q.add(key);
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }

    all_done.notified().await;
    q.shut_down_with_drain().await;
    q.shut_down();
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(succeeded.lock().unwrap().len(), KEYS);
    assert_eq!(
        ledger.processed.load(Ordering::Relaxed),
        KEYS * (FAILURES + 1),
        "each key ran exactly FAILURES + 1 times"
    );
    for key in 0..KEYS {
        assert_eq!(q.num_requeues(&key), 0, "forgotten");
    }
}
