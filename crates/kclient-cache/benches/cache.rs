//! Criterion benchmarks for the cache, in the shape of client-go's `BenchmarkIndexer`,
//! `BenchmarkLister_Match_*` and DeltaFIFO/RealFIFO throughput, over 100k Pods; and the
//! informer's fast path: updates from a watch through three handlers.
//!
//! The reflector alone: a list of 100k Pods into a store, and 100k watch events into it.
//!
//! `cargo bench -p kclient-cache --bench cache -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{
    process_deltas, DeltaFifo, DeltaFifoOptions, Indexer, Indexers, KeyFunc, KeyListerGetter,
    ListWatch, Lister, Queue, RealFifo, RealFifoOptions, Reflector, ReflectorOptions,
    ResourceEventHandlerFuncs, SharedIndexInformer, SharedIndexInformerOptions, Store, StoreError,
};
use kclient_core::labels::Selector;
use kclient_core::{ApiError, DeletedObject, ListOptions, ObjectList, WatchEvent};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 100_000;
const NODES: usize = 1_000;

/// 100k pods in 10 namespaces on 1,000 nodes; every 1,000th pod is labelled `match=true`.
fn pods(generation: &str) -> Vec<Arc<Pod>> {
    (0..OBJECTS)
        .map(|i| {
            let mut pod = Pod::default();
            pod.metadata.namespace = Some(format!("ns-{}", i % 10));
            pod.metadata.name = Some(format!("pod-{i:06}"));
            pod.metadata.resource_version = Some(generation.to_owned());
            let mut labels =
                std::collections::BTreeMap::from([("app".to_string(), format!("app-{}", i % 100))]);
            if i % 1000 == 0 {
                labels.insert("match".into(), "true".into());
            }
            pod.metadata.labels = Some(labels);
            pod.spec = Some(PodSpec {
                node_name: Some(format!("node-{}", i % NODES)),
                ..PodSpec::default()
            });
            Arc::new(pod)
        })
        .collect()
}

fn by_node() -> Indexers<Pod> {
    Indexers::namespace().with("by-node", |p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    })
}

fn indexer() -> Indexer<Pod> {
    Indexer::new(KeyFunc::deletion_handling_meta_namespace(), by_node())
}

fn filled(objects: &[Arc<Pod>]) -> Indexer<Pod> {
    let idx = indexer();
    idx.replace(objects.to_vec(), "1").unwrap();
    idx
}

