//! An in-memory source of objects for testing informers and controllers (client-go's
//! `tools/cache/testing.FakeControllerSource`).
//!
//! [`FakeControllerSource`] is a [`ListerWatcher`]: it lists its objects and watches their
//! changes, numbering every change with the next resourceVersion. Tests change it with
//! [`add`](FakeControllerSource::add), [`modify`](FakeControllerSource::modify) and
//! [`delete`](FakeControllerSource::delete), lose events on purpose with the `*_drop_watch`
//! variants and [`reset_watch`](FakeControllerSource::reset_watch), and make lists fail with
//! [`fail_next_list`](FakeControllerSource::fail_next_list). Watches replay every change
//! after the resourceVersion they start from, and serve streaming lists
//! (`sendInitialEvents`). For a whole API server, use `kclient-fake`.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::testing::FakeControllerSource;
//! use kclient_core::{ListOptions, ListerWatcher};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let source = FakeControllerSource::<ConfigMap>::new();
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("a".into());
//! source.add(cm);
//! let list = source.list(&ListOptions::default()).await.unwrap();
//! assert_eq!(list.items.len(), 1);
//! assert_eq!(list.metadata.resource_version.as_deref(), Some("1"));
//! # }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::StreamExt;
use kclient_core::{
    meta_namespace_key, ApiError, Bookmark, ListOptions, ListerWatcher, ObjectList, Resource,
    WatchEvent, WatchStream, INITIAL_EVENTS_END_ANNOTATION,
};
use parking_lot::Mutex;

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<K>, ApiError>>;

struct State<K> {
    /// The objects by key.
    items: BTreeMap<String, K>,
    /// Every change; change `i` has resourceVersion `i + 1`.
    changes: Vec<WatchEvent<K>>,
    watchers: Vec<Sender<K>>,
    list_errors: VecDeque<ApiError>,
    list_calls: usize,
    watch_calls: usize,
}

/// An in-memory [`ListerWatcher`]; see the [module docs](self). Cheap to clone: clones share
/// the objects.
pub struct FakeControllerSource<K> {
    state: Arc<Mutex<State<K>>>,
}

impl<K> Clone for FakeControllerSource<K> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
        }
    }
}

impl<K> fmt::Debug for FakeControllerSource<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("FakeControllerSource")
            .field("items", &state.items.len())
            .field("resource_version", &state.changes.len())
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Default for FakeControllerSource<K> {
    fn default() -> Self {
        Self::new()
    }
}

enum Change {
    Add,
    Modify,
    Delete,
}

impl<K: Resource + Clone + Send + Sync + 'static> FakeControllerSource<K> {
    /// An empty source at resourceVersion 0.
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                items: BTreeMap::new(),
                changes: Vec::new(),
                watchers: Vec::new(),
                list_errors: VecDeque::new(),
                list_calls: 0,
                watch_calls: 0,
            })),
        }
    }

    /// Adds an object; open watches see `Added`. Returns it with its new resourceVersion.
    pub fn add(&self, obj: K) -> K {
        self.change(Change::Add, obj, true)
    }

    /// Replaces an object; open watches see `Modified`.
    pub fn modify(&self, obj: K) -> K {
        self.change(Change::Modify, obj, true)
    }

    /// Deletes an object (by its key); open watches see `Deleted`.
    pub fn delete(&self, obj: K) -> K {
        self.change(Change::Delete, obj, true)
    }

    /// Adds an object without telling the open watches (an event lost in transit; a later
    /// watch from an older resourceVersion still replays it).
    pub fn add_drop_watch(&self, obj: K) -> K {
        self.change(Change::Add, obj, false)
    }

    /// Modifies an object without telling the open watches.
    pub fn modify_drop_watch(&self, obj: K) -> K {
        self.change(Change::Modify, obj, false)
    }

    /// Deletes an object without telling the open watches.
    pub fn delete_drop_watch(&self, obj: K) -> K {
        self.change(Change::Delete, obj, false)
    }

    /// Ends every open watch (as a server closing them does).
    pub fn reset_watch(&self) {
        self.state.lock().watchers.clear();
    }

    /// Makes the next list fail with `error` (queue several for several lists).
    pub fn fail_next_list(&self, error: ApiError) {
        self.state.lock().list_errors.push_back(error);
    }

    /// The objects now, ordered by key.
    pub fn items(&self) -> Vec<K> {
        self.state.lock().items.values().cloned().collect()
    }

    /// The resourceVersion of the last change ("0" before any).
    pub fn resource_version(&self) -> String {
        self.state.lock().changes.len().to_string()
    }

    /// How many lists were asked for.
    pub fn list_calls(&self) -> usize {
        self.state.lock().list_calls
    }

    /// How many watches were asked for (streaming lists included).
    pub fn watch_calls(&self) -> usize {
        self.state.lock().watch_calls
    }

    /// How many watches are open.
    pub fn open_watches(&self) -> usize {
        let mut state = self.state.lock();
        state.watchers.retain(|w| !w.is_closed());
        state.watchers.len()
    }

    fn change(&self, change: Change, mut obj: K, notify: bool) -> K {
        let mut state = self.state.lock();
        let rv = (state.changes.len() + 1).to_string();
        obj.meta_mut().resource_version = Some(rv);
        let key = meta_namespace_key(&obj);
        let event = match change {
            Change::Add | Change::Modify => {
                state.items.insert(key, obj.clone());
                if matches!(change, Change::Add) {
                    WatchEvent::Added(obj.clone())
                } else {
                    WatchEvent::Modified(obj.clone())
                }
            }
            Change::Delete => {
                state.items.remove(&key);
                WatchEvent::Deleted(obj.clone())
            }
        };
        state.changes.push(event.clone());
        if notify {
            state
                .watchers
                .retain(|w| w.unbounded_send(Ok(event.clone())).is_ok());
        }
        obj
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> ListerWatcher<K> for FakeControllerSource<K> {
    type Error = ApiError;

    fn list(
        &self,
        _options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ApiError>> + Send {
        let answer = {
            let mut state = self.state.lock();
            state.list_calls += 1;
            match state.list_errors.pop_front() {
                Some(error) => Err(error),
                None => Ok(ObjectList::new(
                    state.items.values().cloned().collect(),
                    state.changes.len().to_string(),
                )),
            }
        };
        async move { answer }
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, ApiError>, ApiError>> + Send {
        let (tx, rx) = mpsc::unbounded();
        {
            let mut state = self.state.lock();
            state.watch_calls += 1;
            let current = state.changes.len();
            if options.send_initial_events == Some(true) {
                for obj in state.items.values() {
                    let _ = tx.unbounded_send(Ok(WatchEvent::Added(obj.clone())));
                }
                let _ = tx.unbounded_send(Ok(WatchEvent::Bookmark(Bookmark {
                    resource_version: current.to_string(),
                    annotations: BTreeMap::from([(
                        INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                        "true".to_owned(),
                    )]),
                })));
            } else {
                let from = options
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse::<usize>().ok())
                    .filter(|rv| *rv != 0)
                    .unwrap_or(current)
                    .min(current);
                for event in &state.changes[from..] {
                    let _ = tx.unbounded_send(Ok(event.clone()));
                }
            }
            state.watchers.push(tx);
        }
        async move { Ok(rx.boxed()) }
    }
}
