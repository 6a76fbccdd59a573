//! [`Announced`]: a notification on its way to the handlers — ready, or the add of an object
//! a compact informer listed, still encoded ([`EncodedAdd`]). An encoded add is decoded when
//! a handler is about to be called, on that handler's lane, once for all the handlers: a
//! compact informer's sync decodes nothing on the informer's own thread for its handlers,
//! and holds no decoded copy of the list while they catch up (each object is decoded, handed
//! to the handlers and dropped, one at a time).
//!
//! The listeners queue an announcement with its kind erased ([`Queued`]), so that the
//! listeners and the fan-out are compiled once, not once per kind a program caches.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use kclient_core::{Resource, ResourceExt};

use crate::process_deltas::Notification;
use crate::representation::ObjectCodec;
use crate::stored::Encoded;

/// A notification as the informer hands it to its listeners.
pub(crate) enum Announced<K> {
    /// Ready to hand to a handler.
    Ready(Notification<K>),
    /// An add of a listed object, decoded when first handled.
    EncodedAdd(Arc<EncodedAdd<K>>),
}

impl<K> Clone for Announced<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Ready(notification) => Self::Ready(notification.clone()),
            Self::EncodedAdd(add) => Self::EncodedAdd(Arc::clone(add)),
        }
    }
}

/// The add of an object listed encoded: its key (to name it in a log), its bytes and codec,
/// and the object once a listener has decoded it (shared with the other listeners until the
/// last one has handled it).
pub(crate) struct EncodedAdd<K> {
    key: String,
    bytes: Encoded,
    codec: ObjectCodec<K>,
    is_in_initial_list: bool,
    decoded: OnceLock<Option<Arc<K>>>,
}

impl<K> Announced<K> {
    /// The add of the object `key`, listed as `bytes` by `codec`.
    pub(crate) fn encoded_add(
        key: &str,
        bytes: &Encoded,
        codec: &ObjectCodec<K>,
        is_in_initial_list: bool,
    ) -> Self {
        Self::EncodedAdd(Arc::new(EncodedAdd {
            key: key.to_owned(),
            bytes: bytes.clone(),
            codec: codec.clone(),
            is_in_initial_list,
            decoded: OnceLock::new(),
        }))
    }

    /// Whether this is an add of the initial list (client-go's `isInInitialList`).
    pub(crate) fn is_initial_add(&self) -> bool {
        match self {
            Self::Ready(Notification::Add {
                is_in_initial_list, ..
            }) => *is_in_initial_list,
            Self::Ready(_) => false,
            Self::EncodedAdd(add) => add.is_in_initial_list,
        }
    }

    /// The notification, decoding an encoded add if no listener has yet. `None` only if its
    /// bytes do not decode — which the store's round-trip check rules out for its codec; it is
    /// logged as an error, naming the object.
    pub(crate) fn notification(self) -> Option<Notification<K>> {
        match self {
            Self::Ready(notification) => Some(notification),
            Self::EncodedAdd(add) => {
                let obj = add.decoded.get_or_init(|| {
                    add.codec
                        .decode(&add.bytes.slice)
                        .map(Arc::new)
                        .map_err(|err| {
                            tracing::error!(
                                key = %add.key,
                                codec = add.codec.name(),
                                "a listed object does not decode for its handlers; its add \
                                 is skipped: {err}"
                            );
                        })
                        .ok()
                });
                Some(Notification::Add {
                    obj: Arc::clone(obj.as_ref()?),
                    is_in_initial_list: add.is_in_initial_list,
                })
            }
        }
    }
}

/// An announcement as the listeners queue it: its kind erased, shared by every listener it
/// goes to. The listener's handler, made for the informer's kind, takes it back
/// ([`Queued::announced`]).
#[derive(Clone)]
pub(crate) struct Queued {
    is_initial_add: bool,
    announced: Arc<dyn Any + Send + Sync>,
}

impl Queued {
    pub(crate) fn new<K: Send + Sync + 'static>(announced: Announced<K>) -> Self {
        Self {
            is_initial_add: announced.is_initial_add(),
            announced: Arc::new(announced),
        }
    }

    /// Whether this is an add of the initial list (client-go's `isInInitialList`).
    pub(crate) fn is_initial_add(&self) -> bool {
        self.is_initial_add
    }

    /// The announcement, if it is of kind `K` (always, for the informer of `K`'s listeners).
    pub(crate) fn announced<K: 'static>(&self) -> Option<&Announced<K>> {
        self.announced.downcast_ref()
    }
}

impl<K: Resource> Announced<K> {
    /// Whether this is a resync's update (an update that did not change the
    /// resourceVersion), which only the handlers due for a resync get.
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self, Self::Ready(Notification::Update { old, new })
            if old.resource_version() == new.resource_version())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn encoded(cm: &ConfigMap) -> Encoded {
        let bytes = ObjectCodec::<ConfigMap>::json().encode(cm).unwrap();
        Encoded::from_header_and_slice((), &bytes)
    }

    /// An encoded add is decoded once for every listener that handles it, and what they get
    /// is the listed object.
    #[test]
    fn an_encoded_add_is_decoded_once_for_all_its_listeners() {
        let decodes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let codec = crate::representation::tests::counting_json(&decodes);
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        let add = Announced::encoded_add("ns/a", &encoded(&cm), &codec, true);
        assert!(add.is_initial_add());
        assert!(!add.is_sync());
        let (first, second) = (add.clone(), add);
        let objects: Vec<Arc<ConfigMap>> = [first, second]
            .into_iter()
            .map(|a| match a.notification() {
                Some(Notification::Add {
                    obj,
                    is_in_initial_list: true,
                }) => obj,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(*objects[0], cm);
        assert!(Arc::ptr_eq(&objects[0], &objects[1]));
        assert_eq!(decodes.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    /// Bytes that do not decode: no notification (and an error logged), never a panic.
    #[test]
    fn an_encoded_add_that_does_not_decode_is_skipped() {
        let bytes = Encoded::from_header_and_slice((), b"{");
        let add = Announced::encoded_add("ns/a", &bytes, &ObjectCodec::<ConfigMap>::json(), false);
        assert!(add.clone().notification().is_none());
        assert!(add.notification().is_none());
    }
}
