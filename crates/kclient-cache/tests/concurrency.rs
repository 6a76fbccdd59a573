//! Concurrency: readers and a writer replacing 100k objects at once see no torn state and do
//! not deadlock; a read does not wait while a replace (or an index function) runs.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::pod;
use k8s_openapi::api::core::v1::Pod;
use kclient_cache::{Indexer, Indexers, KeyFunc, NAMESPACE_INDEX};

const OBJECTS: usize = 100_000;

fn generation(gen: &str) -> Vec<Arc<Pod>> {
    (0..OBJECTS)
        .map(|i| pod(gen, &format!("pod-{i}"), &[("gen", gen)]))
        .collect()
}

fn gen_of(p: &Pod) -> String {
    p.metadata.labels.as_ref().unwrap()["gen"].clone()
}

/// Two generations of 100k pods, each in its own namespace, replaced back and forth while
/// readers check that every view they get is wholly one generation.
#[test]
fn readers_never_see_a_torn_replace_of_100k_objects() {
    let indexer = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    let a = generation("a");
    let b = generation("b");
    indexer.replace(a.clone(), "1").unwrap();
    let done = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = (0..2)
        .map(|r| {
            let indexer = indexer.clone();
            let done = Arc::clone(&done);
            thread::spawn(move || {
                let mut checks = 0usize;
                while !done.load(Ordering::Acquire) || checks < 3 {
                    if r == 0 {
                        // A whole list is one generation.
                        let all = indexer.list();
                        assert_eq!(all.len(), OBJECTS);
                        let gen = gen_of(&all[0]);
                        assert!(all.iter().all(|p| gen_of(p) == gen), "torn list");
                    } else {
                        // Each index read is whole: all of a generation or none of it.
                        for gen in ["a", "b"] {
                            let found = indexer.by_index(NAMESPACE_INDEX, gen).unwrap();
                            assert!(
                                found.is_empty() || found.len() == OBJECTS,
                                "torn index: {} in {gen}",
                                found.len()
                            );
                            assert!(found.iter().all(|p| gen_of(p) == gen));
                        }
                        let values = indexer.list_index_func_values(NAMESPACE_INDEX);
                        assert_eq!(values.len(), 1, "one namespace at a time: {values:?}");
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();

    for round in 0..4 {
        let next = if round % 2 == 0 { &b } else { &a };
        indexer.replace(next.clone(), "2").unwrap();
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().expect("a reader panicked") >= 3);
    }
    assert_eq!(indexer.len(), OBJECTS);
}

/// Reads go on while a replace is being built: the replace's index function waits until a
/// reader has finished a read. If reads waited for the replace, this would deadlock (the
/// bounded waits turn that into a failure rather than a hang).
#[test]
fn reads_are_not_blocked_while_a_replace_is_being_built() {
    let (building_tx, building_rx) = mpsc::channel::<()>();
    let (read_done_tx, read_done_rx) = mpsc::channel::<()>();
    let read_done_rx = Arc::new(parking_lot::Mutex::new(read_done_rx));
    let gate = {
        let building_tx = parking_lot::Mutex::new(Some(building_tx));
        let read_done_rx = Arc::clone(&read_done_rx);
        move |p: &Pod| {
            if p.metadata.name.as_deref() == Some("gate") {
                if let Some(tx) = building_tx.lock().take() {
                    tx.send(()).unwrap();
                    read_done_rx
                        .lock()
                        .recv_timeout(Duration::from_secs(30))
                        .expect("the reader finished while the replace was being built");
                }
            }
            Ok(vec![])
        }
    };
    let indexer = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("gate", gate),
    );
    indexer.add(pod("ns", "before", &[])).unwrap();

    let writer = {
        let indexer = indexer.clone();
        thread::spawn(move || {
            let mut list = generation("x");
            list.push(pod("ns", "gate", &[]));
            indexer.replace(list, "9").unwrap();
        })
    };
    building_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the replace started");
    // The replace is in the middle of building: reads answer with the old content.
    assert!(indexer.get_by_key("ns/before").is_some());
    assert_eq!(indexer.len(), 1);
    assert_eq!(indexer.list().len(), 1);
    read_done_tx.send(()).unwrap();
    writer.join().unwrap();
    assert_eq!(indexer.len(), OBJECTS + 1);
    assert!(indexer.get_by_key("ns/before").is_none());
}

/// Writers from several threads and readers at once: the end state is the writes', with
/// consistent indices, and nothing deadlocks.
#[test]
fn concurrent_writers_and_readers_agree_at_the_end() {
    let indexer = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let indexer = indexer.clone();
            thread::spawn(move || {
                for i in 0..2_000 {
                    let ns = format!("ns-{}", i % 7);
                    indexer.add(pod(&ns, &format!("w{w}-{i}"), &[])).unwrap();
                    if i % 3 == 0 {
                        indexer.delete(pod(&ns, &format!("w{w}-{i}"), &[])).unwrap();
                    }
                }
            })
        })
        .collect();
    let reader = {
        let indexer = indexer.clone();
        thread::spawn(move || {
            for _ in 0..200 {
                for value in indexer.list_index_func_values(NAMESPACE_INDEX) {
                    for p in indexer.by_index(NAMESPACE_INDEX, &value).unwrap() {
                        assert_eq!(p.metadata.namespace.as_deref(), Some(value.as_str()));
                    }
                }
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    let per_writer = (0..2_000).filter(|i| i % 3 != 0).count();
    assert_eq!(indexer.len(), 4 * per_writer);
    let indexed: usize = indexer
        .list_index_func_values(NAMESPACE_INDEX)
        .iter()
        .map(|v| indexer.index_keys(NAMESPACE_INDEX, v).unwrap().len())
        .sum();
    assert_eq!(indexed, indexer.len());
}
