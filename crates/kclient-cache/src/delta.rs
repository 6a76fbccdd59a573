//! Deltas: the changes a FIFO queues between the reflector and the informer (client-go's
//! `Delta`, `Deltas` and `DeltaType`).
//!
//! A [`Delta`] carries the object's state **after** the change; for a deletion, its last
//! state before it, or a [`DeletedFinalStateUnknown`] tombstone when the deletion was
//! inferred from a relist. [`Deltas`] are ordered **oldest first**: index 0 is
//! [`Deltas::oldest`], the last element [`Deltas::newest`] (one of the seeds says the
//! opposite; client-go's code is as here).
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Delta, DeltaType, Deltas};
//!
//! let v1 = Arc::new(Pod::default());
//! let v2 = Arc::new(Pod::default());
//! let deltas = Deltas::from(vec![Delta::Added(v1.clone()), Delta::Updated(v2.clone())]);
//! assert_eq!(deltas.oldest().unwrap().delta_type(), DeltaType::Added);
//! assert!(Arc::ptr_eq(deltas.newest().unwrap().object().unwrap(), &v2));
//! ```
//!
//! [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use kclient_core::DeletedObject;

use crate::key_func::{KeyFunc, KeyFuncError};
use crate::representation::EncodedList;

/// The kind of a change (client-go's `DeltaType`, with the same spelling in `Display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was added.
    Added,
    /// The object was updated.
    Updated,
    /// The object was deleted.
    Deleted,
    /// A relist found the object (DeltaFIFO with `emit_delta_type_replaced`, RealFIFO
    /// without atomic replaces).
    Replaced,
    /// A periodic resync replayed the object (or, without `emit_delta_type_replaced`, a
    /// relist found it).
    Sync,
    /// A whole relist, as one delta (RealFIFO): the consumer works out the deletions.
    ReplacedAll,
    /// A whole periodic resync, as one delta (RealFIFO).
    SyncAll,
    /// A watch bookmark, as one delta (RealFIFO): the consumer's store records its
    /// resourceVersion.
    Bookmark,
}

impl DeltaType {
    /// client-go's spelling: `"Added"`, `"Updated"`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "Added",
            Self::Updated => "Updated",
            Self::Deleted => "Deleted",
            Self::Replaced => "Replaced",
            Self::Sync => "Sync",
            Self::ReplacedAll => "ReplacedAll",
            Self::SyncAll => "SyncAll",
            Self::Bookmark => "Bookmark",
        }
    }
}

impl fmt::Display for DeltaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a [`Delta::ReplacedAll`] carries: the relisted objects (already transformed) and the
/// list's resourceVersion (client-go's `ReplacedAllInfo`).
pub struct ReplacedAllInfo<K> {
    /// The objects the list returned.
    pub objects: Vec<Arc<K>>,
    /// The objects the list returned, still encoded: what a compact informer's reflector
    /// queues ([`Store::replace_encoded`](crate::Store::replace_encoded)); `objects` is then
    /// empty. `None` for a list of decoded objects.
    pub encoded: Option<EncodedList<K>>,
    /// The list's resourceVersion.
    pub resource_version: String,
}

impl<K> ReplacedAllInfo<K> {
    /// How many objects the list returned.
    pub fn len(&self) -> usize {
        self.objects.len() + self.encoded.as_ref().map_or(0, EncodedList::len)
    }

    /// Whether the list was empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K> Clone for ReplacedAllInfo<K> {
    fn clone(&self) -> Self {
        Self {
            objects: self.objects.clone(),
            encoded: self.encoded.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

impl<K> fmt::Debug for ReplacedAllInfo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplacedAllInfo")
            .field("objects", &self.len())
            .field("resource_version", &self.resource_version)
            .finish()
    }
}

/// What a [`Delta::Bookmark`] carries (client-go's `BookmarkInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookmarkInfo {
    /// The resourceVersion of the watch bookmark that queued the delta.
    pub resource_version: String,
}

/// One change to one object (client-go's `Delta{Type, Object}`), with the object as the
/// `Arc` the store will hold.
pub enum Delta<K> {
    /// The object after it was added.
    Added(Arc<K>),
    /// The object after it was updated.
    Updated(Arc<K>),
    /// The deleted object's last state, or a tombstone.
    Deleted(DeletedObject<K>),
    /// The object as a relist found it.
    Replaced(Arc<K>),
    /// The object as a resync (or a relist without `Replaced`) replayed it.
    Sync(Arc<K>),
    /// A whole relist (RealFIFO).
    ReplacedAll(ReplacedAllInfo<K>),
    /// A whole resync (RealFIFO).
    SyncAll,
    /// A watch bookmark (RealFIFO, client-go's `Delta{Type: Bookmark}`): no object changed;
    /// the consumer's store records the resourceVersion ([`Store::bookmark`](crate::Store::bookmark)).
    Bookmark(BookmarkInfo),
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Added(o) => Self::Added(Arc::clone(o)),
            Self::Updated(o) => Self::Updated(Arc::clone(o)),
            Self::Deleted(o) => Self::Deleted(o.clone()),
            Self::Replaced(o) => Self::Replaced(Arc::clone(o)),
            Self::Sync(o) => Self::Sync(Arc::clone(o)),
            Self::ReplacedAll(i) => Self::ReplacedAll(i.clone()),
            Self::SyncAll => Self::SyncAll,
            Self::Bookmark(b) => Self::Bookmark(b.clone()),
        }
    }
}

