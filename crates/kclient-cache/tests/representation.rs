//! The compact cache representation: a compact store answers every read exactly as a decoded
//! one does (the same random operations on both, compared after each), its reads are never
//! stale, codecs that fail or do not round-trip lose no object, and informers and factories
//! built compact hand decoded objects to handlers and listers.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec};
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{
    process_deltas, CacheRepresentation, Delta, DeltaFifo, DeltaFifoOptions, EncodedList,
    IndexFuncError, Indexer, Indexers, KeyFunc, Notification, ObjectCodec, ReplacedAllInfo,
    ResourceEventHandlerFuncs, SharedInformerFactory, Store, StoreError, ThreadSafeStore,
};
use kclient_core::{DeletedObject, ListerWatcherFor, ResourceExt, TweakListOptions};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

const BY_NODE: &str = "by-node";
const BY_LABEL: &str = "by-label";

fn by_node(pod: &Pod) -> Result<Vec<String>, IndexFuncError> {
    Ok(pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect())
}

/// Several values per object: one per label.
fn by_label(pod: &Pod) -> Result<Vec<String>, IndexFuncError> {
    Ok(pod
        .labels()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect())
}

fn indexers() -> Indexers<Pod> {
    Indexers::namespace().with(BY_NODE, by_node)
}

fn pod(i: u64, generation: u64) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some(format!("ns-{}", i % 3));
    pod.metadata.name = Some(format!("pod-{i}"));
    pod.metadata.resource_version = Some(generation.to_string());
    pod.metadata.labels = Some(BTreeMap::from([
        ("app".to_owned(), format!("app-{}", (i + generation) % 4)),
        ("tier".to_owned(), format!("tier-{}", generation % 2)),
    ]));
    pod.spec = Some(PodSpec {
        node_name: (!generation.is_multiple_of(5))
            .then(|| format!("node-{}", (i * generation) % 4)),
        ..PodSpec::default()
    });
    as_served(pod)
}

/// `pod` as an API server sends it: with an empty `status` rather than none. (Go's Pod has a
/// struct, not a pointer, there: protobuf, like Go's JSON, always carries it, so a decoded
/// Pod always has `Some` status; see `CacheRepresentation`.)
fn as_served(pod: Pod) -> Pod {
    let codec = ObjectCodec::<Pod>::protobuf().unwrap();
    codec.decode(&codec.encode(&pod).unwrap()).unwrap()
}

fn key(pod: &Pod) -> String {
    format!("{}/{}", pod.namespace().unwrap(), pod.name_any())
}

/// Objects sorted by key, as comparable values.
fn sorted(objects: Vec<Arc<Pod>>) -> Vec<Pod> {
    let mut objects: Vec<Pod> = objects.into_iter().map(|o| (*o).clone()).collect();
    objects.sort_by_key(key);
    objects
}

/// Everything a reader can ask, in a comparable form.
fn snapshot(store: &ThreadSafeStore<Pod>) -> Vec<String> {
    let mut seen = vec![format!("{:?}", sorted(store.list()))];
    let mut keys = store.list_keys();
    keys.sort();
    for key in &keys {
        seen.push(format!("{key}: {:?}", store.get(key)));
    }
    for index in store.get_indexers().names() {
        let mut values = store.list_index_func_values(index);
        values.sort();
        for value in values {
            seen.push(format!(
                "{index}={value}: {:?} {:?} {}",
                store.index_keys(index, &value).unwrap(),
                sorted(store.by_index(index, &value).unwrap()),
                store.count_by_index(index, &value).unwrap(),
            ));
        }
    }
    seen.push(format!(
        "{:?}",
        sorted(store.list_filtered(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some())))
    ));
    seen
}

