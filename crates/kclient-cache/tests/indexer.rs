//! The store, the thread-safe store and the indexer: the cases of client-go's
//! `store_test.go`, `index_test.go` and `thread_safe_store_test.go`, written anew against
//! this API, and the store and index behaviours of seed-semantics §3 by name.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{obj, pod, val};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kclient_cache::{
    new_store, IndexError, IndexFuncError, Indexer, Indexers, KeyFunc, ThreadSafeStore,
    NAMESPACE_INDEX,
};
use kclient_core::DeletedFinalStateUnknown;

/// The `users` annotation, split on commas (client-go's `testUsersIndexFunc`).
fn users(pod: &Pod) -> Result<Vec<String>, IndexFuncError> {
    Ok(pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("users"))
        .map(|u| u.split(',').map(str::to_owned).collect())
        .unwrap_or_default())
}

fn user_pod(name: &str, users: &str) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.annotations = Some([("users".to_string(), users.to_string())].into());
    Arc::new(pod)
}

fn names(objects: &[Arc<Pod>]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// client-go's `TestCache` (`doTestStore`): add, update, delete, get, list, replace.
#[test]
fn store_add_update_delete_list_replace() {
    let store = new_store(KeyFunc::<ConfigMap>::meta_namespace());
    store.add(obj("foo", 1)).unwrap();
    let got = store.get(&obj("foo", 0)).unwrap().unwrap();
    assert_eq!(val(&got), 1);
    store.update(obj("foo", 2)).unwrap();
    assert_eq!(val(&store.get_by_key("foo").unwrap()), 2);
    store.delete(obj("foo", 0)).unwrap();
    assert!(store.get_by_key("foo").is_none());

    for (name, v) in [("a", 1), ("b", 2), ("c", 3)] {
        store.add(obj(name, v)).unwrap();
    }
    let listed: BTreeSet<i64> = store.list().iter().map(|o| val(o)).collect();
    assert_eq!(listed, [1, 2, 3].into());
    let keys: BTreeSet<String> = store.list_keys().into_iter().collect();
    assert_eq!(keys, set(&["a", "b", "c"]));

    store
        .replace(vec![obj("foo", 10), obj("bar", 20)], "0")
        .unwrap();
    let keys: BTreeSet<String> = store.list_keys().into_iter().collect();
    assert_eq!(keys, set(&["foo", "bar"]));
    assert!(store.get_by_key("a").is_none());
    store.resync().unwrap();
    assert_eq!(store.len(), 2);

    // Deleting an absent key is no error.
    store.delete(obj("absent", 0)).unwrap();
}

/// seed-semantics §3.16: what a store hands out is the very `Arc` that was stored.
#[test]
fn stored_objects_are_shared_arcs_never_copies() {
    let indexer = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    let p = pod("ns", "a", &[]);
    indexer.add(p.clone()).unwrap();
    assert!(Arc::ptr_eq(&indexer.get_by_key("ns/a").unwrap(), &p));
    assert!(Arc::ptr_eq(&indexer.list()[0], &p));
    assert!(Arc::ptr_eq(
        &indexer.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
        &p
    ));
    assert!(Arc::ptr_eq(
        &indexer.index(NAMESPACE_INDEX, &p).unwrap()[0],
        &p
    ));
    // The store holds two references (its map of objects and the namespace index's entry),
    // the test the third, and nothing was cloned.
    assert_eq!(Arc::strong_count(&p), 3);
}

/// Index entries carry the object itself (so a lookup reads it without a lookup by key): an
/// update whose index values do not change must still replace the object they carry, and the
/// old object must be released by every index.
#[test]
fn an_update_that_keeps_its_index_values_is_what_index_lookups_return() {
    let indexers = Indexers::<Pod>::namespace().with("by-label", |p: &Pod| {
        Ok(p.metadata
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect())
    });
    let indexer = Indexer::new(KeyFunc::meta_namespace(), indexers);
    let old = pod("ns", "a", &[("app", "web"), ("tier", "front")]);
    indexer.add(old.clone()).unwrap();
    let mut changed = (*old).clone();
    changed.metadata.resource_version = Some("2".into());
    // One value kept, one dropped, one added.
    changed.metadata.labels = Some(
        [("app", "web"), ("zone", "b")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    );
    let new = Arc::new(changed);
    indexer.update(new.clone()).unwrap();
    for (index, value) in [
        (NAMESPACE_INDEX, "ns"),
        ("by-label", "app=web"),
        ("by-label", "zone=b"),
    ] {
        let found = indexer.by_index(index, value).unwrap();
        assert_eq!(found.len(), 1, "{index}={value}");
        assert!(Arc::ptr_eq(&found[0], &new), "{index}={value}");
        assert!(Arc::ptr_eq(&indexer.index(index, &new).unwrap()[0], &new));
    }
    assert!(indexer
        .by_index("by-label", "tier=front")
        .unwrap()
        .is_empty());
    assert_eq!(
        Arc::strong_count(&old),
        1,
        "the old object is released everywhere"
    );
    // The map, the test and three index entries (namespace, app=web, zone=b) hold the new one.
    assert_eq!(Arc::strong_count(&new), 1 + 1 + 3);
    indexer.delete(new.clone()).unwrap();
    assert_eq!(Arc::strong_count(&new), 1);
}

/// client-go's `TestIndex` and `TestMultiIndexKeys`: several values per object, lookup by
/// each, deletion, update that changes values.
#[test]
fn multi_value_index_by_index_and_updates() {
    let index = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("byUser", users),
    );
    let one = user_pod("one", "ernie,bert");
    let two = user_pod("two", "bert,oscar");
    let tre = user_pod("tre", "ernie,elmo");
    for p in [&one, &two, &tre] {
        index.add(p.clone()).unwrap();
    }
    for (user, expected) in [
        ("ernie", &["one", "tre"][..]),
        ("bert", &["one", "two"]),
        ("elmo", &["tre"]),
        ("oscar", &["two"]),
        ("elmo1", &[]),
    ] {
        assert_eq!(
            names(&index.by_index("byUser", user).unwrap()),
            set(expected),
            "{user}"
        );
    }

    index.delete(tre).unwrap();
    assert_eq!(
        names(&index.by_index("byUser", "ernie").unwrap()),
        set(&["one"])
    );
    assert!(index.by_index("byUser", "elmo").unwrap().is_empty());

    // An update whose values changed moves the object between values.
    index.update(user_pod("two", "oscar")).unwrap();
    assert_eq!(
        names(&index.by_index("byUser", "bert").unwrap()),
        set(&["one"])
    );
    assert_eq!(
        names(&index.by_index("byUser", "oscar").unwrap()),
        set(&["two"])
    );
}

/// seed-semantics §3.15: `index` over several values returns each object once.
#[test]
fn index_with_multiple_values_dedupes() {
    let index = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("byUser", users),
    );
    index.add(user_pod("one", "ernie,bert")).unwrap();
    index.add(user_pod("two", "bert,oscar")).unwrap();
    let found = index
        .index("byUser", &user_pod("probe", "ernie,bert,oscar"))
        .unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(names(&found), set(&["one", "two"]));
    let single = index.index("byUser", &user_pod("probe", "bert")).unwrap();
    assert_eq!(names(&single), set(&["one", "two"]));
    assert!(index
        .index("byUser", &user_pod("probe", "nobody"))
        .unwrap()
        .is_empty());
}

