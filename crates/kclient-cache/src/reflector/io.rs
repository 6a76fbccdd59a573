//! The seam between a reflector's run and its kind: [`KindIo`], what the run asks of the
//! lister-watcher, the admission of objects and the store, and [`Typed`], its one
//! implementation.
//!
//! The run — the state machine's driver, the list, the streaming list, the consumption of a
//! watch, the resync timer — knows objects only through these traits, and the
//! lister-watcher's errors only as [`SourceError`]s, so it is not generic: it is compiled
//! once, in this crate, whatever kinds a program caches. What is compiled per kind is what
//! has to be: listing (decoding and admitting items), opening a watch, writing an event's
//! object into the store, and giving an error back its type, all in this module.

use std::any::Any;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use kclient_core::{
    DynamicObject, GroupVersionKind, ListOptions, ListPager, ListerWatcher, PagedList,
    PagedListError, Resource, ResourceExt, Status, WatchEvent, WatchStream, DEFAULT_PAGE_SIZE,
};
use parking_lot::Mutex;

use super::admit::Admission;
use super::errors::{ReflectorError, SourceError, WatchError};
use crate::initial_events::InitialEvents;
use crate::representation::{EncodedList, Listed};
use crate::store::{Store, StoreError};
use crate::watch_deadline::watch_with_deadline;

/// What the consistency check compares of an object: key, uid, resourceVersion.
pub(super) type Identity = (String, String, String);

/// What the kind's side does for a reflector's run. Its errors are the lister-watcher's,
/// erased.
pub(super) trait KindIo: Send + Sync {
    /// One paged list with `options` (`page_size` 0 for none), each item admitted (or
    /// encoded, for a compact informer) as its page arrives.
    fn list<'a>(
        &'a self,
        options: ListOptions,
        page_size: i64,
    ) -> BoxFuture<'a, Result<Listing<'a>, PagedListError<SourceError>>>;

    /// A watch with `options`, bounded by its client-side deadline and `idle_timeout`; with
    /// `initial_events`, its objects are gathered apart until the streaming list's closing
    /// bookmark ([`EventSource::finish_initial_events`]), else written into the store.
    fn watch<'a>(
        &'a self,
        options: ListOptions,
        idle_timeout: Option<Duration>,
        initial_events: bool,
    ) -> BoxFuture<'a, Result<Box<dyn EventSource<'a> + 'a>, SourceError>>;

    /// The identities of what the server lists with `options` (the consistency check).
    fn list_identities(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<Vec<Identity>, PagedListError<SourceError>>>;

    /// The store's periodic resync.
    fn resync(&self) -> Result<(), StoreError>;

    /// Whether lists and watches may leave managedFields out (the transform drops them).
    fn omits_managed_fields(&self) -> bool;

    /// Calls `f` with `err` as the lister-watcher's own [`ReflectorError`], which a
    /// [`WatchErrorHandler`](super::WatchErrorHandler) can downcast to.
    fn with_source_type(&self, err: ReflectorError<SourceError>, f: &dyn Fn(&dyn WatchError));
}

/// One list's outcome: its resourceVersion, whether it came in pages, its objects (or the
/// first error admitting one).
pub(super) struct Listing<'a> {
    pub(super) resource_version: String,
    pub(super) paginated: bool,
    pub(super) items: Result<Box<dyn ListedObjects + 'a>, StoreError>,
}

/// Listed objects, on their way to replacing the store's content.
pub(super) trait ListedObjects: Send + Sync {
    /// How many.
    fn len(&self) -> usize;
    /// Their identities (the consistency check).
    fn identities(&self) -> Vec<Identity>;
    /// Replaces the store's content with them, as of `resource_version`.
    fn replace(self: Box<Self>, resource_version: &str) -> Result<(), StoreError>;
}

/// What a watch event came to, once the kind's side has handled it.
pub(super) enum Step {
    /// An object was written (a failed write is logged, not fatal); its resourceVersion.
    Written(String),
    /// A bookmark (handed to the store); its resourceVersion, and whether it ends a
    /// streaming list's initial events.
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
    /// An object that is not one of the resource's (a Table, another kind): skipped.
    Skipped,
    /// An `ERROR` event.
    Error(Status),
    /// The stream failed.
    Failed(SourceError),
}

