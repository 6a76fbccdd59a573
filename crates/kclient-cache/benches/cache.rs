//! Criterion benchmarks for the cache, in the shape of client-go's `BenchmarkIndexer`,
//! `BenchmarkLister_Match_*` and DeltaFIFO/RealFIFO throughput, over 100k Pods.
//!
//! `cargo bench -p kclient-cache --bench cache -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kclient_cache::{
    process_deltas, DeltaFifo, DeltaFifoOptions, Indexer, Indexers, KeyFunc, KeyListerGetter,
    Lister, Queue, RealFifo, RealFifoOptions,
};
use kclient_core::labels::Selector;

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

criterion_group!(benches, indexer_benches, fifo_benches);
criterion_main!(benches);