#[test]
fn a_compact_store_answers_as_the_decoded_one() {
    for recently_decoded in [0, 1, 256] {
        let decoded = ThreadSafeStore::new(indexers());
        let compact = ThreadSafeStore::with_representation(
            indexers(),
            CacheRepresentation::Compact {
                codec: ObjectCodec::for_type(),
                recently_decoded,
            },
        );
        assert!(compact.is_compact() && !decoded.is_compact());
        let mut rng = fastrand::Rng::with_seed(7 + recently_decoded as u64);
        for step in 0..400u64 {
            let i = rng.u64(0..40);
            match rng.u8(0..20) {
                0..=11 => {
                    let obj = Arc::new(pod(i, step));
                    for store in [&decoded, &compact] {
                        store.add(&key(&obj), Arc::clone(&obj)).unwrap();
                    }
                }
                12..=15 => {
                    let k = key(&pod(i, 0));
                    let (a, b) = (decoded.delete(&k).unwrap(), compact.delete(&k).unwrap());
                    assert_eq!(a.as_deref(), b.as_deref(), "delete {k}");
                }
                16 => {
                    let objects: Vec<(String, Arc<Pod>)> = (0..rng.u64(0..30))
                        .map(|j| Arc::new(pod(rng.u64(0..40), step + j)))
                        .map(|p| (key(&p), p))
                        .collect();
                    decoded.replace(objects.clone()).unwrap();
                    compact.replace(objects).unwrap();
                }
                17 if !decoded.get_indexers().contains(BY_LABEL) => {
                    for store in [&decoded, &compact] {
                        store
                            .add_indexers(Indexers::new().with(BY_LABEL, by_label))
                            .unwrap();
                    }
                }
                _ => {
                    let probe = pod(i, step);
                    for index in decoded.get_indexers().names() {
                        assert_eq!(
                            sorted(decoded.index(index, &probe).unwrap()),
                            sorted(compact.index(index, &probe).unwrap()),
                            "index {index} at step {step}"
                        );
                    }
                }
            }
            assert_eq!(
                snapshot(&decoded),
                snapshot(&compact),
                "step {step}, {recently_decoded} recently decoded"
            );
        }
    }
}

#[test]
fn compact_reads_are_decoded_copies_and_never_stale() {
    let store = ThreadSafeStore::with_representation(
        indexers(),
        CacheRepresentation::Compact {
            codec: ObjectCodec::for_type(),
            recently_decoded: 0,
        },
    );
    let first = Arc::new(pod(1, 1));
    store.add("ns-1/pod-1", Arc::clone(&first)).unwrap();
    let (a, b) = (
        store.get("ns-1/pod-1").unwrap(),
        store.get("ns-1/pod-1").unwrap(),
    );
    assert_eq!((&*a, &*b), (&*first, &*first));
    assert!(
        !Arc::ptr_eq(&a, &first) && !Arc::ptr_eq(&a, &b),
        "each read decodes"
    );

    // With recently decoded objects, a read of an unchanged object is the same Arc, and an
    // update is seen at once.
    let store = ThreadSafeStore::with_representation(indexers(), CacheRepresentation::compact());
    store.add("ns-1/pod-1", Arc::clone(&first)).unwrap();
    assert!(Arc::ptr_eq(&store.get("ns-1/pod-1").unwrap(), &first));
    for generation in 2..50 {
        let next = pod(1, generation);
        store.add("ns-1/pod-1", Arc::new(next.clone())).unwrap();
        assert_eq!(*store.get("ns-1/pod-1").unwrap(), next);
        assert_eq!(*store.list()[0], next);
    }
}

#[test]
fn built_in_kinds_are_kept_as_protobuf_and_other_types_as_json() {
    // Protobuf with the encoders compiled in (`compact-protobuf`), else JSON.
    let built_in = if cfg!(feature = "compact-protobuf") {
        "protobuf"
    } else {
        "json"
    };
    assert_eq!(ObjectCodec::<Pod>::for_type().name(), built_in);
    assert_eq!(
        ObjectCodec::<kclient_core::DynamicObject>::for_type().name(),
        "json"
    );
    let pod = pod(3, 9);
    let codec = ObjectCodec::<Pod>::for_type();
    let bytes = codec.encode(&pod).unwrap();
    assert_eq!(codec.decode(&bytes).unwrap(), pod);
    assert!(bytes.len() < serde_json::to_vec(&pod).unwrap().len());

    // What protobuf cannot tell apart: a struct field Go never leaves out comes back empty.
    let bare = Pod {
        status: None,
        ..pod.clone()
    };
    let decoded = codec.decode(&codec.encode(&bare).unwrap()).unwrap();
    assert_eq!(decoded.status, Some(Default::default()));
}

/// A type whose serde is not symmetric: `note` is written but never read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Lopsided {
    name: String,
    #[serde(skip_deserializing)]
    note: String,
}

#[test]
fn a_type_that_does_not_round_trip_is_kept_decoded() {
    let store =
        ThreadSafeStore::with_representation(Indexers::new(), CacheRepresentation::compact());
    let obj = Arc::new(Lopsided {
        name: "a".into(),
        note: "kept".into(),
    });
    store.add("a", Arc::clone(&obj)).unwrap();
    store
        .add(
            "b",
            Arc::new(Lopsided {
                name: "b".into(),
                note: "also".into(),
            }),
        )
        .unwrap();
    // The object itself, with the field a decode would have lost.
    assert!(Arc::ptr_eq(&store.get("a").unwrap(), &obj));
    assert_eq!(store.get("b").unwrap().note, "also");
}

