//! The object store: every object of every resource, one monotonically increasing
//! resourceVersion across all of them (as etcd's revision), and the history of changes that
//! watches resume from and paginated lists read consistent snapshots from.
//!
//! Objects are kept as JSON twice: as a [`serde_json::Value`] (for selectors, patches and
//! updates) and as the serialised bytes (so a list of 100k objects or an event fanned out to
//! many watchers is copied, never re-encoded).
//!
//! The history is a bounded window of events (see
//! [`FakeApiServerBuilder::history_window`](crate::FakeApiServerBuilder::history_window)).
//! Every event with a resourceVersion above the *compaction point* is in it; anything older
//! is gone, exactly like etcd after a compaction: a watch or a continue token from before
//! that point gets `410 Expired`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use kclient_core::GroupResource;
use parking_lot::{RwLock, RwLockReadGuard};
use serde_json::Value;

/// One stored object at one resourceVersion.
#[derive(Debug)]
pub struct StoredObject {
    /// The object, with `metadata.resourceVersion` set.
    pub value: Value,
    /// `value` serialised as JSON.
    pub json: Bytes,
    /// `value` serialised without `apiVersion` and `kind`: how a list of a built-in type
    /// carries it (kube-apiserver's typed lists leave the items' type to the list's).
    pub item_json: Bytes,
    /// The resourceVersion of this state.
    #[allow(dead_code)] // read by the store's tests; the value's metadata carries it too
    pub rv: u64,
    /// `value`'s protobuf message (no envelope), encoded the first time the object is served
    /// in protobuf (see [`StoredObject::protobuf_message`]).
    protobuf: OnceLock<Bytes>,
}

impl StoredObject {
    fn new(mut value: Value, rv: u64) -> Self {
        let encode = |v: &Value| exact(serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec()));
        // Serialise once without the type (taken out and put back: no copy of the object),
        // once with it.
        let types = value
            .as_object_mut()
            .map(|map| (map.remove("apiVersion"), map.remove("kind")));
        let item_json = encode(&value);
        if let (Some(map), Some((api_version, kind))) = (value.as_object_mut(), types) {
            if let Some(v) = api_version {
                map.insert("apiVersion".into(), v);
            }
            if let Some(k) = kind {
                map.insert("kind".into(), k);
            }
        }
        let json = encode(&value);
        Self {
            value,
            json,
            item_json,
            rv,
            protobuf: OnceLock::new(),
        }
    }

    /// `value`'s protobuf message: `encode`d on first use and kept (a built-in kind is stored
    /// in one version, its codec's, so one message serves every protobuf answer), as the JSON
    /// bytes are kept. Only a success is kept.
    pub fn protobuf_message<E>(
        &self,
        encode: impl FnOnce(&Value) -> Result<Vec<u8>, E>,
    ) -> Result<Bytes, E> {
        if let Some(message) = self.protobuf.get() {
            return Ok(message.clone());
        }
        let message = exact(encode(&self.value)?);
        Ok(self.protobuf.get_or_init(|| message).clone())
    }
}

/// `bytes` without the spare capacity an encoder's doubling left (`Bytes::from` a `Vec`
/// keeps the whole allocation): a stored object's bytes live as long as the object and
/// every event of the history that holds it, and an object growing by a byte could
/// otherwise double what it holds.
fn exact(bytes: Vec<u8>) -> Bytes {
    Bytes::from(bytes.into_boxed_slice())
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// It was created.
    Added,
    /// It was changed.
    Modified,
    /// It was removed.
    Deleted,
}

/// One change in the history.
#[derive(Debug)]
pub struct StoreEvent {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// The resource of the object.
    pub resource: GroupResource,
    /// The object's key (`namespace/name`, or `name` when cluster-scoped).
    pub key: String,
    /// The object's namespace (`""` when cluster-scoped).
    pub namespace: String,
    /// The kind of change.
    pub event_type: EventType,
    /// The new state; for a deletion, the last state with the deletion's resourceVersion.
    pub object: Arc<StoredObject>,
    /// The state before the change, if the object existed.
    pub prev: Option<Arc<StoredObject>>,
}

/// A watch or snapshot asked for history that has been compacted away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    /// The oldest resourceVersion still resumable from (the compaction point).
    pub compacted: u64,
}

