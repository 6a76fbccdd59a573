//! An in-memory source of objects for testing informers and controllers (client-go's
//! `tools/cache/testing.FakeControllerSource`).
//!
//! [`FakeControllerSource`] is a [`ListerWatcher`]: it lists its objects and watches their
//! changes, numbering every change with the next resourceVersion. Tests change it with
//! [`add`](FakeControllerSource::add), [`modify`](FakeControllerSource::modify) and
//! [`delete`](FakeControllerSource::delete), lose events on purpose with the `*_drop_watch`
//! variants and [`reset_watch`](FakeControllerSource::reset_watch), and make lists fail with
//! [`fail_next_list`](FakeControllerSource::fail_next_list) or
//! [`set_list_error`](FakeControllerSource::set_list_error). Watches replay every change
//! after the resourceVersion they start from, as client-go's fake does: one from before its
//! change log (which [`reset_watch`](FakeControllerSource::reset_watch) flushes) ends with
//! `410 Expired`, so an informer relists; one from a future resourceVersion is an error. Like
//! client-go's, it refuses streaming lists (`sendInitialEvents`) unless
//! [`serve_streaming_lists`](FakeControllerSource::serve_streaming_lists) says otherwise, so
//! informers on it list then watch. For a whole API server, use `kclient-fake`.
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
    /// The resourceVersion the change log starts after (moved on by `reset_watch`).
    log_start: usize,
    /// The changes since `log_start`: change `i` has resourceVersion `log_start + i + 1`.
    changes: Vec<WatchEvent<K>>,
    watchers: Vec<Sender<K>>,
    list_errors: VecDeque<ApiError>,
    /// The error every list fails with until it is cleared.
    list_error: Option<ApiError>,
    streaming_lists: bool,
    list_calls: usize,
    watch_calls: usize,
}

impl<K> State<K> {
    /// The resourceVersion of the last change.
    fn current(&self) -> usize {
        self.log_start + self.changes.len()
    }
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
            .field("resource_version", &state.current())
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
                log_start: 0,
                changes: Vec::new(),
                watchers: Vec::new(),
                list_errors: VecDeque::new(),
                list_error: None,
                streaming_lists: false,
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

    /// Ends every open watch and flushes the change log (client-go's `ResetWatch`): a watch
    /// from a resourceVersion before now gets `410 Expired`, so an informer relists.
    pub fn reset_watch(&self) {
        let mut state = self.state.lock();
        state.watchers.clear();
        state.log_start = state.current();
        state.changes.clear();
    }

    /// Makes the next list fail with `error` (queue several for several lists).
    pub fn fail_next_list(&self, error: ApiError) {
        self.state.lock().list_errors.push_back(error);
    }

    /// Makes every list fail with `error` until it is set to `None` (client-go's fake keeps a
    /// list error until the test clears it). Errors queued by
    /// [`fail_next_list`](Self::fail_next_list) come first.
    pub fn set_list_error(&self, error: Option<ApiError>) {
        self.state.lock().list_error = error;
    }

    /// Serves streaming lists (`sendInitialEvents`) as a server does, instead of refusing
    /// them as client-go's fake does.
    pub fn serve_streaming_lists(&self, serve: bool) {
        self.state.lock().streaming_lists = serve;
    }

    /// The objects now, ordered by key.
    pub fn items(&self) -> Vec<K> {
        self.state.lock().items.values().cloned().collect()
    }

    /// The resourceVersion of the last change ("0" before any).
    pub fn resource_version(&self) -> String {
        self.state.lock().current().to_string()
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
        let rv = (state.current() + 1).to_string();
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
            match state.list_errors.pop_front().or(state.list_error.clone()) {
                Some(error) => Err(error),
                None => Ok(ObjectList::new(
                    state.items.values().cloned().collect(),
                    state.current().to_string(),
                )),
            }
        };
        async move { answer }
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, ApiError>, ApiError>> + Send {
        let opened = self.open_watch(options);
        async move { opened }
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> FakeControllerSource<K> {
    // The error is the ListerWatcher's, as `watch` returns it.
    #[allow(clippy::result_large_err)]
    fn open_watch(&self, options: &ListOptions) -> Result<WatchStream<K, ApiError>, ApiError> {
        let (tx, rx) = mpsc::unbounded();
        {
            let mut state = self.state.lock();
            state.watch_calls += 1;
            let current = state.current();
            let streaming = options.send_initial_events == Some(true);
            if streaming && !state.streaming_lists {
                return Err(ApiError::bad_request(
                    "streaming lists (sendInitialEvents) are not served by this fake",
                ));
            }
            if streaming {
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
                let from = match options.resource_version.as_deref() {
                    None | Some("" | "0") => current,
                    Some(rv) => rv.parse::<usize>().map_err(|_| {
                        ApiError::bad_request(format!("invalid resourceVersion {rv:?}"))
                    })?,
                };
                if from > current {
                    return Err(ApiError::bad_request(format!(
                        "resourceVersion {from} is in the future (the fake is at {current})"
                    )));
                }
                if from < state.log_start {
                    return Err(ApiError::resource_expired(format!(
                        "too old resource version: {from} ({})",
                        state.log_start
                    )));
                }
                for event in &state.changes[from - state.log_start..] {
                    let _ = tx.unbounded_send(Ok(event.clone()));
                }
            }
            state.watchers.push(tx);
        }
        Ok(rx.boxed())
    }
}