/// An open watch, writing each event's object where it belongs as it is polled.
pub(super) trait EventSource<'a>: Send {
    /// The next event, handled; `None` when the stream ended.
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Option<Step>>;
    /// Tells where the events go that the reflector has seen `resource_version`.
    fn update_resource_version(&self, resource_version: &str);
    /// The initial events gathered so far, handed over; the events after go to the store.
    /// Empty for a watch opened without initial events.
    fn finish_initial_events(&mut self) -> Box<dyn ListedObjects + 'a>;
}

/// The kind's side of a reflector: its lister-watcher, store and admission.
pub(super) struct Typed<K, L, S> {
    /// The reflector's name, for logs.
    pub(super) name: String,
    pub(super) lister_watcher: L,
    pub(super) store: S,
    pub(super) admission: Admission<K>,
    pub(super) expected_gvk: Option<GroupVersionKind>,
}

impl<K, L, S> KindIo for Typed<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    fn list<'a>(
        &'a self,
        options: ListOptions,
        page_size: i64,
    ) -> BoxFuture<'a, Result<Listing<'a>, PagedListError<SourceError>>> {
        Box::pin(async move {
            (self.list_at(options, page_size).await).map_err(|e| e.map_lister(SourceError::new))
        })
    }

    fn watch<'a>(
        &'a self,
        options: ListOptions,
        idle_timeout: Option<Duration>,
        initial_events: bool,
    ) -> BoxFuture<'a, Result<Box<dyn EventSource<'a> + 'a>, SourceError>> {
        Box::pin(async move {
            let initial = initial_events.then(|| {
                let indexers = (self.admission.known_objects.as_ref())
                    .filter(|_| self.admission.codec.is_some())
                    .map(|store| store.current_indexers());
                InitialEvents::<K>::new(self.admission.codec.clone(), indexers)
            });
            let stream = watch_with_deadline(&self.lister_watcher, &options, idle_timeout)
                .await
                .map_err(SourceError::new)?;
            let source: Box<dyn EventSource<'a> + 'a> = Box::new(TypedSource {
                io: self,
                stream,
                initial,
            });
            Ok(source)
        })
    }

    fn list_identities(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<Vec<Identity>, PagedListError<SourceError>>> {
        Box::pin(async move {
            let paged = self
                .list_admitted(&options, DEFAULT_PAGE_SIZE, &|obj| Ok(Some(Arc::new(obj))))
                .await
                .map_err(|e| e.map_lister(SourceError::new))?;
            let objects = paged
                .list
                .items
                .into_iter()
                .filter_map(|o| o.ok().flatten());
            Ok(objects.map(|o| identity(&*o)).collect())
        })
    }

    fn resync(&self) -> Result<(), StoreError> {
        self.store.resync()
    }

    fn omits_managed_fields(&self) -> bool {
        self.admission.omits_managed_fields()
    }

    fn with_source_type(&self, err: ReflectorError<SourceError>, f: &dyn Fn(&dyn WatchError)) {
        f(&err.into_source_type::<L::Error>());
    }
}