/// The key of an object.
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The store's state, behind the store's lock.
#[derive(Debug)]
pub struct StoreState {
    rv: u64,
    collections: HashMap<GroupResource, BTreeMap<String, Arc<StoredObject>>>,
    history: VecDeque<Arc<StoreEvent>>,
    window: usize,
    compacted: u64,
    /// uid → (resource, key) of the object with that uid.
    uids: HashMap<String, (GroupResource, String)>,
    /// owner uid → dependents (resource, key).
    dependents: HashMap<String, HashSet<(GroupResource, String)>>,
    /// The uids of the latest [`REMEMBERED_REMOVALS`] removed objects, oldest first, and
    /// the same as a set.
    removed_order: VecDeque<String>,
    removed: HashSet<String>,
}

/// How many uids of removed objects the store remembers, to tell a dependent written after
/// its owner went (see [`StoreState::removed_owners`]).
const REMEMBERED_REMOVALS: usize = 100_000;

fn uid_of(value: &Value) -> Option<&str> {
    value.pointer("/metadata/uid").and_then(Value::as_str)
}

fn owner_uids(value: &Value) -> impl Iterator<Item = &str> {
    value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
}

impl StoreState {
    fn new(window: usize) -> Self {
        Self {
            rv: 1,
            collections: HashMap::new(),
            history: VecDeque::new(),
            window: window.max(1),
            compacted: 1,
            uids: HashMap::new(),
            dependents: HashMap::new(),
            removed_order: VecDeque::new(),
            removed: HashSet::new(),
        }
    }

    /// The current resourceVersion (that of the latest change).
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// The compaction point: history holds every change after it.
    pub fn compacted_rv(&self) -> u64 {
        self.compacted
    }

    /// The object at `key`, if any.
    pub fn get(&self, resource: &GroupResource, key: &str) -> Option<&Arc<StoredObject>> {
        self.collections.get(resource)?.get(key)
    }

    /// The object with this uid, if it still exists.
    pub fn by_uid(&self, uid: &str) -> Option<(&GroupResource, &str, &Arc<StoredObject>)> {
        let (resource, key) = self.uids.get(uid)?;
        let obj = self.get(resource, key)?;
        Some((resource, key.as_str(), obj))
    }

    /// The owners `value`'s owner references name that this store held and has removed
    /// (among the latest [`REMEMBERED_REMOVALS`] removals): references the garbage collector
    /// finds dangling. An owner the store never held is not among them.
    pub fn removed_owners(&self, value: &Value) -> Vec<String> {
        owner_uids(value)
            .filter(|uid| self.removed.contains(*uid))
            .map(str::to_owned)
            .collect()
    }