/// client-go's `TestGetIndexFuncValues` and seed-semantics §3.15: values whose last object
/// left are gone.
#[test]
fn list_index_func_values_has_no_stale_values() {
    let index = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("testmodes", users),
    );
    index.add(user_pod("one", "foo,bar")).unwrap();
    index.add(user_pod("two", "bar")).unwrap();
    index.add(user_pod("tre", "biz")).unwrap();
    let values: BTreeSet<String> = index
        .list_index_func_values("testmodes")
        .into_iter()
        .collect();
    assert_eq!(values, set(&["foo", "bar", "biz"]));
    index.delete(user_pod("tre", "")).unwrap();
    index.update(user_pod("one", "bar")).unwrap();
    let values: BTreeSet<String> = index
        .list_index_func_values("testmodes")
        .into_iter()
        .collect();
    assert_eq!(values, set(&["bar"]));
}

/// client-go's `TestThreadSafeStoreIndexingFunctionsWithMultipleValues`.
#[test]
fn thread_safe_store_indexing_functions_with_multiple_values() {
    fn split(cm: &ConfigMap) -> Result<Vec<String>, IndexFuncError> {
        let v = cm.data.as_ref().unwrap()["v"].clone();
        Ok(v.split(',').map(str::to_owned).collect())
    }
    fn value(v: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            data: Some([("v".to_string(), v.to_string())].into()),
            ..ConfigMap::default()
        })
    }
    let store = ThreadSafeStore::new(Indexers::new().with("testIndexer", split));
    let keys = |value: &str| store.index_keys("testIndexer", value).unwrap();

    store.add("key1", value("foo")).unwrap();
    store.add("key2", value("bar")).unwrap();
    assert_eq!(keys("foo"), ["key1"]);
    assert_eq!(keys("bar"), ["key2"]);

    store.update("key2", value("foo,bar")).unwrap();
    assert_eq!(keys("foo"), ["key1", "key2"]);
    assert_eq!(keys("bar"), ["key2"]);

    store.update("key1", value("foo,bar")).unwrap();
    assert_eq!(keys("foo"), ["key1", "key2"]);
    assert_eq!(keys("bar"), ["key1", "key2"]);

    store.add("key3", value("foo,bar,baz")).unwrap();
    assert_eq!(keys("foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys("bar"), ["key1", "key2", "key3"]);
    assert_eq!(keys("baz"), ["key3"]);

    store.update("key1", value("foo")).unwrap();
    assert_eq!(keys("foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys("bar"), ["key2", "key3"]);

    store.update("key2", value("bar")).unwrap();
    assert_eq!(keys("foo"), ["key1", "key3"]);
    assert_eq!(keys("bar"), ["key2", "key3"]);

    store.delete("key1").unwrap();
    assert_eq!(keys("foo"), ["key3"]);
    store.delete("key3").unwrap();
    assert!(keys("foo").is_empty());
    assert_eq!(keys("bar"), ["key2"]);
    assert!(keys("baz").is_empty());
}

/// seed-semantics §3.15 and client-go's `TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex`
/// / `...AddKeepsNonEmptySetPostDeleteFromIndex` (client-go issue #84959).
#[test]
fn empty_index_sets_are_removed() {
    let store = ThreadSafeStore::new(Indexers::<Pod>::namespace());
    store.add("ns/a", pod("ns", "a", &[])).unwrap();
    store.add("other/b", pod("other", "b", &[])).unwrap();
    store.delete("ns/a").unwrap();
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), ["other"]);
    // A set that still has a key stays.
    store.add("other/c", pod("other", "c", &[])).unwrap();
    store.delete("other/b").unwrap();
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "other").unwrap(),
        ["other/c"]
    );
}

