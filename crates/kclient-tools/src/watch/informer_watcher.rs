//! [`InformerWatcher`]: an informer's notifications as a watch stream.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use kclient_cache::{
    new_indexer_informer, Indexer, Indexers, InformerController, ResourceEventHandler,
};
use kclient_core::{DeletedObject, ListerWatcher, Resource, WatchEvent};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What an informer's cache went through, as a stream of watch events (client-go's
/// `NewIndexerInformerWatcher`): adds as `Added` (the initial list included), updates as
/// `Modified` (resyncs and relists included), deletions as `Deleted` with the last known
/// state (a missed deletion's tombstone carries it). Unlike a watch it never breaks: the
/// informer lists again whenever the watch cannot resume.
///
/// The events queue without bound, so that a slow reader never holds the informer back
/// (client-go's informer watcher does the same). Dropping the stream stops the informer.
pub struct InformerWatcher<K> {
    events: mpsc::UnboundedReceiver<WatchEvent<Arc<K>>>,
    _stop: DropGuard,
}

/// Starts an informer over `lister_watcher` on the current tokio runtime and returns its
/// cache, the informer itself (for `has_synced`, `synced()`) and its notifications as an
/// [`InformerWatcher`] (client-go's `NewIndexerInformerWatcher`). The informer runs until the
/// watcher is dropped.
///
/// # Panics
///
/// Outside a tokio runtime, as `tokio::spawn` does.
pub fn new_indexer_informer_watcher<K, L>(
    lister_watcher: L,
) -> (Indexer<K>, InformerController<K>, InformerWatcher<K>)
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    L: ListerWatcher<K> + Clone + 'static,
{
    let (sender, events) = mpsc::unbounded_channel();
    let (indexer, controller) = new_indexer_informer(
        lister_watcher,
        Duration::ZERO,
        EventSender(sender),
        Indexers::new(),
    );
    let stop = CancellationToken::new();
    let running = controller.clone();
    let token = stop.clone();
    tokio::spawn(async move { running.run(token).await });
    let watcher = InformerWatcher {
        events,
        _stop: stop.drop_guard(),
    };
    (indexer, controller, watcher)
}

impl<K> Stream for InformerWatcher<K> {
    type Item = WatchEvent<Arc<K>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx)
    }
}

impl<K> fmt::Debug for InformerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerWatcher")
            .field("queued", &self.events.len())
            .finish_non_exhaustive()
    }
}

/// The informer's handler: every notification becomes an event on the channel.
struct EventSender<K>(mpsc::UnboundedSender<WatchEvent<Arc<K>>>);

impl<K: Send + Sync> ResourceEventHandler<K> for EventSender<K> {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        // A send fails only once the watcher is dropped, when the informer is stopping.
        let _ = self.0.send(WatchEvent::Added(Arc::clone(obj)));
    }

    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        let _ = self.0.send(WatchEvent::Modified(Arc::clone(new)));
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        match obj {
            DeletedObject::Object(o) => {
                let _ = self.0.send(WatchEvent::Deleted(Arc::clone(o)));
            }
            DeletedObject::Tombstone(tombstone) => match &tombstone.obj {
                Some(o) => {
                    let _ = self.0.send(WatchEvent::Deleted(Arc::clone(o)));
                }
                None => tracing::warn!(
                    key = %tombstone.key,
                    "a deletion without a last known state cannot be delivered as an event"
                ),
            },
        }
    }
    /// `false`: an unbounded channel's `send` never blocks.
    fn may_block(&self) -> bool {
        false
    }
}