    /// The objects whose owner references name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<(GroupResource, String)> {
        let mut deps: Vec<_> = self
            .dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        deps.sort();
        deps
    }

    /// The objects of `resource` (in `namespace`, if given) with keys after `after`, in key
    /// order.
    pub fn range<'a>(
        &'a self,
        resource: &GroupResource,
        namespace: Option<&'a str>,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)> + 'a {
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let collection = self.collections.get(resource);
        let start: Bound<String> = match (after, &prefix) {
            (Some(a), Some(p)) if a.as_bytes() < p.as_bytes() => Bound::Included(p.clone()),
            (Some(a), _) => Bound::Excluded(a.to_string()),
            (None, Some(p)) => Bound::Included(p.clone()),
            (None, None) => Bound::Unbounded,
        };
        collection
            .into_iter()
            .flat_map(move |c| c.range::<String, _>((start.clone(), Bound::Unbounded)))
            .take_while(move |(k, _)| prefix.as_ref().is_none_or(|p| k.starts_with(p.as_str())))
    }

    /// Every resource that has objects.
    pub fn resources(&self) -> Vec<GroupResource> {
        let mut all: Vec<_> = self
            .collections
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(r, _)| r.clone())
            .collect();
        all.sort();
        all
    }

    /// Stores `value` at `key` under a new resourceVersion (written into
    /// `metadata.resourceVersion`), recording an `ADDED` or `MODIFIED` event.
    pub fn put(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        key: &str,
        mut value: Value,
    ) -> Arc<StoredObject> {
        self.rv += 1;
        let rv = self.rv;
        set_resource_version(&mut value, rv);
        let stored = Arc::new(StoredObject::new(value, rv));
        let prev = self
            .collections
            .entry(resource.clone())
            .or_default()
            .insert(key.to_string(), stored.clone());
        if let Some(prev) = &prev {
            self.unindex(resource, key, &prev.value);
        }
        self.index(resource, key, &stored.value);
        let event_type = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(StoreEvent {
            rv,
            resource: resource.clone(),
            key: key.to_string(),
            namespace: namespace.to_string(),
            event_type,
            object: stored.clone(),
            prev,
        });
        stored
    }

    /// Removes the object at `key` under a new resourceVersion, recording a `DELETED` event
    /// whose object is the last state stamped with that resourceVersion.
    pub fn remove(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        key: &str,
    ) -> Option<Arc<StoredObject>> {
        let prev = self.collections.get_mut(resource)?.remove(key)?;
        self.unindex(resource, key, &prev.value);
        self.remember_removal(&prev.value);
        self.rv += 1;
        let rv = self.rv;
        let mut last = prev.value.clone();
        set_resource_version(&mut last, rv);
        let last = Arc::new(StoredObject::new(last, rv));
        self.record(StoreEvent {
            rv,
            resource: resource.clone(),
            key: key.to_string(),
            namespace: namespace.to_string(),
            event_type: EventType::Deleted,
            object: last.clone(),
            prev: Some(prev),
        });
        Some(last)
    }

    fn index(&mut self, resource: &GroupResource, key: &str, value: &Value) {
        if let Some(uid) = uid_of(value) {
            self.uids
                .insert(uid.to_string(), (resource.clone(), key.to_string()));
        }
        for owner in owner_uids(value) {
            self.dependents
                .entry(owner.to_string())
                .or_default()
                .insert((resource.clone(), key.to_string()));
        }
    }

    fn remember_removal(&mut self, value: &Value) {
        let Some(uid) = uid_of(value) else {
            return;
        };
        if self.removed.insert(uid.to_string()) {
            self.removed_order.push_back(uid.to_string());
            if self.removed_order.len() > REMEMBERED_REMOVALS {
                if let Some(oldest) = self.removed_order.pop_front() {
                    self.removed.remove(&oldest);
                }
            }
        }
    }

    fn unindex(&mut self, resource: &GroupResource, key: &str, value: &Value) {
        if let Some(uid) = uid_of(value) {
            self.uids.remove(uid);
        }
        let entry = (resource.clone(), key.to_string());
        for owner in owner_uids(value) {
            if let Some(set) = self.dependents.get_mut(owner) {
                set.remove(&entry);
                if set.is_empty() {
                    self.dependents.remove(owner);
                }
            }
        }
    }

    fn record(&mut self, event: StoreEvent) {
        self.history.push_back(Arc::new(event));
        while self.history.len() > self.window {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
    }

    /// Drops the history so far without a new revision: the history starts at the current
    /// resourceVersion, and anything older gets `410 Expired`.
    pub fn start_history_here(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// Moves the resourceVersion on to `rv` (if it is ahead) with no history before it, as a
    /// server restored from a later etcd revision would start.
    pub fn advance_to(&mut self, rv: u64) {
        if rv > self.rv {
            self.rv = rv;
            self.history.clear();
            self.compacted = rv;
        }
    }

    /// Drops the whole history and moves the resourceVersion on by one (an empty revision),
    /// so that every watch or continue token from before gets `410 Expired`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.rv += 1;
        self.compacted = self.rv;
    }

    /// The events after `rv`, oldest first.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Arc<StoreEvent>>, Compacted> {
        if rv < self.compacted {
            return Err(Compacted {
                compacted: self.compacted,
            });
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }

    /// How each object of `resource` that changed after `rv` looked at `rv` (`None`: it did
    /// not exist). Objects absent from the map are as they are now.
    pub fn snapshot_overrides(
        &self,
        resource: &GroupResource,
        rv: u64,
    ) -> Result<HashMap<String, Option<Arc<StoredObject>>>, Compacted> {
        let events = self.events_after(rv)?;
        let mut overrides = HashMap::new();
        for e in events.iter().filter(|e| &e.resource == resource) {
            overrides
                .entry(e.key.clone())
                .or_insert_with(|| e.prev.clone());
        }
        Ok(overrides)
    }
}