/// seed-semantics §3.15: an unknown index is an error for `by_index`, `index` and
/// `index_keys`, and an empty answer for `list_index_func_values`.
#[test]
fn unknown_index_errors_but_list_index_func_values_is_empty() {
    let index = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    let err = index.by_index("nope", "x").unwrap_err();
    assert_eq!(err, IndexError::NoSuchIndex("nope".into()));
    assert_eq!(err.to_string(), "Index with name nope does not exist");
    assert!(index.index_keys("nope", "x").is_err());
    assert!(index.index("nope", &Pod::default()).is_err());
    assert!(index.list_index_func_values("nope").is_empty());
    assert!(index.by_index(NAMESPACE_INDEX, "empty").unwrap().is_empty());
}

/// seed-semantics §3.15: a failing index function is a typed error (client-go panics), and
/// the store is left as it was.
#[test]
fn index_func_error_is_a_typed_error_not_a_panic() {
    let index = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("picky", |p: &Pod| {
            if p.metadata.name.as_deref() == Some("bad") {
                Err(IndexFuncError::new("no index for bad"))
            } else {
                Ok(vec!["ok".into()])
            }
        }),
    );
    index.add(pod("", "good", &[])).unwrap();
    let err = index.add(pod("", "bad", &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unable to calculate an index entry for key \"bad\" on index \"picky\": no index for bad"
    );
    assert!(index.get_by_key("bad").is_none(), "nothing was stored");
    let err = index.replace(vec![pod("", "x", &[]), pod("", "bad", &[])], "1");
    assert!(err.is_err());
    assert_eq!(
        index.list_keys(),
        ["good"],
        "a failed replace changes nothing"
    );
    assert_eq!(index.index_keys("picky", "ok").unwrap(), ["good"]);
}

/// seed-semantics §3.15: a replace rebuilds every index.
#[test]
fn replace_rebuilds_all_indices() {
    let index = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    index.add(pod("old", "a", &[])).unwrap();
    index.add(pod("old", "b", &[])).unwrap();
    index
        .replace(vec![pod("new", "a", &[]), pod("new", "c", &[])], "5")
        .unwrap();
    assert!(index.by_index(NAMESPACE_INDEX, "old").unwrap().is_empty());
    assert_eq!(
        index.index_keys(NAMESPACE_INDEX, "new").unwrap(),
        ["new/a", "new/c"]
    );
    assert_eq!(index.list_index_func_values(NAMESPACE_INDEX), ["new"]);
    // The last of a repeated key wins.
    index
        .replace(
            vec![pod("x", "a", &[("v", "1")]), pod("x", "a", &[("v", "2")])],
            "6",
        )
        .unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(
        index
            .get_by_key("x/a")
            .unwrap()
            .metadata
            .labels
            .as_ref()
            .unwrap()["v"],
        "2"
    );
}

