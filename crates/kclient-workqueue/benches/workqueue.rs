//! Criterion benchmarks mirroring client-go's workqueue benchmarks, plus a contended one.
//!
//! * `queue`: client-go's `BenchmarkQueue`: per iteration, a fresh queue (not timed) and 100
//!   keys each added, taken and marked done. Keys are `Arc<str>` (the analogue of Go's
//!   immutable shared strings) and, for comparison, `String`.
//! * `delaying_queue_add_after`: client-go's `BenchmarkDelayingQueue_AddAfter`: N `add_after`
//!   calls with a freshly formatted key and a random delay of up to 10 minutes, then the
//!   clock jumps 11 minutes (tokio's paused clock, as Go's fake clock) and N `get`s.
//! * `contended`: 4 producer tasks add distinct keys while 2 worker tasks get and done them,
//!   on a 2-thread runtime; one element is one item through add, get and done.
//!
//! * `priority_queue`: controller-runtime's `BenchmarkAddGetDone` and `BenchmarkAddOnly`
//!   on the [`PriorityQueue`]: 1000 keys added then taken and done; 1000 adds of keys
//!   already queued.
//!
//! Run: `cargo bench -p kclient-workqueue --bench workqueue`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kclient_workqueue::{DelayingQueue, PriorityQueue, WorkQueue};

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn queue(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("queue");
    group.throughput(Throughput::Elements(100));

    let arc_keys: Vec<Arc<str>> = (0..100).map(|i| Arc::from(format!("key-{i}"))).collect();
    group.bench_function("arc_str", |b| {
        b.iter_batched(
            WorkQueue::<Arc<str>>::new,
            |q| {
                runtime.block_on(async {
                    for key in &arc_keys {
                        q.add(Arc::clone(key));
                        let item = q.get().await.expect("item");
                        q.done(&item);
                    }
                });
                q
            },
            BatchSize::SmallInput,
        );
    });

    let string_keys: Vec<String> = (0..100).map(|i| format!("key-{i}")).collect();
    group.bench_function("string", |b| {
        b.iter_batched(
            WorkQueue::<String>::new,
            |q| {
                runtime.block_on(async {
                    for key in &string_keys {
                        q.add(key.clone());
                        let item = q.get().await.expect("item");
                        q.done(&item);
                    }
                });
                q
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn priority_queue(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("priority_queue");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("add_get_done", |b| {
        let q = runtime.block_on(async { PriorityQueue::<u32>::new() });
        b.iter(|| {
            runtime.block_on(async {
                for i in 0..1000 {
                    q.add(i);
                }
                for _ in 0..1000 {
                    let item = q.get().await.expect("item");
                    q.done(&item);
                }
            });
        });
    });
    group.bench_function("add_only", |b| {
        let q = runtime.block_on(async { PriorityQueue::<u32>::new() });
        b.iter(|| {
            for i in 0..1000 {
                q.add(black_box(i));
            }
        });
    });
    group.finish();
}

fn delaying_queue_add_after(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("delaying_queue_add_after");
    group.throughput(Throughput::Elements(1));
    group.bench_function("add_after_then_get", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let q = DelayingQueue::<String>::new();
                let mut seed = 0x2545_F491_4F6C_DD1D_u64;
                let ten_minutes = 600_000_000_000u64;
                let start = Instant::now();
                for n in 0..iters {
                    let delay = Duration::from_nanos(xorshift(&mut seed) % ten_minutes);
                    q.add_after(n.to_string(), delay);
                }
                tokio::time::advance(Duration::from_secs(11 * 60)).await;
                for _ in 0..iters {
                    black_box(q.get().await);
                }
                start.elapsed()
            })
        });
    });
    group.finish();
}

fn contended(c: &mut Criterion) {
    const PRODUCERS: u64 = 4;
    const WORKERS: usize = 2;
    const ITEMS: u64 = 40_000;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("contended");
    group.throughput(Throughput::Elements(ITEMS));
    group.bench_function("4_producers_2_workers", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += runtime.block_on(async {
                    let q = WorkQueue::<u64>::new();
                    let start = Instant::now();
                    let workers: Vec<_> = (0..WORKERS)
                        .map(|_| {
                            let q = q.clone();
                            tokio::spawn(async move {
                                let mut n = 0u64;
                                while let Some(item) = q.get().await {
                                    q.done(&item);
                                    n += 1;
                                }
                                n
                            })
                        })
                        .collect();
                    let producers: Vec<_> = (0..PRODUCERS)
                        .map(|p| {
                            let q = q.clone();
                            tokio::spawn(async move {
                                let per = ITEMS / PRODUCERS;
                                for i in 0..per {
                                    q.add(p * per + i);
                                    if i % 256 == 255 {
                                        tokio::task::yield_now().await;
                                    }
                                }
                            })
                        })
                        .collect();
                    for producer in producers {
                        producer.await.expect("producer");
                    }
                    q.shut_down();
                    let mut processed = 0;
                    for worker in workers {
                        processed += worker.await.expect("worker");
                    }
                    assert_eq!(processed, ITEMS);
                    start.elapsed()
                });
            }
            total
        });
    });
    group.finish();
}

criterion_group!(
    benches,
    queue,
    priority_queue,
    delaying_queue_add_after,
    contended
);
criterion_main!(benches);