fn indexer_benches(c: &mut Criterion) {
    let v1 = pods("1");
    let v2 = pods("2");
    let mut g = c.benchmark_group("indexer");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    g.bench_function("add_100k", |b| {
        b.iter_batched(
            indexer,
            |idx| {
                for p in &v1 {
                    idx.add(Arc::clone(p)).unwrap();
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("update_100k", |b| {
        b.iter_batched(
            || filled(&v1),
            |idx| {
                for p in &v2 {
                    idx.update(Arc::clone(p)).unwrap();
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("replace_100k", |b| {
        b.iter_batched(
            || (filled(&v1), v2.clone()),
            |(idx, list)| {
                idx.replace(list, "2").unwrap();
                idx
            },
            BatchSize::LargeInput,
        )
    });
    let idx = filled(&v1);
    g.bench_function("list_100k", |b| b.iter(|| black_box(idx.list())));
    g.finish();

    let mut g = c.benchmark_group("indexer_reads");
    g.throughput(Throughput::Elements(1));
    g.bench_function("get_by_key", |b| {
        let keys: Vec<String> = (0..1000)
            .map(|i| format!("ns-{}/pod-{:06}", i % 10, i * 97))
            .collect();
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(idx.get_by_key(&keys[i]))
        })
    });
    // One value of a custom index with 100 objects under it (client-go's BenchmarkByIndex shape).
    g.bench_function("by_index_custom_100_of_100k", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % NODES;
            black_box(idx.by_index("by-node", &format!("node-{i}")).unwrap())
        })
    });
    g.bench_function("count_by_index_custom_100_of_100k", |b| {
        let store = idx.thread_safe_store();
        b.iter(|| black_box(store.count_by_index("by-node", "node-7").unwrap()))
    });
    // client-go's BenchmarkIndexer: an update that keeps its indexed values.
    g.bench_function("update_same_index_values", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % OBJECTS;
            idx.update(Arc::clone(&v2[i])).unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("lister");
    g.sample_size(20);
    let lister = Lister::<Pod>::new(filled(&v1));
    let matching: Selector = "match=true".parse().unwrap();
    g.bench_function("list_match_100_of_100k", |b| {
        b.iter(|| black_box(lister.list(&matching)))
    });
    g.bench_function("namespaced_list_everything_10k", |b| {
        let ns = lister.namespaced("ns-3");
        b.iter(|| black_box(ns.list(&Selector::everything())))
    });
    g.finish();
}

/// Pops everything queued into `idx`, as an informer does.
async fn drain_into<Q: Queue<Pod>>(fifo: &Q, idx: &Indexer<Pod>) {
    while !fifo.is_empty() {
        fifo.pop(|d, i| {
            process_deltas(idx, d, i, |_| {})
                .map_err(|e| kclient_cache::ProcessError::Failed(e.into()))
        })
        .await
        .unwrap();
    }
}

fn fifo_benches(c: &mut Criterion) {
    let objects = pods("1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("fifo");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    g.bench_function("delta_fifo_add_pop_100k", |b| {
        b.iter_batched(
            || {
                let idx = indexer();
                let known: Arc<dyn KeyListerGetter<Pod>> = Arc::new(idx.clone());
                let fifo = DeltaFifo::new(DeltaFifoOptions {
                    known_objects: Some(known),
                    emit_delta_type_replaced: true,
                    ..DeltaFifoOptions::default()
                });
                (idx, fifo)
            },
            |(idx, fifo)| {
                rt.block_on(async {
                    for p in &objects {
                        fifo.add(Arc::clone(p)).unwrap();
                    }
                    drain_into(&fifo, &idx).await;
                });
                idx
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("real_fifo_add_pop_100k", |b| {
        b.iter_batched(
            || (indexer(), RealFifo::<Pod>::new(RealFifoOptions::default())),
            |(idx, fifo)| {
                rt.block_on(async {
                    for p in &objects {
                        fifo.add(Arc::clone(p)).unwrap();
                    }
                    drain_into(&fifo, &idx).await;
                });
                idx
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("real_fifo_replace_pop_100k", |b| {
        b.iter_batched(
            || {
                (
                    indexer(),
                    RealFifo::<Pod>::new(RealFifoOptions::default()),
                    objects.clone(),
                )
            },
            |(idx, fifo, list)| {
                rt.block_on(async {
                    fifo.replace(list, "1").unwrap();
                    drain_into(&fifo, &idx).await;
                });
                idx
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Updates through the informer to three handlers that only count (the cost of the
/// hand-off from the informer to its handlers, nothing else): events per second from the
/// first update to the last one handled by all three.
fn handler_benches(c: &mut Criterion) {
    const EVENTS: u64 = 20_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("informer");
    g.throughput(Throughput::Elements(EVENTS));
    g.sample_size(20);
    // Handlers that may block (the default: their calls run on the handler threads) and
    // handlers declared non-blocking (called by their listeners' tasks).
    for (name, non_blocking) in [
        ("updates_through_3_handlers_20k", false),
        ("updates_through_3_non_blocking_handlers_20k", true),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = std::time::Duration::ZERO;
                    for _ in 0..iters {
                        total += updates_through_three_handlers(EVENTS, non_blocking).await;
                    }
                    total
                })
            })
        });
    }
    g.finish();
}

async fn updates_through_three_handlers(events: u64, non_blocking: bool) -> std::time::Duration {
    let source = FakeControllerSource::<Pod>::new();
    let objects: Vec<Pod> = (0..100)
        .map(|i| {
            let mut pod = Pod::default();
            pod.metadata.namespace = Some("bench".into());
            pod.metadata.name = Some(format!("pod-{i}"));
            source.add(pod)
        })
        .collect();
    let informer = SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..3 {
        let seen = std::sync::atomic::AtomicU64::new(0);
        let done = done_tx.clone();
        let handler = ResourceEventHandlerFuncs::new().update_func(move |_, _| {
            if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == events {
                let _ = done.send(());
            }
        });
        let handler = if non_blocking {
            handler.non_blocking()
        } else {
            handler
        };
        informer.add_event_handler(handler).unwrap();
    }
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    while !informer.has_synced() {
        tokio::task::yield_now().await;
    }
    let start = std::time::Instant::now();
    for i in 0..events as usize {
        source.modify(objects[i % objects.len()].clone());
    }
    for _ in 0..3 {
        done_rx.recv().await.unwrap();
    }
    let elapsed = start.elapsed();
    cancel.cancel();
    let _ = run.await;
    elapsed
}

/// A store that counts the reflector's writes and says when it has seen `target` of them.
struct Counting {
    writes: std::sync::atomic::AtomicUsize,
    target: usize,
    done: tokio::sync::Notify,
}

impl Counting {
    fn new(target: usize) -> Arc<Self> {
        Arc::new(Self {
            writes: std::sync::atomic::AtomicUsize::new(0),
            target,
            done: tokio::sync::Notify::new(),
        })
    }

    fn count(&self, n: usize) -> Result<(), StoreError> {
        let seen = self
            .writes
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
            + n;
        if seen >= self.target {
            self.done.notify_one();
        }
        Ok(())
    }
}

impl Store<Pod> for Counting {
    fn add(&self, _: Arc<Pod>) -> Result<(), StoreError> {
        self.count(1)
    }
    fn update(&self, _: Arc<Pod>) -> Result<(), StoreError> {
        self.count(1)
    }
    fn delete(&self, _: DeletedObject<Pod>) -> Result<(), StoreError> {
        self.count(1)
    }
    fn replace(&self, list: Vec<Arc<Pod>>, _: &str) -> Result<(), StoreError> {
        self.count(list.len())
    }
    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn list_keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The reflector on its own, over an in-memory lister-watcher: a list of 100k Pods replaced
/// into a store, and 100k watch events written into it one by one (admission, compaction,
/// resourceVersion bookkeeping; no FIFO, no informer). Only the reflector's run is timed:
/// the objects are made before it starts.
// The watch events' error type is the lister-watcher's, `ApiError`, as large as it is.
#[allow(clippy::result_large_err)]
fn reflector_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let objects: Vec<Pod> = pods("1").iter().map(|p| Pod::clone(p)).collect();
    let mut g = c.benchmark_group("reflector");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    g.bench_function("list_100k", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let list = ObjectList::new(objects.clone(), "1");
                total += rt.block_on(reflect(Some(list), Vec::new()));
            }
            total
        })
    });
    g.bench_function("watch_events_100k", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let events: Vec<_> = objects
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let mut p = p.clone();
                        p.metadata.resource_version = Some((i + 2).to_string());
                        Ok(WatchEvent::Modified(p))
                    })
                    .collect();
                total += rt.block_on(reflect(None, events));
            }
            total
        })
    });
    g.finish();
}

/// Runs a list-and-watch reflector until `list` (empty without one) and `events` are in the
/// store; the time from its start.
async fn reflect(
    list: Option<ObjectList<Pod>>,
    events: Vec<Result<WatchEvent<Pod>, ApiError>>,
) -> std::time::Duration {
    let target = list.as_ref().map_or(0, |l| l.items.len()) + events.len();
    let list = Arc::new(parking_lot::Mutex::new(list));
    let events = Arc::new(parking_lot::Mutex::new(Some(events)));
    let lw = ListWatch::<Pod, ApiError>::new(
        move |_: ListOptions| {
            let list = list.lock().take();
            async move { Ok(list.unwrap_or_else(|| ObjectList::new(Vec::new(), "1"))) }
        },
        move |_: ListOptions| {
            let events = events.lock().take();
            async move {
                Ok(match events {
                    Some(events) => futures::stream::iter(events).boxed(),
                    None => futures::stream::pending().boxed(),
                })
            }
        },
    );
    let store = Counting::new(target);
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorOptions::default().use_watch_list(false),
    ));
    let cancel = CancellationToken::new();
    let start = std::time::Instant::now();
    let run = tokio::spawn({
        let (reflector, cancel) = (Arc::clone(&reflector), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    store.done.notified().await;
    let elapsed = start.elapsed();
    cancel.cancel();
    let _ = run.await;
    elapsed
}

criterion_group!(
    benches,
    indexer_benches,
    fifo_benches,
    handler_benches,
    reflector_benches
);
criterion_main!(benches);
