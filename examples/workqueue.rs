//! A controller-style worker pool on a rate-limited workqueue, in the shape of client-go's
//! `examples/workqueue`: event handlers add keys, workers process them, failures are retried
//! with the default controller backoff up to a limit, successes are forgotten, and every item
//! is marked done.
//!
//! Run it with `cargo run -p kclient-workqueue --example workqueue`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kclient_workqueue::{
    default_controller_rate_limiter, RateLimitingQueue, RateLimitingQueueConfig,
};

/// How many times a key is retried before it is dropped (client-go's example uses 5).
const MAX_RETRIES: usize = 5;

/// Stands in for a reconcile: some keys fail a few times before they succeed, and one
/// never does.
struct FlakyBackend {
    attempts: Mutex<HashMap<String, usize>>,
}

impl FlakyBackend {
    fn sync(&self, key: &str) -> Result<(), String> {
        let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
        let attempt = attempts.entry(key.to_owned()).or_insert(0);
        *attempt += 1;
        let failures_before_success = match key {
            "default/flaky" => 2,
            "default/broken" => usize::MAX,
            _ => 0,
        };
        if *attempt > failures_before_success {
            Ok(())
        } else {
            Err(format!("attempt {attempt} failed"))
        }
    }
}

/// One worker: take a key, sync it, then forget or retry it, and always mark it done.
async fn run_worker(
    id: usize,
    queue: RateLimitingQueue<String>,
    backend: Arc<FlakyBackend>,
    synced: Arc<AtomicUsize>,
) {
    while let Some(key) = queue.get().await {
        match backend.sync(&key) {
            Ok(()) => {
                println!("worker {id}: synced {key}");
                // Success: clear the key's failure history.
                queue.forget(&key);
                synced.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) if queue.num_requeues(&key) < MAX_RETRIES => {
                println!("worker {id}: {key}: {error}; retrying");
                // Failure: come back after the rate limiter's delay.
                queue.add_rate_limited(key.clone());
            }
            Err(error) => {
                println!("worker {id}: {key}: {error}; dropping it after {MAX_RETRIES} retries");
                queue.forget(&key);
            }
        }
        // Always: release the key so that it can be handed out again.
        queue.done(&key);
    }
    println!("worker {id}: queue shut down, exiting");
}

#[tokio::main]
async fn main() {
    let queue = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        RateLimitingQueueConfig::new().name("example"),
    );
    let backend = Arc::new(FlakyBackend {
        attempts: Mutex::new(HashMap::new()),
    });
    let synced = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (1..=3)
        .map(|id| {
            tokio::spawn(run_worker(
                id,
                queue.clone(),
                backend.clone(),
                synced.clone(),
            ))
        })
        .collect();

    // The "event handler": notifications for a few objects, some of them repeated; repeated
    // keys that are still queued collapse into one.
    let events = [
        "default/web",
        "default/flaky",
        "default/web",
        "default/db",
        "default/broken",
        "default/db",
        "kube-system/dns",
    ];
    for key in events {
        queue.add(key.to_owned());
    }

    // Retries of "default/broken" take 5 + 10 + 20 + 40 + 80 ms; give them time, then stop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    queue.shut_down_with_drain().await;
    for worker in workers {
        if let Err(error) = worker.await {
            eprintln!("worker failed: {error}");
        }
    }
    println!(
        "done: {} syncs succeeded; \"default/broken\" was tried {} times",
        synced.load(Ordering::Relaxed),
        backend
            .attempts
            .lock()
            .map(|a| a.get("default/broken").copied().unwrap_or(0))
            .unwrap_or(0),
    );
}
