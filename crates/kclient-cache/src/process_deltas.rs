//! [`process_deltas()`]: applies popped deltas to the consumer's [`Indexer`] and says what
//! happened, as [`Notification`]s for event handlers (client-go's `processDeltas` and
//! `processReplacedAllInfo`, the core of `HandleDeltas`).
//!
//! The rules are client-go's:
//!
//! * The indexer is updated **before** the notification is given, so a handler that looks
//!   an object up finds it.
//! * Add versus update is decided by **the indexer**, not by the delta's type: an `Added`
//!   for a cached object is an update, a `Sync` for an unknown one an add.
//! * A `Deleted` removes the object and notifies a deletion, with the tombstone if that is
//!   what the delta carries.
//! * A `ReplacedAll` (RealFIFO's relist) replaces the indexer's content, then notifies a
//!   deletion (a [`DeletedFinalStateUnknown`] with the cached object) for every cached key the
//!   list no longer has, then an add or update for each listed object, in list order.
//! * A `SyncAll` (RealFIFO's resync) notifies an update `(obj, obj)` for every cached object.
//! * A `Bookmark` (RealFIFO's watch bookmark) notifies nothing: the indexer records its
//!   resourceVersion ([`Indexer::bookmark`]). Every other change records its object's (or the
//!   list's), so the indexer's
//!   [`last_store_sync_resource_version`](Indexer::last_store_sync_resource_version) is that
//!   of the newest change the handlers were given.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{process_deltas, Delta, Indexer, Indexers, KeyFunc, Notification};
//!
//! let indexer = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), Indexers::<Pod>::namespace());
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("a".into());
//! let pod = Arc::new(pod);
//!
//! let mut seen = Vec::new();
//! process_deltas(&indexer, &[Delta::Added(pod.clone()), Delta::Sync(pod.clone())], false, |n| {
//!     seen.push(match n {
//!         Notification::Add { .. } => "add",
//!         Notification::Update { .. } => "update",
//!         Notification::Delete(_) => "delete",
//!     })
//! })
//! .unwrap();
//! assert_eq!(seen, ["add", "update"]);
//! assert_eq!(indexer.len(), 1);
//! ```
//!
//! [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kclient_core::{DeletedFinalStateUnknown, DeletedObject, Resource};

use crate::announced::Announced;
use crate::delta::{Delta, ReplacedAllInfo};
use crate::indexer::Indexer;
use crate::representation::EncodedList;
use crate::store::StoreError;

/// What an event handler is told (client-go's `OnAdd`, `OnUpdate`, `OnDelete` calls).
pub enum Notification<K> {
    /// A new object for the cache.
    Add {
        /// The object.
        obj: Arc<K>,
        /// Whether it came with the initial list (client-go's `isInInitialList`).
        is_in_initial_list: bool,
    },
    /// A cached object changed (or was replayed: then `old` and `new` may be the same).
    Update {
        /// The object as the cache had it.
        old: Arc<K>,
        /// The object now.
        new: Arc<K>,
    },
    /// An object left the cache: its last state, or a tombstone.
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Self::Delete(obj) => Self::Delete(obj.clone()),
        }
    }
}

impl<K> fmt::Debug for Notification<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add {
                is_in_initial_list, ..
            } => write!(f, "Add {{ is_in_initial_list: {is_in_initial_list} }}"),
            Self::Update { old, new } => {
                write!(f, "Update {{ same: {} }}", Arc::ptr_eq(old, new))
            }
            Self::Delete(DeletedObject::Object(_)) => f.write_str("Delete"),
            Self::Delete(DeletedObject::Tombstone(t)) => {
                write!(f, "Delete(DeletedFinalStateUnknown {:?})", t.key)
            }
        }
    }
}

/// Applies `deltas`, oldest first, to `indexer`, calling `notify` after each change. Stops at
/// the first store error (a key or index function failing), leaving the deltas before it
/// applied.
pub fn process_deltas<K: Resource>(
    indexer: &Indexer<K>,
    deltas: &[Delta<K>],
    is_in_initial_list: bool,
    mut notify: impl FnMut(Notification<K>),
) -> Result<(), StoreError> {
    process_deltas_for(indexer, deltas, is_in_initial_list, true, |announced| {
        if let Some(notification) = announced.notification() {
            notify(notification);
        }
    })
}