/// JSON, except that objects named `poison` fail to encode and bytes holding `rotten` fail
/// to decode.
fn picky_codec() -> ObjectCodec<Pod> {
    ObjectCodec::new(
        "picky",
        |pod: &Pod| {
            if pod.name_any() == "poison" {
                return Err("cannot encode poison".into());
            }
            Ok(serde_json::to_vec(pod)?)
        },
        |bytes: &[u8]| {
            if bytes.windows(6).any(|w| w == b"rotten") {
                return Err("cannot decode rotten".into());
            }
            Ok(serde_json::from_slice(bytes)?)
        },
    )
}

fn named(name: &str, node: &str) -> Arc<Pod> {
    let mut pod = Pod {
        status: Some(Default::default()),
        ..Pod::default()
    };
    pod.metadata.namespace = Some("ns".into());
    pod.metadata.name = Some(name.into());
    pod.spec = Some(PodSpec {
        node_name: Some(node.into()),
        ..PodSpec::default()
    });
    Arc::new(pod)
}

#[test]
fn codec_failures_lose_no_object_and_leave_no_stale_index_entry() {
    let store = ThreadSafeStore::with_representation(
        indexers(),
        CacheRepresentation::Compact {
            codec: picky_codec(),
            recently_decoded: 0,
        },
    );
    store.add("ns/fine", named("fine", "n1")).unwrap();
    // An object the codec cannot encode is kept decoded.
    let poison = named("poison", "n1");
    store.add("ns/poison", Arc::clone(&poison)).unwrap();
    assert!(Arc::ptr_eq(&store.get("ns/poison").unwrap(), &poison));
    assert_eq!(store.by_index(BY_NODE, "n1").unwrap().len(), 2);

    // An object whose bytes do not decode reads as absent (logged), never as a panic...
    store.add("ns/rotten", named("rotten", "n2")).unwrap();
    assert!(store.get("ns/rotten").is_none());
    assert!(store.by_index(BY_NODE, "n2").unwrap().is_empty());
    assert_eq!(store.index_keys(BY_NODE, "n2").unwrap(), ["ns/rotten"]);
    // ...and replacing or deleting it still clears its index entries, although its old
    // values cannot be computed.
    store.add("ns/rotten", named("fine-again", "n3")).unwrap();
    assert!(store.index_keys(BY_NODE, "n2").unwrap().is_empty());
    assert_eq!(store.index_keys(BY_NODE, "n3").unwrap(), ["ns/rotten"]);
    store.add("ns/rotten2", named("rotten", "n4")).unwrap();
    assert_eq!(store.delete("ns/rotten2").unwrap(), None);
    assert!(store
        .list_index_func_values(BY_NODE)
        .iter()
        .all(|v| v != "n4"));
    assert_eq!(store.len(), 3);
}

#[derive(Clone, Default)]
struct Source(FakeControllerSource<Pod>);

impl ListerWatcherFor<Pod> for Source {
    type ListerWatcher = FakeControllerSource<Pod>;

    fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
        self.0.clone()
    }
}

impl ListerWatcherFor<ConfigMap> for Source {
    type ListerWatcher = FakeControllerSource<ConfigMap>;

    fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
        FakeControllerSource::new()
    }
}

#[tokio::test(start_paused = true)]
async fn a_compact_informer_hands_decoded_objects_to_handlers_and_listers() {
    let source = Source::default();
    source.0.add((*named("web", "n1")).clone());
    let factory = SharedInformerFactory::builder(source.clone())
        .compact_cache()
        .representation::<ConfigMap>(CacheRepresentation::Decoded)
        .build();
    let informer = factory.informer::<Pod>();
    assert!(informer.get_indexer().thread_safe_store().is_compact());
    assert!(!factory
        .informer::<ConfigMap>()
        .get_indexer()
        .thread_safe_store()
        .is_compact());

    let seen = Arc::new(Mutex::new(Vec::new()));
    let (adds, updates, deletes) = (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |p: &Arc<Pod>, _| adds.lock().push(format!("add {}", node(p))))
                .update_func(move |old, new| {
                    updates
                        .lock()
                        .push(format!("update {} -> {}", node(old), node(new)))
                })
                .delete_func(move |d| {
                    deletes.lock().push(format!(
                        "delete {}",
                        d.last_known().map_or("?".into(), |p| node(p))
                    ))
                }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());

    source.0.modify((*named("web", "n2")).clone());
    source.0.delete((*named("web", "n2")).clone());
    source.0.add((*named("db", "n3")).clone());
    let lister = factory.lister::<Pod>();
    for _ in 0..1000 {
        if seen.lock().len() == 4 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        *seen.lock(),
        ["add n1", "update n1 -> n2", "delete n2", "add n3"]
    );
    assert_eq!(node(&lister.namespaced("ns").get("db").unwrap()), "n3");
    assert!(lister.namespaced("ns").get("web").is_err());
    factory.shutdown().await;
}