impl<K, L, S> Typed<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    async fn list_at(
        &self,
        options: ListOptions,
        page_size: i64,
    ) -> Result<Listing<'_>, PagedListError<L::Error>> {
        let Some(codec) = &self.admission.codec else {
            let admit = |obj| self.admission.admit(obj).map(Some);
            let paged = self.list_admitted(&options, page_size, &admit).await?;
            return Ok(self.listing(paged, |items| {
                let objects = items.into_iter().filter_map(Result::transpose);
                objects.collect::<Result<_, _>>().map(Listed::Decoded)
            }));
        };
        let mut encoded = EncodedList::new(codec.clone());
        if let Some(store) = &self.admission.known_objects {
            encoded = encoded.indexed_by(store.current_indexers());
        }
        let encoded = Mutex::new(encoded);
        let admit = |obj| self.admission.admit_encoded(obj, &encoded).map(|()| None);
        let paged = self.list_admitted(&options, page_size, &admit).await?;
        Ok(self.listing(paged, |items| {
            let failed = items.into_iter().find_map(Result::err);
            failed.map_or_else(|| Ok(Listed::Encoded(encoded.into_inner())), Err)
        }))
    }

    /// One paged list, `admit` applied to each item as its page arrives. Every list of the
    /// kind's side goes through here with a `dyn` function, so that the pager and the
    /// decoding of pages are compiled once per kind.
    async fn list_admitted(
        &self,
        options: &ListOptions,
        page_size: i64,
        admit: &(dyn Fn(K) -> Admitted<K> + Sync),
    ) -> Result<PagedList<Admitted<K>>, PagedListError<L::Error>> {
        let pager = ListPager::new(self.lister_watcher.clone()).page_size(page_size);
        pager.list_map(options, admit).await
    }

    /// A paged list whose items (each the outcome of admitting one object) `gather` makes
    /// into the listed objects, bound for the store.
    fn listing(
        &self,
        paged: PagedList<Admitted<K>>,
        gather: impl FnOnce(Vec<Admitted<K>>) -> Result<Listed<K>, StoreError>,
    ) -> Listing<'_> {
        Listing {
            resource_version: paged.list.resource_version().unwrap_or_default().to_owned(),
            paginated: paged.paginated,
            items: gather(paged.list.items).map(|listed| self.bound_for_store(listed)),
        }
    }

    fn bound_for_store(&self, listed: Listed<K>) -> Box<dyn ListedObjects + '_> {
        Box::new(ForStore {
            listed,
            store: &self.store,
        })
    }

    /// Writes one watched object into `store` (admitted as a listed one is); a failure is
    /// logged, not fatal, as in client-go. Returns the object's resourceVersion.
    fn write(&self, store: &dyn Store<K>, obj: K, write: Write) -> String {
        let rv = obj.resource_version().unwrap_or_default().to_owned();
        let written = self.admission.admit(obj).and_then(|obj| match write {
            Write::Add => store.add(obj),
            Write::Update => store.update(obj),
            Write::Delete => store.delete(obj.into()),
        });
        if let Err(e) = written {
            tracing::error!(reflector = %self.name, error = %e, ?write, "unable to write a watch event's object to the store");
        }
        rv
    }

    /// Whether a watched object is of the expected kind (only dynamic objects can differ).
    fn expected(&self, obj: &K) -> bool {
        is_expected(obj, &self.name, self.expected_gvk.as_ref())
    }
}

/// [`Typed::expected`], not generic: whether `obj` is of the expected kind — no `Table`
/// object, and a dynamic object of `expected` if given.
fn is_expected(obj: &dyn Any, reflector: &str, expected: Option<&GroupVersionKind>) -> bool {
    let types = obj
        .downcast_ref::<DynamicObject>()
        .and_then(|o| o.types.as_ref())
        .or_else(|| {
            obj.downcast_ref::<kclient_core::PartialObjectMetadata>()
                .and_then(|o| o.types.as_ref())
        });
    // A server asked for tables answers with Table objects: they are no objects of the
    // resource and never reach the store (client-go skips them too).
    if types.is_some_and(|t| {
        t.kind == "Table"
            && matches!(
                t.api_version.as_str(),
                "meta.k8s.io/v1" | "meta.k8s.io/v1beta1"
            )
    }) {
        tracing::debug!(reflector, "a Table object in the watch; skipped");
        return false;
    }
    let Some(expected) = expected else {
        return true;
    };
    let Some(dynamic) = obj.downcast_ref::<DynamicObject>() else {
        return true;
    };
    let actual = dynamic
        .types
        .as_ref()
        .and_then(|t| GroupVersionKind::from_api_version_kind(&t.api_version, &t.kind).ok());
    if actual.as_ref() == Some(expected) {
        return true;
    }
    tracing::error!(reflector, expected = ?expected, actual = ?actual, "unexpected watch event object kind; skipped");
    false
}