/// [`process_deltas`] for an informer, told whether anyone listens: without listeners, an
/// encoded list's objects are not announced; with listeners, each listed object new to the
/// cache is announced still encoded ([`Announced::EncodedAdd`]), decoded on a handler's lane.
pub(crate) fn process_deltas_for<K: Resource>(
    indexer: &Indexer<K>,
    deltas: &[Delta<K>],
    is_in_initial_list: bool,
    listened: bool,
    mut notify: impl FnMut(Announced<K>),
) -> Result<(), StoreError> {
    for delta in deltas {
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                match indexer.get(obj)? {
                    Some(old) => {
                        indexer.update(Arc::clone(obj))?;
                        notify(Announced::Ready(Notification::Update {
                            old,
                            new: Arc::clone(obj),
                        }));
                    }
                    None => {
                        indexer.add(Arc::clone(obj))?;
                        notify(Announced::Ready(Notification::Add {
                            obj: Arc::clone(obj),
                            is_in_initial_list,
                        }));
                    }
                }
            }
            Delta::Deleted(obj) => {
                indexer.delete(obj.clone())?;
                notify(Announced::Ready(Notification::Delete(obj.clone())));
            }
            Delta::ReplacedAll(ReplacedAllInfo {
                encoded: Some(list),
                resource_version,
                ..
            }) => {
                process_replaced_encoded(indexer, list, is_in_initial_list, listened, &mut notify)?;
                indexer.bookmark(resource_version);
            }
            Delta::ReplacedAll(info) => {
                process_replaced_all(indexer, info, is_in_initial_list, &mut notify)?;
            }
            // client-go's `processDeltas` for a Bookmark: `clientState.Bookmark(rv)`.
            Delta::Bookmark(info) => indexer.bookmark(&info.resource_version),
            Delta::SyncAll => {
                for obj in indexer.list() {
                    notify(Announced::Ready(Notification::Update {
                        old: Arc::clone(&obj),
                        new: obj,
                    }));
                }
            }
        }
    }
    Ok(())
}

/// [`process_replaced_all`] for a list of encoded objects: the same rules, with no object
/// decoded to be stored (the list carries its index values) and, if `listened`, each object
/// new to the cache announced encoded; an object that replaces a cached one is decoded for
/// its update. A relist holds the objects it replaces, decoded, until they are announced.
fn process_replaced_encoded<K>(
    indexer: &Indexer<K>,
    list: &EncodedList<K>,
    is_in_initial_list: bool,
    listened: bool,
    notify: &mut impl FnMut(Announced<K>),
) -> Result<(), StoreError> {
    let listed: HashSet<&str, RandomState> = list.keys().collect();
    let replaced: Vec<Option<Arc<K>>> = if indexer.is_empty() || !listened {
        Vec::new()
    } else {
        list.keys().map(|key| indexer.get_by_key(key)).collect()
    };
    let deletions = unlisted(indexer, |key| listed.contains(key));
    indexer.replace_encoded(list)?;
    announce_deletions(deletions, notify);
    if !listened {
        return Ok(());
    }
    for (i, (key, bytes)) in list.entries().iter().enumerate() {
        match replaced.get(i).cloned().flatten() {
            Some(old) => {
                let new = list.codec().decode(&bytes.slice);
                let new = Arc::new(new.map_err(StoreError::Codec)?);
                notify(Announced::Ready(Notification::Update { old, new }));
            }
            None => notify(Announced::encoded_add(
                key,
                bytes,
                list.codec(),
                is_in_initial_list,
            )),
        }
    }
    Ok(())
}

/// The tombstones of the cached objects a relist no longer has (`is_listed` false for
/// their keys), each with the object as cached.
fn unlisted<K>(
    indexer: &Indexer<K>,
    is_listed: impl Fn(&str) -> bool,
) -> Vec<DeletedFinalStateUnknown<K>> {
    indexer
        .list_keys()
        .into_iter()
        .filter(|k| !is_listed(k))
        .map(|key| {
            let obj = indexer.get_by_key(&key);
            DeletedFinalStateUnknown { key, obj }
        })
        .collect()
}

fn announce_deletions<K>(
    deletions: Vec<DeletedFinalStateUnknown<K>>,
    notify: &mut impl FnMut(Announced<K>),
) {
    for tombstone in deletions {
        notify(Announced::Ready(Notification::Delete(
            DeletedObject::Tombstone(tombstone),
        )));
    }
}

/// What a relisted object is for handlers: an update from the cached object, or an add.
fn replacement<K>(old: Option<Arc<K>>, new: Arc<K>, is_in_initial_list: bool) -> Notification<K> {
    match old {
        Some(old) => Notification::Update { old, new },
        None => Notification::Add {
            obj: new,
            is_in_initial_list,
        },
    }
}

/// client-go's `processReplacedAllInfo`.
fn process_replaced_all<K>(
    indexer: &Indexer<K>,
    info: &ReplacedAllInfo<K>,
    is_in_initial_list: bool,
    notify: &mut impl FnMut(Announced<K>),
) -> Result<(), StoreError> {
    let key_func = indexer.key_func();
    let mut listed = HashSet::<String, RandomState>::with_capacity_and_hasher(
        info.objects.len(),
        RandomState::default(),
    );
    let mut replacements = Vec::with_capacity(info.objects.len());
    for obj in &info.objects {
        let key = key_func.key(obj)?;
        replacements.push((indexer.get_by_key(&key), Arc::clone(obj)));
        listed.insert(key);
    }
    let deletions = unlisted(indexer, |key| listed.contains(key));
    indexer.replace(info.objects.clone(), &info.resource_version)?;
    announce_deletions(deletions, notify);
    for (old, new) in replacements {
        notify(Announced::Ready(replacement(old, new, is_in_initial_list)));
    }
    Ok(())
}
