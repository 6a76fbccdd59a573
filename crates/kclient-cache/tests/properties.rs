//! Property tests: random add/update/delete/replace/resync sequences, with pops interleaved
//! (some of them running further writes while they process, as a reflector does while the
//! informer works), through DeltaFIFO → indexer and RealFIFO → indexer. Whatever the order,
//! once everything is popped the indexer equals the last state the "server" gave, and every
//! index agrees with the objects.
//!
//! With the tests they run from a fixed seed (`kclient-testkit`); `cargo xtask fuzz` runs them
//! longer with new seeds and records what fails in `proptest-regressions/properties.txt`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::{obj, val};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    process_deltas, DeltaFifo, DeltaFifoOptions, Indexer, Indexers, KeyFunc, KeyListerGetter,
    ProcessError, Queue, RealFifo, RealFifoOptions, Store, NAMESPACE_INDEX,
};
use proptest::prelude::*;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

#[derive(Debug, Clone)]
enum Op {
    /// An object is created or changed (Added if the server did not have it, else Updated).
    Upsert(usize, i64),
    /// An object is deleted (possibly one the server does not have).
    Delete(usize),
    /// A relist returns exactly these objects.
    Replace(Vec<(usize, i64)>),
    /// A periodic resync.
    Resync,
    /// The consumer pops this many times (fewer if the queue empties).
    Pop(usize),
    /// The consumer pops once, and this write happens while it processes.
    PopDuring(Box<Op>),
}

fn write_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NAMES.len(), 0..4i64).prop_map(|(n, v)| Op::Upsert(n, v)),
        2 => (0..NAMES.len()).prop_map(Op::Delete),
        1 => proptest::collection::btree_map(0..NAMES.len(), 0..4i64, 0..NAMES.len())
            .prop_map(|m| Op::Replace(m.into_iter().collect())),
        1 => Just(Op::Resync),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => write_op(),
        2 => (1..4usize).prop_map(Op::Pop),
        2 => write_op().prop_map(|w| Op::PopDuring(Box::new(w))),
    ]
}

/// The server's state: name → value.
type Truth = BTreeMap<String, i64>;

fn write<S: Store<ConfigMap>>(store: &S, truth: &mut Truth, op: &Op) {
    match op {
        Op::Upsert(n, v) => {
            let name = NAMES[*n];
            let o = obj(name, *v);
            if truth.insert(name.to_owned(), *v).is_some() {
                store.update(o).unwrap();
            } else {
                store.add(o).unwrap();
            }
        }
        Op::Delete(n) => {
            let name = NAMES[*n];
            let last = truth.remove(name).unwrap_or(-1);
            store.delete(obj(name, last).into()).unwrap();
        }
        Op::Replace(items) => {
            truth.clear();
            let list = items
                .iter()
                .map(|(n, v)| {
                    truth.insert(NAMES[*n].to_owned(), *v);
                    obj(NAMES[*n], *v)
                })
                .collect();
            store.replace(list, "1").unwrap();
        }
        Op::Resync => store.resync().unwrap(),
        Op::Pop(_) | Op::PopDuring(_) => unreachable!("not a write"),
    }
}

fn indexer() -> Indexer<ConfigMap> {
    Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::namespace().with("by-value", |cm: &ConfigMap| Ok(vec![val(cm).to_string()])),
    )
}

/// Pops once, applying to `indexer`; `during` runs while the deltas are being processed.
async fn pop_into<Q: Queue<ConfigMap>>(
    queue: &Q,
    indexer: &Indexer<ConfigMap>,
    during: impl FnOnce() + Send,
) {
    queue
        .pop(|deltas, initial| {
            during();
            process_deltas(indexer, deltas, initial, |_| {})
                .map_err(|e| ProcessError::Failed(e.into()))
        })
        .await
        .unwrap();
}

async fn run<Q: Queue<ConfigMap>>(queue: &Q, indexer: &Indexer<ConfigMap>, ops: &[Op]) -> Truth {
    let mut truth = Truth::new();
    for op in ops {
        match op {
            Op::Pop(n) => {
                for _ in 0..*n {
                    if queue.is_empty() {
                        break;
                    }
                    pop_into(queue, indexer, || {}).await;
                }
            }
            Op::PopDuring(w) => {
                if queue.is_empty() {
                    write(queue, &mut truth, w);
                } else {
                    pop_into(queue, indexer, || write(queue, &mut truth, w)).await;
                }
            }
            w => write(queue, &mut truth, w),
        }
    }
    while !queue.is_empty() {
        pop_into(queue, indexer, || {}).await;
    }
    truth
}

/// The indexer holds exactly `truth`, and every index agrees with the objects.
fn check(indexer: &Indexer<ConfigMap>, truth: &Truth) -> Result<(), TestCaseError> {
    let held: Truth = indexer
        .list()
        .iter()
        .map(|o| (o.metadata.name.clone().unwrap(), val(o)))
        .collect();
    prop_assert_eq!(&held, truth);

    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, v) in truth {
        expected
            .entry(v.to_string())
            .or_default()
            .insert(name.clone());
    }
    let values: BTreeSet<String> = indexer
        .list_index_func_values("by-value")
        .into_iter()
        .collect();
    prop_assert_eq!(&values, &expected.keys().cloned().collect::<BTreeSet<_>>());
    for (value, names) in &expected {
        let keys: BTreeSet<String> = indexer
            .index_keys("by-value", value)
            .unwrap()
            .into_iter()
            .collect();
        prop_assert_eq!(&keys, names);
    }
    let in_ns: BTreeSet<String> = indexer
        .index_keys(NAMESPACE_INDEX, "")
        .unwrap()
        .into_iter()
        .collect();
    prop_assert_eq!(in_ns, truth.keys().cloned().collect::<BTreeSet<_>>());
    Ok(())
}

/// Whether `op` populates a queue (anything but a resync or a pop; client-go counts even an
/// ignored delete).
fn populates(op: &Op) -> bool {
    match op {
        Op::Upsert(..) | Op::Delete(_) | Op::Replace(_) => true,
        Op::PopDuring(w) => populates(w),
        Op::Resync | Op::Pop(_) => false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(kclient_testkit::proptest_config(
        512,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/properties.txt"),
    ))]

    #[test]
    fn delta_fifo_to_indexer_ends_equal_to_the_last_state_given(ops in proptest::collection::vec(op(), 1..60)) {
        let indexer = indexer();
        let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(indexer.clone());
        let fifo = DeltaFifo::new(DeltaFifoOptions {
            known_objects: Some(known),
            emit_delta_type_replaced: true,
            ..DeltaFifoOptions::default()
        });
        let truth = runtime().block_on(run(&fifo, &indexer, &ops));
        check(&indexer, &truth)?;
        prop_assert_eq!(fifo.has_synced(), ops.iter().any(populates));
    }

    #[test]
    fn real_fifo_to_indexer_ends_equal_to_the_last_state_given(
        ops in proptest::collection::vec(op(), 1..60),
        batch_size in prop_oneof![Just(1usize), Just(2), Just(1000)],
    ) {
        let indexer = indexer();
        let fifo = RealFifo::new(RealFifoOptions { batch_size, ..RealFifoOptions::default() });
        let truth = runtime().block_on(run(&fifo, &indexer, &ops));
        check(&indexer, &truth)?;
    }
}
