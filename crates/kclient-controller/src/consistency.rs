//! Stale-controller handling (KEP-5647, beta and on by default in kube-controller-manager
//! 1.36/1.37): a controller remembers the resourceVersions of what it wrote for an owner, and
//! does not reconcile that owner again until its informers' stores have caught up with those
//! writes — so it never acts on a cache older than its own writes (creating a second Pod for
//! a ReplicaSet because the first one's create had not reached the cache yet, say).
//!
//! [`ConsistencyStore`] is kubernetes' `pkg/controller/util/consistency`
//! `RealConsistencyStore`: [`wrote_at`](ConsistencyStore::wrote_at) after a write,
//! [`ensure_ready`](ConsistencyStore::ensure_ready) before a sync (an error is a stale cache:
//! skip the sync and requeue the key), [`clear`](ConsistencyStore::clear) when the owner is
//! gone. A store's side is its
//! [`last_store_sync_resource_version`](kclient_cache::Indexer::last_store_sync_resource_version)
//! (client-go 1.37), compared with
//! [`compare_resource_version`].
//!
//! A [`Controller`](crate::Controller) does all this by itself for the reconciler that records
//! its writes with [`ReconcileContext::wrote`](crate::ReconcileContext::wrote); see the crate
//! docs' "Stale caches" section.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Indexer, Indexers, KeyFunc};
//! use kclient_controller::consistency::{ConsistencyStore, LastSyncRvGetter};
//! use kclient_core::{GroupResource, ObjectKey};
//!
//! let pods = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), Indexers::<Pod>::namespace());
//! let pods_gr = GroupResource::new("", "pods");
//! let store = ConsistencyStore::new([(pods_gr.clone(), Arc::new(pods.clone()) as Arc<dyn LastSyncRvGetter>)]);
//! let owner = ObjectKey::namespaced("prod", "web");
//!
//! pods.bookmark("5");
//! store.wrote_at(&owner, "uid-1", &pods_gr, "10"); // a Pod created at resourceVersion 10
//! assert!(store.ensure_ready(&owner).is_err()); // the cache is at 5: stale
//! pods.bookmark("10");
//! assert!(store.ensure_ready(&owner).is_ok()); // caught up: the record is dropped
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kclient_cache::Indexer;
use kclient_core::resource_version::compare_resource_version;
use kclient_core::{GroupResource, ObjectKey};
use parking_lot::{Mutex, RwLock};

/// A store's latest resourceVersion (kubernetes' `consistency.LastSyncRVGetter`): an informer's
/// [`Indexer`] answers its
/// [`last_store_sync_resource_version`](Indexer::last_store_sync_resource_version).
pub trait LastSyncRvGetter: Send + Sync {
    /// The latest resourceVersion the store has seen; `""` when unknown.
    fn last_store_sync_resource_version(&self) -> String;
}

impl<K: Send + Sync> LastSyncRvGetter for Indexer<K> {
    fn last_store_sync_resource_version(&self) -> String {
        Indexer::last_store_sync_resource_version(self)
    }
}

/// A store is not as new as a write recorded for the owner (kubernetes'
/// `consistency.ConsistencyError`), with the message kubernetes gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("read version: {read_rv} is not as new as written version: {wrote_rv} for group resource {group_resource}")]
pub struct ConsistencyError {
    /// The store's latest resourceVersion.
    pub read_rv: String,
    /// The newest resourceVersion written for the owner in that resource.
    pub wrote_rv: String,
    /// The resource whose store is behind.
    pub group_resource: GroupResource,
}

/// What was written for one owner (kubernetes' `ownerRecord`).
struct OwnerRecord {
    /// The owner's UID, fixed at creation: a new owner of the same name gets a new record.
    owner_uid: String,
    /// The newest resourceVersion written per resource.
    versions: Mutex<HashMap<GroupResource, String>>,
}