/// seed-semantics §3.15 with client-go ≥ 1.30: indices can be added to a populated store
/// (they are built over what is there); a name conflict is an error.
#[test]
fn add_indexers_builds_new_indices_and_refuses_conflicts() {
    let index = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    index.add(user_pod("one", "ernie,bert")).unwrap();
    index.add(user_pod("two", "bert")).unwrap();
    index
        .add_indexers(Indexers::new().with("byUser", users))
        .unwrap();
    assert_eq!(
        names(&index.by_index("byUser", "bert").unwrap()),
        set(&["one", "two"])
    );
    assert_eq!(
        index.get_indexers().names().collect::<Vec<_>>(),
        ["byUser", NAMESPACE_INDEX]
    );
    // The new index is maintained from now on.
    index.add(user_pod("tre", "bert")).unwrap();
    assert_eq!(index.by_index("byUser", "bert").unwrap().len(), 3);

    let err = index
        .add_indexers(Indexers::new().with("byUser", users).with("fresh", users))
        .unwrap_err();
    assert_eq!(err, IndexError::Conflict(vec!["byUser".into()]));
    assert!(
        !index.get_indexers().contains("fresh"),
        "nothing of a refused set is added"
    );

    // On an empty store any time.
    let empty = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::new());
    empty.add_indexers(Indexers::namespace()).unwrap();
    empty.add(pod("ns", "a", &[])).unwrap();
    assert_eq!(empty.index_keys(NAMESPACE_INDEX, "ns").unwrap(), ["ns/a"]);
}

/// seed-semantics §3.12: the informer's indexer keys tombstones by their recorded key.
#[test]
fn deletion_handling_indexer_deletes_by_tombstone() {
    let index = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::<Pod>::namespace(),
    );
    index.add(pod("ns", "a", &[])).unwrap();
    index
        .delete(DeletedFinalStateUnknown {
            key: "ns/a".to_string(),
            obj: None,
        })
        .unwrap();
    assert!(index.is_empty());
    assert!(index.list_index_func_values(NAMESPACE_INDEX).is_empty());

    // With the plain key function a tombstone has no key: a typed error.
    let plain = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::new());
    let err = plain
        .delete(DeletedFinalStateUnknown::<Pod> {
            key: "ns/a".to_string(),
            obj: None,
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("does not accept DeletedFinalStateUnknown"),
        "{err}"
    );
}

/// client-go's `TestKeyError` and `TestCacheWithTransformer`-adjacent: key errors are typed.
#[test]
fn key_errors_are_typed() {
    let index = Indexer::new(
        KeyFunc::new(|p: &Pod| {
            p.metadata
                .uid
                .clone()
                .ok_or_else(|| kclient_cache::KeyFuncError::new(p, "no uid"))
        }),
        Indexers::new(),
    );
    let err = index.add(pod("ns", "a", &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "couldn't create key for object ns/a: no uid"
    );
    assert!(index.get(&pod("ns", "a", &[])).is_err());
    assert!(index.is_empty());
}

#[test]
fn namespace_index_puts_cluster_scoped_objects_under_the_empty_value() {
    let index = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    index.add(pod("", "cluster-wide", &[])).unwrap();
    assert_eq!(
        index.index_keys(NAMESPACE_INDEX, "").unwrap(),
        ["cluster-wide"]
    );
}

#[test]
fn debug_output_names_the_shape_not_the_content() {
    let index = Indexer::new(KeyFunc::meta_namespace(), Indexers::<Pod>::namespace());
    index.add(pod("ns", "secret-name", &[])).unwrap();
    let debug = format!("{index:?}");
    assert!(debug.contains("len: 1"), "{debug}");
    assert!(!debug.contains("secret-name"), "{debug}");
}

/// client-go's `NewStore(keyFunc, WithTransformer(f))` (store.go): add, update and replace
/// store the transformed object under the untransformed object's key; a transform error
/// stores nothing; a delete is not transformed.
#[test]
fn a_store_with_a_transformer_stores_transformed_objects() {
    use kclient_cache::{new_store, KeyFunc, StoreError, TransformFunc};

    let cm = |name: &str, v: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = Some([("v".to_owned(), v.to_owned())].into());
        Arc::new(cm)
    };
    let store = new_store(KeyFunc::meta_namespace()).with_transformer(TransformFunc::new(
        |cm: &mut ConfigMap| {
            let v = cm.data.as_ref().map(|d| d["v"].clone()).unwrap_or_default();
            if v == "bad" {
                return Err("refused".into());
            }
            // Renaming shows the key is taken before the transform.
            cm.metadata.name = Some(format!("renamed-{v}"));
            cm.data = None;
            Ok(())
        },
    ));
    store.add(cm("a", "1")).unwrap();
    store.update(cm("b", "2")).unwrap();
    let a = store.get_by_key("a").unwrap();
    assert_eq!(
        (a.metadata.name.as_deref(), &a.data),
        (Some("renamed-1"), &None)
    );
    assert!(matches!(
        store.add(cm("c", "bad")),
        Err(StoreError::Transform { .. })
    ));
    assert_eq!(store.len(), 2);
    store.delete(cm("a", "bad")).unwrap();
    assert_eq!(store.list_keys(), ["b"]);
    store
        .replace(vec![cm("x", "3"), cm("y", "4")], "9")
        .unwrap();
    let mut keys = store.list_keys();
    keys.sort();
    assert_eq!(keys, ["x", "y"]);
    assert_eq!(
        store.get_by_key("y").unwrap().metadata.name.as_deref(),
        Some("renamed-4")
    );
    assert!(store.replace(vec![cm("z", "bad")], "10").is_err());
    assert_eq!(store.len(), 2, "a failed replace changes nothing");
}