/// JSON for Pods, counting its encodes and its decodes.
fn counting_json(
    encodes: &Arc<std::sync::atomic::AtomicUsize>,
    decodes: &Arc<std::sync::atomic::AtomicUsize>,
) -> ObjectCodec<Pod> {
    let json = ObjectCodec::<Pod>::json();
    let decode = json.clone();
    let (encodes, decodes) = (Arc::clone(encodes), Arc::clone(decodes));
    ObjectCodec::new(
        "counting-json",
        move |pod: &Pod| {
            encodes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            json.encode(pod)
        },
        move |bytes: &[u8]| {
            decodes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            decode.decode(bytes)
        },
    )
}

/// A compact informer's sync decodes a listed object only to tell handlers, once for all of
/// them: the index values are computed when the object is encoded, as its page arrives, so
/// storing the list decodes nothing but the store's one round-trip check.
#[tokio::test(start_paused = true)]
async fn a_compact_sync_decodes_only_for_handlers() {
    let source = Source::default();
    for i in 0..20 {
        source
            .0
            .add((*named(&format!("p{i}"), &format!("n{}", i % 4))).clone());
    }
    let decodes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting = counting_json(&Arc::default(), &decodes);
    for handlers in [0, 1, 3] {
        decodes.store(0, std::sync::atomic::Ordering::Relaxed);
        let factory = SharedInformerFactory::builder(source.clone())
            .representation::<Pod>(CacheRepresentation::Compact {
                codec: counting.clone(),
                recently_decoded: 0,
            })
            .build();
        let informer = factory.informer::<Pod>();
        informer
            .add_indexers(Indexers::new().with(BY_NODE, by_node))
            .unwrap();
        let registrations: Vec<_> = (0..handlers)
            .map(|_| {
                informer
                    .add_event_handler(ResourceEventHandlerFuncs::new())
                    .unwrap()
            })
            .collect();
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
        // The handlers are told of the listed objects on their own lanes, after the sync.
        let synced: Vec<_> = registrations.iter().map(|r| r.synced()).collect();
        assert!(kclient_cache::wait::wait_for_cache_sync(&cancel, &synced).await);
        assert_eq!(
            decodes.load(std::sync::atomic::Ordering::Relaxed),
            1 + 20 * handlers.min(1),
            "{handlers} handler(s)"
        );
        let store = informer.get_indexer();
        assert_eq!(store.by_index(BY_NODE, "n1").unwrap().len(), 5);
        assert_eq!(store.by_index("namespace", "ns").unwrap().len(), 20);
        factory.shutdown().await;
    }
}