/// Writes `rv` into `metadata.resourceVersion`.
pub fn set_resource_version(value: &mut Value, rv: u64) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The object store (named apart from `kclient::cache::Store`, the informers' trait): state
/// behind a lock, and a channel that tells watchers the latest resourceVersion after every
/// change.
#[derive(Debug)]
pub struct ObjectStore {
    state: RwLock<StoreState>,
    notify: tokio::sync::watch::Sender<u64>,
}

impl ObjectStore {
    /// An empty store keeping `window` events of history.
    pub fn new(window: usize) -> Self {
        let state = StoreState::new(window);
        let (notify, _) = tokio::sync::watch::channel(state.rv);
        Self {
            state: RwLock::new(state),
            notify,
        }
    }

    /// Read access.
    pub fn read(&self) -> RwLockReadGuard<'_, StoreState> {
        self.state.read()
    }

    /// Runs `f` with write access, then wakes the watchers.
    pub fn mutate<R>(&self, f: impl FnOnce(&mut StoreState) -> R) -> R {
        let (result, rv) = {
            let mut state = self.state.write();
            let result = f(&mut state);
            (result, state.rv)
        };
        self.notify.send_if_modified(|current| {
            if *current != rv {
                *current = rv;
                true
            } else {
                false
            }
        });
        result
    }

    /// A receiver that changes whenever the resourceVersion moves.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.notify.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pods() -> GroupResource {
        GroupResource::new("", "pods")
    }

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")}})
    }

    #[test]
    fn one_resource_version_across_resources() {
        let store = ObjectStore::new(100);
        let a = store.mutate(|s| s.put(&pods(), "ns", "ns/a", pod("a")));
        let b = store.mutate(|s| {
            s.put(
                &GroupResource::new("", "configmaps"),
                "ns",
                "ns/b",
                pod("b"),
            )
        });
        assert_eq!(b.rv, a.rv + 1);
        assert_eq!(a.value["metadata"]["resourceVersion"], a.rv.to_string());
        let deleted = store.mutate(|s| s.remove(&pods(), "ns", "ns/a")).unwrap();
        assert_eq!(deleted.rv, b.rv + 1);
        assert_eq!(store.read().current_rv(), deleted.rv);
    }

    #[test]
    fn ranges_by_namespace_and_start_key() {
        let store = ObjectStore::new(100);
        store.mutate(|s| {
            for (ns, name) in [("a", "1"), ("a", "2"), ("a-b", "1"), ("b", "1")] {
                s.put(&pods(), ns, &object_key(ns, name), pod(name));
            }
        });
        let state = store.read();
        let keys = |ns, after| -> Vec<String> {
            state
                .range(&pods(), ns, after)
                .map(|(k, _)| k.clone())
                .collect()
        };
        assert_eq!(keys(Some("a"), None), ["a/1", "a/2"]);
        assert_eq!(
            keys(None, None),
            ["a-b/1", "a/1", "a/2", "b/1"],
            "byte order, as etcd"
        );
        assert_eq!(keys(None, Some("a/1")), ["a/2", "b/1"]);
        assert_eq!(keys(Some("b"), Some("a/1")), ["b/1"]);
    }

    #[test]
    fn history_window_compacts_and_snapshots_rewind() {
        let store = ObjectStore::new(3);
        let first = store.mutate(|s| s.put(&pods(), "ns", "ns/a", pod("a"))).rv;
        store.mutate(|s| s.put(&pods(), "ns", "ns/b", pod("b")));
        store.mutate(|s| s.remove(&pods(), "ns", "ns/a"));
        let state = store.read();
        let overrides = state.snapshot_overrides(&pods(), first).unwrap();
        assert!(overrides["ns/b"].is_none(), "b did not exist yet");
        assert_eq!(overrides["ns/a"].as_ref().unwrap().rv, first);
        drop(state);
        store.mutate(|s| s.put(&pods(), "ns", "ns/c", pod("c")));
        assert_eq!(
            store.read().events_after(first - 1).unwrap_err(),
            Compacted { compacted: first }
        );
        assert_eq!(store.read().events_after(first).unwrap().len(), 3);
    }

    #[test]
    fn owner_index_tracks_dependents() {
        let store = ObjectStore::new(10);
        let mut child = pod("child");
        child["metadata"]["ownerReferences"] = json!([{"uid": "uid-owner"}]);
        store.mutate(|s| s.put(&pods(), "ns", "ns/child", child));
        assert_eq!(
            store.read().dependents_of("uid-owner"),
            [(pods(), "ns/child".to_string())]
        );
        assert!(store.read().by_uid("uid-child").is_some());
        store.mutate(|s| s.remove(&pods(), "ns", "ns/child"));
        assert!(store.read().dependents_of("uid-owner").is_empty());
        assert!(store.read().by_uid("uid-child").is_none());
    }
}