/// client-go's `TransactionStore.Transaction`: writes applied in order as one step, each
/// seeing the ones before it; failing writes skipped and reported by position.
#[test]
fn a_transaction_applies_its_writes_in_order_and_reports_the_failed_ones() {
    use kclient_cache::{Indexer, Indexers, KeyFunc, Transaction, NAMESPACE_INDEX};

    let by_value = |cm: &ConfigMap| -> Result<Vec<String>, kclient_cache::IndexFuncError> {
        match cm.data.as_ref().map(|d| d["v"].as_str()) {
            Some("bad") => Err(kclient_cache::IndexFuncError::new("refused")),
            other => Ok(other.map(str::to_owned).into_iter().collect()),
        }
    };
    let store = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::namespace().with("by-value", by_value),
    );
    let cm = |name: &str, v: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.data = Some([("v".to_owned(), v.to_owned())].into());
        Arc::new(cm)
    };
    store.add(cm("gone", "1")).unwrap();
    let err = store
        .transaction([
            Transaction::Add(cm("a", "1")),
            Transaction::Update(cm("a", "2")), // sees the add
            Transaction::Add(cm("b", "bad")),  // its index function fails
            Transaction::Delete(cm("gone", "1").into()),
            Transaction::Add(cm("c", "1")),
            Transaction::Delete(cm("c", "1").into()), // sees the add: c ends absent
        ])
        .unwrap_err();
    assert_eq!(err.successful_indices, [0, 1, 3, 4, 5]);
    assert_eq!((err.total_transactions, err.errors.len()), (6, 1));
    let mut keys = store.list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/a"]);
    assert_eq!(store.index_keys("by-value", "2").unwrap(), ["ns/a"]);
    assert!(store.index_keys("by-value", "1").unwrap().is_empty());
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns").unwrap(), ["ns/a"]);
    assert!(store.transaction([Transaction::Add(cm("d", "3"))]).is_ok());
}

/// A transaction is one step for readers: a reader running beside transactions that change
/// two objects together never sees one changed without the other.
#[test]
fn readers_never_see_half_a_transaction() {
    use kclient_cache::{Indexer, Indexers, KeyFunc, Transaction};

    let by_value = |cm: &ConfigMap| -> Result<Vec<String>, kclient_cache::IndexFuncError> {
        Ok(cm
            .data
            .as_ref()
            .map(|d| d["v"].clone())
            .into_iter()
            .collect())
    };
    let store = Indexer::new(
        KeyFunc::meta_namespace(),
        Indexers::new().with("v", by_value),
    );
    let cm = |name: &str, v: usize| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = Some([("v".to_owned(), v.to_string())].into());
        Arc::new(cm)
    };
    store
        .transaction([Transaction::Add(cm("x", 0)), Transaction::Add(cm("y", 0))])
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (store, stop) = (store.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut checks = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // One read: a consistent snapshot of both objects.
                let values: BTreeSet<String> = store
                    .list()
                    .iter()
                    .map(|o| o.data.as_ref().unwrap()["v"].clone())
                    .collect();
                assert_eq!(values.len(), 1, "x and y apart: {values:?}");
                checks += 1;
            }
            checks
        })
    };
    for v in 1..2000 {
        store
            .transaction([
                Transaction::Update(cm("x", v)),
                Transaction::Update(cm("y", v)),
            ])
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}