fn node(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

/// What a notification says, comparably.
fn told(n: &Notification<Pod>) -> String {
    match n {
        Notification::Add {
            obj,
            is_in_initial_list,
        } => format!("add {} initial={is_in_initial_list}", describe(obj)),
        Notification::Update { old, new } => {
            format!("update {} -> {}", describe(old), describe(new))
        }
        Notification::Delete(DeletedObject::Object(obj)) => format!("delete {}", describe(obj)),
        Notification::Delete(DeletedObject::Tombstone(t)) => {
            format!("tombstone {} {:?}", t.key, t.obj.as_deref().map(describe))
        }
    }
}

fn describe(pod: &Pod) -> String {
    format!(
        "{}@{}",
        key(pod),
        pod.resource_version().unwrap_or_default()
    )
}

/// Processes the same lists as decoded and as encoded `ReplacedAll` deltas, into a decoded
/// and a compact indexer: the notifications and the caches agree.
#[test]
fn an_encoded_list_is_processed_as_a_decoded_one() {
    let lists: Vec<Vec<Pod>> = vec![
        (0..6).map(|i| pod(i, 1)).collect(),
        // A relist: some changed, one gone, one new, one listed twice (the last one wins).
        vec![
            pod(0, 1),
            pod(1, 2),
            pod(3, 2),
            pod(6, 2),
            pod(2, 3),
            pod(1, 4),
        ],
        Vec::new(),
    ];
    let new_indexer = |representation| {
        Indexer::from_store(
            KeyFunc::deletion_handling_meta_namespace(),
            ThreadSafeStore::with_representation(indexers(), representation),
        )
    };
    let decoded = new_indexer(CacheRepresentation::Decoded);
    let codec = ObjectCodec::<Pod>::for_type();
    let compact = new_indexer(CacheRepresentation::Compact {
        codec: codec.clone(),
        recently_decoded: 0,
    });
    for (round, list) in lists.into_iter().enumerate() {
        let objects: Vec<Arc<Pod>> = list.iter().cloned().map(Arc::new).collect();
        let mut encoded = EncodedList::new(codec.clone());
        for pod in &list {
            encoded.push(key(pod), pod).unwrap();
        }
        let plain = Delta::ReplacedAll(ReplacedAllInfo {
            objects,
            encoded: None,
            resource_version: round.to_string(),
        });
        let held = Delta::ReplacedAll(ReplacedAllInfo {
            objects: Vec::new(),
            encoded: Some(encoded),
            resource_version: round.to_string(),
        });
        let (mut a, mut b) = (Vec::new(), Vec::new());
        process_deltas(&decoded, &[plain], round == 0, |n| a.push(told(&n))).unwrap();
        process_deltas(&compact, &[held], round == 0, |n| b.push(told(&n))).unwrap();
        // Tombstones come in the cache's key order, which is a hash map's (as in client-go).
        let in_order = |mut told: Vec<String>| {
            let tombstones = told
                .iter()
                .take_while(|t| t.starts_with("tombstone"))
                .count();
            told[..tombstones].sort();
            told
        };
        assert_eq!(in_order(a), in_order(b), "round {round}");
        assert_eq!(
            snapshot(decoded.thread_safe_store()),
            snapshot(compact.thread_safe_store()),
            "round {round}"
        );
    }
}

/// A compact store keeps a list's bytes when they are in its own encoding (no second
/// encode) and re-encodes them otherwise; an object that does not decode fails the replace
/// and changes nothing.
#[test]
fn replace_encoded_adopts_the_listed_bytes_and_fails_whole() {
    let encodes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting = counting_json(&encodes, &Arc::default());
    let store = ThreadSafeStore::with_representation(
        indexers(),
        CacheRepresentation::Compact {
            codec: counting.clone(),
            recently_decoded: 0,
        },
    );
    let mut list = EncodedList::new(counting.clone());
    for i in 0..5 {
        list.push(format!("ns-{}/pod-{i}", i % 3), &pod(i, 1))
            .unwrap();
    }
    let before = encodes.load(std::sync::atomic::Ordering::Relaxed);
    store.replace_encoded(&list).unwrap();
    // One encode: the round-trip check of the store's first object.
    assert_eq!(
        encodes.load(std::sync::atomic::Ordering::Relaxed) - before,
        1
    );
    assert_eq!(store.len(), 5);
    assert_eq!(*store.get("ns-1/pod-1").unwrap(), pod(1, 1));

    // Another codec's bytes are decoded and encoded again in the store's own.
    let mut other = EncodedList::new(ObjectCodec::<Pod>::protobuf().unwrap());
    other.push("ns-0/pod-9".into(), &pod(9, 1)).unwrap();
    let before = encodes.load(std::sync::atomic::Ordering::Relaxed);
    store.replace_encoded(&other).unwrap();
    assert_eq!(
        encodes.load(std::sync::atomic::Ordering::Relaxed) - before,
        1
    );
    assert_eq!(store.list_keys(), ["ns-0/pod-9"]);

    // Bytes that do not decode: an error, and the store as it was.
    let broken = ObjectCodec::<Pod>::new(
        "broken",
        |_| Ok(b"{".to_vec()),
        |bytes| Ok(serde_json::from_slice(bytes)?),
    );
    let mut list = EncodedList::new(broken);
    list.push("ns-0/pod-1".into(), &pod(1, 1)).unwrap();
    assert!(matches!(
        store.replace_encoded(&list),
        Err(StoreError::Codec(_))
    ));
    assert_eq!(store.list_keys(), ["ns-0/pod-9"]);
}

/// A DeltaFIFO cannot keep a list encoded: it decodes it and replaces as usual.
#[test]
fn a_delta_fifo_decodes_an_encoded_list() {
    let fifo = DeltaFifo::<Pod>::new(DeltaFifoOptions::default());
    let mut list = EncodedList::new(ObjectCodec::for_type());
    for i in 0..3 {
        list.push(key(&pod(i, 1)), &pod(i, 1)).unwrap();
    }
    Store::replace_encoded(&fifo, list, "7").unwrap();
    let mut keys = Store::list_keys(&fifo);
    keys.sort();
    assert_eq!(keys, ["ns-0/pod-0", "ns-1/pod-1", "ns-2/pod-2"]);
}