/// What a watch event does to the store.
#[derive(Debug, Clone, Copy)]
enum Write {
    Add,
    Update,
    Delete,
}

/// What a list makes of each item as its page arrives: the object as it goes into the store,
/// nothing (it went into an encoded list), or the error admitting it.
type Admitted<K> = Result<Option<Arc<K>>, StoreError>;

/// What the consistency check compares of `obj`.
fn identity<K: Resource>(obj: &K) -> Identity {
    (
        kclient_core::meta_namespace_key(obj),
        obj.meta().uid.clone().unwrap_or_default(),
        obj.meta().resource_version.clone().unwrap_or_default(),
    )
}

/// Listed objects and the store they replace the content of.
struct ForStore<'a, K, S> {
    listed: Listed<K>,
    store: &'a S,
}

impl<K, S> ListedObjects for ForStore<'_, K, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    S: Store<K>,
{
    fn len(&self) -> usize {
        match &self.listed {
            Listed::Decoded(items) => items.len(),
            Listed::Encoded(list) => list.len(),
        }
    }

    fn identities(&self) -> Vec<Identity> {
        match &self.listed {
            Listed::Decoded(objects) => objects.iter().map(|o| identity(&**o)).collect(),
            Listed::Encoded(list) => (0..list.len())
                .filter_map(|i| list.decode(i)?.ok())
                .map(|o| identity(&o))
                .collect(),
        }
    }

    fn replace(self: Box<Self>, resource_version: &str) -> Result<(), StoreError> {
        match self.listed {
            Listed::Decoded(items) => self.store.replace(items, resource_version),
            Listed::Encoded(list) => self.store.replace_encoded(list, resource_version),
        }
    }
}

/// A typed watch stream, writing into the store, or into the streaming list's initial
/// events until they are handed over.
struct TypedSource<'a, K, L: ListerWatcher<K>, S> {
    io: &'a Typed<K, L, S>,
    stream: WatchStream<K, L::Error>,
    initial: Option<InitialEvents<K>>,
}

impl<'a, K, L, S> TypedSource<'a, K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// Where the events go: the initial events until they are handed over, the store after.
    fn target(&self) -> &dyn Store<K> {
        match &self.initial {
            Some(initial) => initial,
            None => &self.io.store,
        }
    }

    fn write(&self, obj: K, write: Write) -> String {
        self.io.write(self.target(), obj, write)
    }
}

impl<'a, K, L, S> EventSource<'a> for TypedSource<'a, K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Option<Step>> {
        let event = match self.stream.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(source))) => {
                return Poll::Ready(Some(Step::Failed(SourceError::new(source))))
            }
            Poll::Ready(Some(Ok(event))) => event,
        };
        // Matched here rather than in a function of its own: a `WatchEvent` holds its object
        // inline, and passing it on would copy it once more per event (measured: 15% of the
        // watch path with Pods).
        Poll::Ready(Some(match event {
            WatchEvent::Error(status) => Step::Error(status),
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                if !self.io.expected(&obj) =>
            {
                Step::Skipped
            }
            WatchEvent::Added(obj) => Step::Written(self.write(obj, Write::Add)),
            WatchEvent::Modified(obj) => Step::Written(self.write(obj, Write::Update)),
            WatchEvent::Deleted(obj) => Step::Written(self.write(obj, Write::Delete)),
            WatchEvent::Bookmark(bookmark) => {
                // client-go's reflector hands a bookmark to a store that takes them
                // (`ReflectorBookmarkStore`): a RealFIFO queues it for the informer's store.
                self.target().bookmark(&bookmark.resource_version);
                Step::Bookmark {
                    initial_events_end: bookmark.is_initial_events_end(),
                    resource_version: bookmark.resource_version,
                }
            }
        }))
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.target().update_resource_version(resource_version);
    }

    fn finish_initial_events(&mut self) -> Box<dyn ListedObjects + 'a> {
        let listed = match self.initial.take() {
            Some(initial) => initial.into_listed(),
            None => Listed::Decoded(Vec::new()),
        };
        self.io.bound_for_store(listed)
    }
}
