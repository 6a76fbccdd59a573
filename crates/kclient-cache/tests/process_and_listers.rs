//! `process_deltas` (what the informer does with popped deltas) and the listers: client-go's
//! `processDeltas` rules and `listers_test.go`, with the seed-semantics §3 behaviours by name.

use crate::common;

use std::sync::Arc;

use common::{obj, pod};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kclient_cache::{
    list_all, list_all_by_namespace, process_deltas, Delta, Indexer, Indexers, KeyFunc, Lister,
    Notification, ReplacedAllInfo,
};
use kclient_core::{
    labels::Selector, ApiStatus, DeletedFinalStateUnknown, DeletedObject, DynamicObject, Resource,
};

fn indexer<K: Resource + 'static>() -> Indexer<K> {
    Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::namespace(),
    )
}

fn run(indexer: &Indexer<ConfigMap>, deltas: &[Delta<ConfigMap>]) -> Vec<String> {
    let mut events = Vec::new();
    process_deltas(indexer, deltas, false, |n| events.push(format!("{n:?}"))).unwrap();
    events
}

/// seed-semantics §3.11: add versus update is decided by the indexer, not the delta type.
#[test]
fn add_versus_update_is_decided_by_the_indexer() {
    let idx = indexer();
    // A Sync for an unknown object is an add; an Added for a cached one an update.
    assert_eq!(
        run(&idx, &[Delta::Sync(obj("a", 1))]),
        ["Add { is_in_initial_list: false }"]
    );
    assert_eq!(
        run(&idx, &[Delta::Added(obj("a", 2))]),
        ["Update { same: false }"]
    );
    assert_eq!(
        run(&idx, &[Delta::Replaced(obj("b", 1))]),
        ["Add { is_in_initial_list: false }"]
    );
    assert_eq!(common::val(&idx.get_by_key("a").unwrap()), 2);
}

/// seed-semantics §3.11: the indexer is updated before handlers are told.
#[test]
fn indexer_is_updated_before_handlers_are_notified() {
    let idx = indexer::<ConfigMap>();
    let a = obj("a", 1);
    process_deltas(&idx, &[Delta::Added(a.clone())], true, |n| {
        let Notification::Add {
            obj,
            is_in_initial_list,
        } = n
        else {
            panic!("expected an add");
        };
        assert!(is_in_initial_list);
        assert!(
            Arc::ptr_eq(&idx.get_by_key("a").unwrap(), &obj),
            "already cached"
        );
    })
    .unwrap();
    process_deltas(
        &idx,
        &[Delta::Deleted(DeletedObject::Object(a.clone()))],
        false,
        |n| {
            assert!(matches!(n, Notification::Delete(DeletedObject::Object(_))));
            assert!(idx.get_by_key("a").is_none(), "already gone");
        },
    )
    .unwrap();
}

/// seed-semantics §3.12: a deletion may be a tombstone; the handler gets it as it is.
#[test]
fn on_delete_may_receive_a_tombstone() {
    let idx = indexer::<ConfigMap>();
    idx.add(obj("a", 1)).unwrap();
    let tombstone = DeletedFinalStateUnknown {
        key: "a".into(),
        obj: Some(obj("a", 1)),
    };
    let mut got = None;
    process_deltas(&idx, &[Delta::Deleted(tombstone.into())], false, |n| {
        got = Some(n)
    })
    .unwrap();
    match got {
        Some(Notification::Delete(DeletedObject::Tombstone(t))) => assert_eq!(t.key, "a"),
        other => panic!("expected a tombstone, got {other:?}"),
    }
    assert!(idx.is_empty());
}

/// A whole relist: tombstones for the vanished (with the cached object), then adds and
/// updates in list order; the indexer holds exactly the list.
#[test]
fn replaced_all_makes_tombstones_then_adds_and_updates() {
    let idx = indexer::<ConfigMap>();
    let cached_b = obj("b", 1);
    idx.add(obj("a", 1)).unwrap();
    idx.add(cached_b.clone()).unwrap();
    let mut deleted_obj = None;
    let mut events = Vec::new();
    let info = ReplacedAllInfo {
        encoded: None,
        objects: vec![obj("c", 1), obj("a", 2)],
        resource_version: "9".into(),
    };
    process_deltas(&idx, &[Delta::ReplacedAll(info)], true, |n| {
        if let Notification::Delete(DeletedObject::Tombstone(t)) = &n {
            deleted_obj = t.obj.clone();
        }
        events.push(format!("{n:?}"));
    })
    .unwrap();
    assert_eq!(
        events,
        [
            "Delete(DeletedFinalStateUnknown \"b\")",
            "Add { is_in_initial_list: true }",
            "Update { same: false }",
        ]
    );
    assert!(Arc::ptr_eq(&deleted_obj.unwrap(), &cached_b));
    let mut keys = idx.list_keys();
    keys.sort();
    assert_eq!(keys, ["a", "c"]);
}