impl OwnerRecord {
    fn new(owner_uid: &str) -> Self {
        Self {
            owner_uid: owner_uid.to_owned(),
            versions: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `rv` if it is newer than the one recorded for `resource` (or the two do not
    /// compare).
    fn wrote_at(&self, resource: &GroupResource, rv: &str) {
        let mut versions = self.versions.lock();
        match versions.get_mut(resource) {
            None => {
                versions.insert(resource.clone(), rv.to_owned());
            }
            Some(recorded) => {
                let newer_or_same =
                    compare_resource_version(recorded, rv).is_ok_and(|ordering| ordering.is_ge());
                if !newer_or_same {
                    rv.clone_into(recorded);
                }
            }
        }
    }

    /// Whether every store has caught up with the writes (kubernetes' `ownerRecord.EnsureReady`):
    /// a resource without a store, a store answering `""`, or resourceVersions that do not
    /// compare, do not hold the sync back.
    fn ensure_ready(
        &self,
        stores: &HashMap<GroupResource, Arc<dyn LastSyncRvGetter>>,
    ) -> Result<(), ConsistencyError> {
        let versions = self.versions.lock();
        for (resource, wrote_rv) in versions.iter() {
            let Some(store) = stores.get(resource) else {
                continue;
            };
            let read_rv = store.last_store_sync_resource_version();
            if read_rv.is_empty() {
                continue;
            }
            if compare_resource_version(wrote_rv, &read_rv).is_ok_and(|o| o.is_gt()) {
                return Err(ConsistencyError {
                    read_rv,
                    wrote_rv: wrote_rv.clone(),
                    group_resource: resource.clone(),
                });
            }
        }
        Ok(())
    }
}

/// The writes of a controller per owner, checked against its informers' stores (kubernetes'
/// `consistency.RealConsistencyStore`; see the [module docs](self)). Thread-safe; share it in
/// an `Arc`.
pub struct ConsistencyStore {
    writes: RwLock<HashMap<ObjectKey, Arc<OwnerRecord>>>,
    stores: RwLock<HashMap<GroupResource, Arc<dyn LastSyncRvGetter>>>,
}

impl fmt::Debug for ConsistencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsistencyStore")
            .field("owners", &self.writes.read().len())
            .field(
                "stores",
                &self.stores.read().keys().cloned().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ConsistencyStore {
    /// A store checking writes against `stores`, one per resource (kubernetes'
    /// `NewConsistencyStore`). Writes to a resource without a store are recorded and never
    /// hold a sync back.
    pub fn new(
        stores: impl IntoIterator<Item = (GroupResource, Arc<dyn LastSyncRvGetter>)>,
    ) -> Self {
        Self {
            writes: RwLock::new(HashMap::new()),
            stores: RwLock::new(stores.into_iter().collect()),
        }
    }

    /// Checks the writes to `resource` against `store` from now on (replacing the store the
    /// resource had).
    pub fn set_store(&self, resource: GroupResource, store: Arc<dyn LastSyncRvGetter>) {
        self.stores.write().insert(resource, store);
    }

    /// The record of `owner`, if any.
    fn written_record(&self, owner: &ObjectKey) -> Option<Arc<OwnerRecord>> {
        self.writes.read().get(owner).cloned()
    }

    /// The record of `owner` with `owner_uid`: the existing one, or a new empty one (which
    /// replaces the record of an earlier owner of the same name).
    fn ensure_written_record(&self, owner: &ObjectKey, owner_uid: &str) -> Arc<OwnerRecord> {
        if let Some(record) = self.written_record(owner) {
            if record.owner_uid == owner_uid {
                return record;
            }
        }
        let mut writes = self.writes.write();
        match writes.get(owner) {
            Some(record) if record.owner_uid == owner_uid => Arc::clone(record),
            _ => {
                let record = Arc::new(OwnerRecord::new(owner_uid));
                writes.insert(owner.clone(), Arc::clone(&record));
                record
            }
        }
    }

    /// Records that the controller wrote `resource` at `rv` for `owner` (whose UID is
    /// `owner_uid`), keeping the newest per resource (kubernetes' `WroteAt`).
    pub fn wrote_at(&self, owner: &ObjectKey, owner_uid: &str, resource: &GroupResource, rv: &str) {
        self.ensure_written_record(owner, owner_uid)
            .wrote_at(resource, rv);
    }

    /// Forgets `owner`'s writes if its record has `owner_uid`, or whatever its UID when
    /// `owner_uid` is empty (kubernetes' `Clear`): for an owner that is gone.
    pub fn clear(&self, owner: &ObjectKey, owner_uid: &str) {
        let mut writes = self.writes.write();
        if writes
            .get(owner)
            .is_some_and(|r| owner_uid.is_empty() || r.owner_uid == owner_uid)
        {
            writes.remove(owner);
        }
    }

    /// `Ok` when every store is at least as new as every write recorded for `owner` — and
    /// then the record is dropped, as nothing needs waiting for any more; otherwise the
    /// first resource found behind (kubernetes' `EnsureReady`). Not to be called
    /// concurrently with [`wrote_at`](Self::wrote_at) for the same owner (a controller never
    /// reconciles one key twice at once).
    pub fn ensure_ready(&self, owner: &ObjectKey) -> Result<(), ConsistencyError> {
        let Some(record) = self.written_record(owner) else {
            return Ok(());
        };
        record.ensure_ready(&self.stores.read())?;
        self.clear(owner, &record.owner_uid);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! kubernetes v1.37.1's pkg/controller/util/consistency/consistency_test.go, test by test.

    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kclient_cache::{Indexers, KeyFunc};

    fn gr_pod() -> GroupResource {
        GroupResource::new("", "pods")
    }

    fn gr_ds() -> GroupResource {
        GroupResource::new("apps", "daemonsets")
    }

    fn store() -> Indexer<Pod> {
        Indexer::new(KeyFunc::meta_namespace(), Indexers::default())
    }

    fn owner(name: &str) -> ObjectKey {
        ObjectKey::cluster_scoped(name)
    }

    fn versions(record: &OwnerRecord) -> HashMap<GroupResource, String> {
        record.versions.lock().clone()
    }

    /// `TestOwnerRecord_WroteAt`.
    #[test]
    fn owner_record_wrote_at() {
        let record = OwnerRecord::new("owner-uid-1");
        assert_eq!(record.owner_uid, "owner-uid-1");
        record.wrote_at(&gr_pod(), "5");
        assert_eq!(versions(&record)[&gr_pod()], "5");
        record.wrote_at(&gr_pod(), "10");
        assert_eq!(versions(&record)[&gr_pod()], "10");
        record.wrote_at(&gr_pod(), "8");
        assert_eq!(
            versions(&record)[&gr_pod()],
            "10",
            "a lower write is ignored"
        );
        record.wrote_at(&gr_ds(), "1");
        assert_eq!(versions(&record)[&gr_ds()], "1");
        assert_eq!(
            versions(&record)[&gr_pod()],
            "10",
            "Pod version should be unchanged"
        );
    }

    /// `TestOwnerRecord_IsReady`.
    #[test]
    fn owner_record_is_ready() {
        let record = OwnerRecord::new("owner-uid-1");
        let (pods, daemonsets) = (store(), store());
        let consistency = ConsistencyStore::new([
            (
                gr_pod(),
                Arc::new(pods.clone()) as Arc<dyn LastSyncRvGetter>,
            ),
            (
                gr_ds(),
                Arc::new(daemonsets.clone()) as Arc<dyn LastSyncRvGetter>,
            ),
        ]);
        let stores = consistency.stores.read();
        assert!(record.ensure_ready(&stores).is_ok(), "no writes");
        record.wrote_at(&gr_pod(), "10");
        assert!(record.ensure_ready(&stores).is_ok(), "a write and no read");
        pods.bookmark("5");
        assert_eq!(
            record.ensure_ready(&stores),
            Err(ConsistencyError {
                read_rv: "5".into(),
                wrote_rv: "10".into(),
                group_resource: gr_pod(),
            }),
            "read < write"
        );
        pods.bookmark("10");
        assert!(record.ensure_ready(&stores).is_ok(), "read == write");
        pods.bookmark("15");
        assert!(record.ensure_ready(&stores).is_ok(), "read > write");
        record.wrote_at(&gr_ds(), "100");
        daemonsets.bookmark("50");
        assert!(record.ensure_ready(&stores).is_err(), "one of two behind");
        daemonsets.bookmark("100");
        assert!(record.ensure_ready(&stores).is_ok(), "all caught up");
    }

    /// `TestConsistencyStore_New`.
    #[test]
    fn consistency_store_new() {
        let store = ConsistencyStore::new([]);
        assert!(store.writes.read().is_empty());
    }

    /// `TestConsistencyStore_EnsureWrittenRecord`.
    #[test]
    fn consistency_store_ensure_written_record() {
        let store = ConsistencyStore::new([]);
        let o = owner("owner1");
        let r1 = store.ensure_written_record(&o, "uid-1");
        assert_eq!(r1.owner_uid, "uid-1");
        assert!(Arc::ptr_eq(&r1, &store.writes.read()[&o]));
        let r2 = store.ensure_written_record(&o, "uid-1");
        assert!(Arc::ptr_eq(&r1, &r2), "the same record for the same UID");
        let r3 = store.ensure_written_record(&o, "uid-2");
        assert!(!Arc::ptr_eq(&r1, &r3), "a new record");
        assert_eq!(r3.owner_uid, "uid-2");
        assert!(Arc::ptr_eq(&r3, &store.writes.read()[&o]));
        assert!(versions(&r3).is_empty());
        r1.wrote_at(&gr_pod(), "10");
        assert!(versions(&r3).is_empty(), "the old record is detached");
    }

    /// `TestConsistencyStore_EnsureWrittenRecord_Concurrent`.
    #[test]
    fn consistency_store_ensure_written_record_concurrent() {
        let store = Arc::new(ConsistencyStore::new([]));
        let o = owner("owner1");
        for uid in ["uid-1", "uid-2"] {
            let records: Vec<Arc<OwnerRecord>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..50)
                    .map(|_| s.spawn(|| store.ensure_written_record(&o, uid)))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(records.iter().all(|r| r.owner_uid == uid));
            assert!(records.iter().all(|r| Arc::ptr_eq(r, &records[0])));
            assert_eq!(store.writes.read().len(), 1);
            assert!(Arc::ptr_eq(&store.writes.read()[&o], &records[0]));
        }
    }

    /// `TestConsistencyStore_WroteAt`.
    #[test]
    fn consistency_store_wrote_at() {
        let store = ConsistencyStore::new([]);
        let o = owner("owner1");
        store.wrote_at(&o, "uid-1", &gr_pod(), "10");
        let record = store.written_record(&o).unwrap();
        assert_eq!(record.owner_uid, "uid-1");
        assert_eq!(versions(&record)[&gr_pod()], "10");
        store.wrote_at(&o, "uid-1", &gr_pod(), "20");
        assert_eq!(versions(&record)[&gr_pod()], "20");
    }

    /// `TestConsistencyStore_Clear`.
    #[test]
    fn consistency_store_clear() {
        let store = ConsistencyStore::new([]);
        let (o1, o2) = (owner("owner1"), owner("owner2"));
        let r1 = store.ensure_written_record(&o1, "uid-1");
        let r2 = store.ensure_written_record(&o2, "uid-2");
        assert_eq!(store.writes.read().len(), 2);
        store.clear(&owner("non-existent"), "uid-1");
        assert_eq!(store.writes.read().len(), 2);
        store.clear(&o1, "uid-2");
        assert_eq!(store.writes.read().len(), 2, "not with the wrong UID");
        assert!(Arc::ptr_eq(&r1, &store.writes.read()[&o1]));
        store.clear(&o1, "uid-1");
        assert_eq!(store.writes.read().len(), 1, "with the right UID");
        assert!(store.written_record(&o1).is_none());
        assert!(Arc::ptr_eq(&r2, &store.writes.read()[&o2]));
        store.ensure_written_record(&o1, "uid-1");
        assert_eq!(store.writes.read().len(), 2);
        store.clear(&o1, "");
        assert_eq!(store.writes.read().len(), 1, "an empty UID clears any");
        assert!(store.written_record(&o1).is_none());
        assert!(Arc::ptr_eq(&r2, &store.writes.read()[&o2]));
    }

    /// `TestConsistencyStore_IsReady`.
    #[test]
    fn consistency_store_is_ready() {
        let o = owner("owner1");
        let pods = store();
        let store = ConsistencyStore::new([(
            gr_pod(),
            Arc::new(pods.clone()) as Arc<dyn LastSyncRvGetter>,
        )]);
        assert!(store.ensure_ready(&o).is_ok(), "no record");
        pods.bookmark("5");
        store.wrote_at(&o, "uid-1", &gr_pod(), "10");
        let err = store.ensure_ready(&o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "read version: 5 is not as new as written version: 10 for group resource pods"
        );
        pods.bookmark("10");
        assert!(store.ensure_ready(&o).is_ok(), "read == write");
        pods.bookmark("15");
        assert!(store.ensure_ready(&o).is_ok(), "read > write");
        assert!(
            store.written_record(&o).is_none(),
            "the record is dropped once the reads caught up"
        );
    }
}