impl<K> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deleted(DeletedObject::Tombstone(t)) => {
                write!(f, "Deleted(DeletedFinalStateUnknown {:?})", t.key)
            }
            Self::ReplacedAll(info) => write!(f, "ReplacedAll({info:?})"),
            Self::SyncAll => f.write_str("SyncAll"),
            Self::Bookmark(b) => write!(f, "Bookmark({:?})", b.resource_version),
            other => write!(f, "{}", other.delta_type()),
        }
    }
}

impl<K> Delta<K> {
    /// The kind of change.
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Self::Added(_) => DeltaType::Added,
            Self::Updated(_) => DeltaType::Updated,
            Self::Deleted(_) => DeltaType::Deleted,
            Self::Replaced(_) => DeltaType::Replaced,
            Self::Sync(_) => DeltaType::Sync,
            Self::ReplacedAll(_) => DeltaType::ReplacedAll,
            Self::SyncAll => DeltaType::SyncAll,
            Self::Bookmark(_) => DeltaType::Bookmark,
        }
    }

    /// The object this delta is about, as far as it is known: `None` for a tombstone without
    /// a last state, for the whole-store deltas and for a bookmark.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Added(o) | Self::Updated(o) | Self::Replaced(o) | Self::Sync(o) => Some(o),
            Self::Deleted(d) => d.last_known(),
            Self::ReplacedAll(_) | Self::SyncAll | Self::Bookmark(_) => None,
        }
    }

    /// client-go's `KeyOf`: a tombstone's recorded key, otherwise `key_func`'s key of the
    /// object; an error for the whole-store deltas and bookmarks, which have no key.
    pub fn key(&self, key_func: &KeyFunc<K>) -> Result<String, KeyFuncError> {
        match self {
            Self::Deleted(DeletedObject::Tombstone(t)) => Ok(t.key.clone()),
            Self::Deleted(DeletedObject::Object(o))
            | Self::Added(o)
            | Self::Updated(o)
            | Self::Replaced(o)
            | Self::Sync(o) => key_func.key(o),
            Self::ReplacedAll(_) | Self::SyncAll => Err(KeyFuncError::described(
                self.delta_type().to_string(),
                "a whole-store delta has no key",
            )),
            Self::Bookmark(_) => Err(KeyFuncError::described(
                self.delta_type().to_string(),
                "a bookmark has no key",
            )),
        }
    }

    /// Whether this is a [`Delta::Deleted`] carrying a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Deleted(DeletedObject::Tombstone(_)))
    }

    /// Whether the two deltas are the same change of the same object (`Arc` identity).
    pub fn same_as(&self, other: &Self) -> bool {
        fn same<K>(a: &DeletedObject<K>, b: &DeletedObject<K>) -> bool {
            match (a, b) {
                (DeletedObject::Object(a), DeletedObject::Object(b)) => Arc::ptr_eq(a, b),
                (DeletedObject::Tombstone(a), DeletedObject::Tombstone(b)) => a == b,
                _ => false,
            }
        }
        match (self, other) {
            (Self::Added(a), Self::Added(b))
            | (Self::Updated(a), Self::Updated(b))
            | (Self::Replaced(a), Self::Replaced(b))
            | (Self::Sync(a), Self::Sync(b)) => Arc::ptr_eq(a, b),
            (Self::Deleted(a), Self::Deleted(b)) => same(a, b),
            (Self::ReplacedAll(a), Self::ReplacedAll(b)) => {
                a.resource_version == b.resource_version
                    && a.objects.len() == b.objects.len()
                    && a.objects
                        .iter()
                        .zip(&b.objects)
                        .all(|(x, y)| Arc::ptr_eq(x, y))
            }
            (Self::SyncAll, Self::SyncAll) => true,
            (Self::Bookmark(a), Self::Bookmark(b)) => a == b,
            _ => false,
        }
    }
}

/// The deltas of one key, oldest first (client-go's `Deltas`). Pops hand a whole `Deltas`
/// to the process function.
pub struct Deltas<K>(Vec<Delta<K>>);

impl<K> Deltas<K> {
    /// No deltas.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// The oldest delta (index 0).
    pub fn oldest(&self) -> Option<&Delta<K>> {
        self.0.first()
    }

    /// The newest delta (the last one).
    pub fn newest(&self) -> Option<&Delta<K>> {
        self.0.last()
    }

    /// The deltas as a `Vec`.
    pub fn into_vec(self) -> Vec<Delta<K>> {
        self.0
    }

    pub(crate) fn push(&mut self, delta: Delta<K>) {
        self.0.push(delta);
    }

    /// client-go's `dedupDeltas`: if the two newest deltas are both deletions, they become
    /// one — the older, unless the older is a tombstone (keep the one with more
    /// information). No other pair is ever merged: an add, update or sync cannot be merged
    /// without the full history.
    pub(crate) fn dedup_newest(&mut self) {
        let n = self.0.len();
        if n < 2 {
            return;
        }
        if let (Delta::Deleted(_), Delta::Deleted(_)) = (&self.0[n - 2], &self.0[n - 1]) {
            let newest = self.0.pop();
            if self.0[n - 2].is_tombstone() {
                if let Some(newest) = newest {
                    self.0[n - 2] = newest;
                }
            }
        }
    }
}

impl<K> Default for Deltas<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> fmt::Debug for Deltas<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

impl<K> Deref for Deltas<K> {
    type Target = [Delta<K>];

    fn deref(&self) -> &[Delta<K>] {
        &self.0
    }
}

impl<K> From<Vec<Delta<K>>> for Deltas<K> {
    fn from(deltas: Vec<Delta<K>>) -> Self {
        Self(deltas)
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = std::vec::IntoIter<Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