/// A whole resync replays every cached object as an update to itself.
#[test]
fn sync_all_replays_every_cached_object() {
    let idx = indexer::<ConfigMap>();
    idx.add(obj("a", 1)).unwrap();
    idx.add(obj("b", 1)).unwrap();
    assert_eq!(
        run(&idx, &[Delta::SyncAll]),
        ["Update { same: true }", "Update { same: true }"]
    );
}

/// Store errors stop processing with a typed error.
#[test]
fn store_errors_stop_processing() {
    let picky = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::new().with("fails", |_: &ConfigMap| {
            Err(kclient_cache::IndexFuncError::new("no"))
        }),
    );
    let err = process_deltas(&picky, &[Delta::Added(obj("a", 1))], false, |_| {
        panic!("no notification")
    })
    .unwrap_err();
    assert!(err.to_string().contains("on index \"fails\""), "{err}");
}

/// client-go's `TestListAll`: an empty selector lists everything; a selector filters.
#[test]
fn list_all_with_and_without_a_selector() {
    let idx = indexer::<Pod>();
    idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
    idx.add(pod("ns", "b", &[("app", "db")])).unwrap();
    idx.add(pod("other", "c", &[])).unwrap();
    let mut all = 0;
    list_all(&idx, &Selector::everything(), |_| all += 1);
    assert_eq!(all, 3);
    let mut web = Vec::new();
    list_all(&idx, &"app=web".parse().unwrap(), |p| web.push(p));
    assert_eq!(web.len(), 1);
    let mut ns = 0;
    list_all_by_namespace(&idx, "ns", &Selector::everything(), |_| ns += 1);
    assert_eq!(ns, 2);
    let mut everywhere = 0;
    list_all_by_namespace(&idx, "", &Selector::everything(), |_| everywhere += 1);
    assert_eq!(everywhere, 3);
    // Selectors that match nothing.
    let mut none = 0;
    list_all(&idx, &Selector::nothing(), |_| none += 1);
    assert_eq!(none, 0);
}

/// Without a namespace index, a namespaced list scans and filters.
#[test]
fn list_all_by_namespace_without_the_index_scans() {
    let idx = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::new());
    idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
    idx.add(pod("other", "b", &[("app", "web")])).unwrap();
    let mut found = Vec::new();
    list_all_by_namespace(&idx, "ns", &"app=web".parse().unwrap(), |p| found.push(p));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].metadata.name.as_deref(), Some("a"));
}

/// A lister's `get` answers NotFound as the API server words it.
#[test]
fn lister_get_returns_not_found_as_the_server_words_it() {
    let pods = Lister::<Pod>::new(indexer());
    let err = pods.namespaced("ns").get("missing").unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.message(), "pods \"missing\" not found");

    let namespaces = Lister::<Namespace>::new(indexer());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("kube-system".into());
    namespaces.indexer().add(Arc::new(ns)).unwrap();
    assert!(namespaces.get("kube-system").is_ok());
    let err = namespaces.get("nope").unwrap_err();
    assert_eq!(err.message(), "namespaces \"nope\" not found");
}

/// Listers over dynamic objects take their resource at run time.
#[test]
fn lister_over_dynamic_objects() {
    let ar = kclient_core::ApiResource::from_gvk_with_plural(
        &kclient_core::GroupVersionKind::new("example.com", "v1", "Widget"),
        "widgets",
        true,
    );
    let idx = indexer::<DynamicObject>();
    let mut w = DynamicObject::new("w1", &ar);
    w.metadata.namespace = Some("ns".into());
    idx.add(Arc::new(w)).unwrap();
    let widgets = Lister::new_with(idx, &ar);
    assert!(widgets.namespaced("ns").get("w1").is_ok());
    let err = widgets.namespaced("ns").get("w2").unwrap_err();
    assert_eq!(err.message(), "widgets.example.com \"w2\" not found");
    assert_eq!(
        widgets
            .by_index(kclient_cache::NAMESPACE_INDEX, "ns")
            .unwrap()
            .len(),
        1
    );
}

/// Namespaced lists use the namespace index and match selectors in place.
#[test]
fn namespaced_lister_lists_through_the_index() {
    let pods = Lister::<Pod>::new(indexer());
    for (ns, name, app) in [("a", "1", "web"), ("a", "2", "db"), ("b", "3", "web")] {
        pods.indexer().add(pod(ns, name, &[("app", app)])).unwrap();
    }
    let web: Selector = "app=web".parse().unwrap();
    assert_eq!(pods.list(&web).len(), 2);
    assert_eq!(pods.namespaced("a").list(&web).len(), 1);
    assert_eq!(pods.namespaced("a").list(&Selector::everything()).len(), 2);
    assert_eq!(pods.namespaced("a").namespace(), "a");
    assert!(pods
        .namespaced("zzz")
        .list(&Selector::everything())
        .is_empty());
}
