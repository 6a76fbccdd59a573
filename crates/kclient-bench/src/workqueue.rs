//! Scenario 3: the workqueue. `queue`: client-go's `BenchmarkQueue` shape (a fresh queue,
//! then 100 keys each added, got and done), `--iterations` times; `contended`: 4 producers
//! add 10,000 distinct keys each while 2 workers get and done them. Each is timed `--repeat`
//! times; the median counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use kclient_workqueue::WorkQueue;
use serde_json::{json, Value};

use crate::args::Options;
use crate::proc_stats::median;
use crate::Error;

const PRODUCERS: u64 = 4;
const PER_PRODUCER: u64 = 10_000;
const WORKERS: usize = 2;

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let mut times = Vec::with_capacity(o.repeat);
    let mut items = 0;
    for _ in 0..o.repeat {
        let (took, n) = match o.shape.as_str() {
            "queue" => benchmark_queue(o.iterations).await,
            "contended" => contended().await?,
            other => return Err(format!("unknown workqueue shape {other:?}").into()),
        };
        times.push(took);
        items = n;
    }
    let seconds = median(&times);
    Ok(json!({
        "shape": o.shape, "items": items, "seconds": seconds,
        "items_per_s": items as f64 / seconds,
    }))
}

/// Keys are `Arc<str>`: the analogue of Go's shared immutable strings.
async fn benchmark_queue(iterations: usize) -> (f64, usize) {
    let keys: Vec<Arc<str>> = (0..100).map(|i| Arc::from(format!("key-{i}"))).collect();
    let start = Instant::now();
    for _ in 0..iterations {
        let q = WorkQueue::<Arc<str>>::new();
        for key in &keys {
            q.add(Arc::clone(key));
            if let Some(item) = q.get().await {
                q.done(&item);
            }
        }
        q.shut_down();
    }
    (start.elapsed().as_secs_f64(), iterations * keys.len())
}

async fn contended() -> Result<(f64, usize), Error> {
    let q = WorkQueue::<u64>::new();
    let left = Arc::new(AtomicU64::new(PRODUCERS * PER_PRODUCER));
    let start = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (q, left) = (q.clone(), Arc::clone(&left));
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    q.done(&item);
                    if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                        q.shut_down();
                    }
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 0..PER_PRODUCER {
                    q.add(p * PER_PRODUCER + i);
                }
            })
        })
        .collect();
    for task in producers.into_iter().chain(workers) {
        task.await?;
    }
    Ok((
        start.elapsed().as_secs_f64(),
        (PRODUCERS * PER_PRODUCER) as usize,
    ))
}
