//! How a [`ThreadSafeStore`](crate::ThreadSafeStore) holds one object ([`Stored`]) and turns
//! objects into that form and back ([`Representation`], the live form of
//! [`CacheRepresentation`]).
//!
//! In the compact representation a read decodes; a small direct-mapped cache remembers the
//! last objects decoded or stored. Its entries are found by the address of the encoded bytes
//! they came from and hold those bytes, so an entry is either the object the store holds now
//! or unreachable: a stale object can never be handed out, and no write has to invalidate it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use triomphe::ThinArc;

use crate::representation::{CacheRepresentation, ObjectCodec};

/// Encoded bytes behind a thin pointer (8 bytes, like `Arc<K>`; `Arc<[u8]>` would be 16).
pub(crate) type Encoded = ThinArc<(), u8>;

/// One object as a compact store holds it (in its map and in each index entry: clones share
/// it). Decoded only when its codec failed on it.
pub(crate) enum Stored<K> {
    /// Decoded.
    Object(Arc<K>),
    /// Encoded by the store's codec.
    Encoded(Encoded),
}

impl<K> Clone for Stored<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(obj) => Self::Object(Arc::clone(obj)),
            Self::Encoded(bytes) => Self::Encoded(bytes.clone()),
        }
    }
}

/// A store's representation, ready to store and load objects.
pub(crate) struct Representation<K> {
    compact: Option<Compact<K>>,
}

/// The compact representation's state.
struct Compact<K> {
    codec: ObjectCodec<K>,
    /// Slot `i` holds an object decoded from (or stored as) the bytes next to it.
    recent: Box<[RecentSlot<K>]>,
    /// Whether the codec round-trips: `UNCHECKED` until the first object is stored.
    round_trip: AtomicU8,
}

/// One entry of the recently decoded objects: the bytes and what they decode to.
type RecentSlot<K> = Mutex<Option<(Encoded, Arc<K>)>>;

const UNCHECKED: u8 = 0;
const ROUND_TRIPS: u8 = 1;
const DOES_NOT_ROUND_TRIP: u8 = 2;

impl<K> Representation<K> {
    pub(crate) fn new(representation: CacheRepresentation<K>) -> Self {
        let compact = match representation {
            CacheRepresentation::Decoded => None,
            CacheRepresentation::Compact {
                codec,
                recently_decoded,
            } => Some(Compact {
                codec,
                recent: (0..recently_decoded.next_power_of_two().min(1 << 20))
                    .filter(|_| recently_decoded > 0)
                    .map(|_| Mutex::new(None))
                    .collect(),
                round_trip: AtomicU8::new(UNCHECKED),
            }),
        };
        Self { compact }
    }

    pub(crate) fn is_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// The form in which `obj` is kept: encoded in the compact representation, unless the
    /// codec fails on it (then decoded, with a warning: the object is not lost).
    pub(crate) fn store(&self, key: &[u8], obj: &Arc<K>) -> Stored<K> {
        let Some(compact) = &self.compact else {
            return Stored::Object(Arc::clone(obj));
        };
        if compact.round_trip.load(Ordering::Relaxed) == DOES_NOT_ROUND_TRIP {
            return Stored::Object(Arc::clone(obj));
        }
        let bytes = match compact.codec.encode(obj) {
            Ok(bytes) => Encoded::from_header_and_slice((), &bytes),
            Err(err) => {
                tracing::warn!(
                    key = %String::from_utf8_lossy(key),
                    codec = compact.codec.name(),
                    "compact cache: cannot encode the object, keeping it decoded: {err}"
                );
                return Stored::Object(Arc::clone(obj));
            }
        };
        if compact.round_trip.load(Ordering::Relaxed) == UNCHECKED && !compact.check(&bytes.slice) {
            return Stored::Object(Arc::clone(obj));
        }
        compact.remember(&bytes, obj);
        Stored::Encoded(bytes)
    }

    /// The form in which `obj`, listed as `bytes` by `codec`, is kept: those very bytes when
    /// they are in this store's encoding (no second encode), else as [`store`](Self::store)
    /// would keep it.
    pub(crate) fn adopt(
        &self,
        codec: &ObjectCodec<K>,
        key: &[u8],
        bytes: &Encoded,
        obj: &Arc<K>,
    ) -> Stored<K> {
        if self.compact.is_none() {
            return Stored::Object(Arc::clone(obj));
        }
        self.adopt_encoded(codec, bytes)
            .unwrap_or_else(|| self.store(key, obj))
    }

    /// `bytes` (listed by `codec`) kept as they are, when they are in this store's encoding
    /// and it round-trips; `None` when the store needs the object itself.
    pub(crate) fn adopt_encoded(
        &self,
        codec: &ObjectCodec<K>,
        bytes: &Encoded,
    ) -> Option<Stored<K>> {
        let compact = self.compact.as_ref()?;
        let round_trip = compact.round_trip.load(Ordering::Relaxed);
        let kept = compact.codec.same_as(codec)
            && round_trip != DOES_NOT_ROUND_TRIP
            && (round_trip == ROUND_TRIPS || compact.check(&bytes.slice));
        kept.then(|| Stored::Encoded(bytes.clone()))
    }

    /// The object `stored` holds; `None` only if encoded bytes fail to decode (logged as an
    /// error: the codec broke its round-trip promise).
    pub(crate) fn load(&self, key: &[u8], stored: &Stored<K>) -> Option<Arc<K>> {
        match (stored, &self.compact) {
            (Stored::Object(obj), _) => Some(Arc::clone(obj)),
            (Stored::Encoded(bytes), Some(compact)) => compact.load(key, bytes),
            (Stored::Encoded(_), None) => None,
        }
    }
}

impl<K> Compact<K> {
    /// Encodes what `bytes` decode to and compares: the check made with a store's first
    /// object. On failure every later object is kept decoded.
    fn check(&self, bytes: &[u8]) -> bool {
        let again = self
            .codec
            .decode(bytes)
            .and_then(|obj| self.codec.encode(&obj));
        let verdict = match again {
            Ok(again) if again == bytes => ROUND_TRIPS,
            Ok(_) => {
                tracing::warn!(
                    codec = self.codec.name(),
                    "compact cache: decoding an encoded object and encoding it again gives other \
                     bytes (serde attributes that skip or rename fields?); keeping objects decoded"
                );
                DOES_NOT_ROUND_TRIP
            }
            Err(err) => {
                tracing::warn!(
                    codec = self.codec.name(),
                    "compact cache: an encoded object does not decode ({err}); keeping objects \
                     decoded"
                );
                DOES_NOT_ROUND_TRIP
            }
        };
        self.round_trip.store(verdict, Ordering::Relaxed);
        verdict == ROUND_TRIPS
    }

    fn slot(&self, bytes: &Encoded) -> Option<&RecentSlot<K>> {
        if self.recent.is_empty() {
            return None;
        }
        // Allocations are 16-byte aligned: the address's low bits carry nothing.
        let address = (bytes.ptr() as usize as u64) >> 4;
        let mixed = address.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let bits = self.recent.len().trailing_zeros();
        let index = if bits == 0 { 0 } else { mixed >> (64 - bits) };
        self.recent.get(index as usize)
    }

    fn remember(&self, bytes: &Encoded, obj: &Arc<K>) {
        if let Some(slot) = self.slot(bytes) {
            *slot.lock() = Some((bytes.clone(), Arc::clone(obj)));
        }
    }

    fn load(&self, key: &[u8], bytes: &Encoded) -> Option<Arc<K>> {
        if let Some(slot) = self.slot(bytes) {
            if let Some((held, obj)) = &*slot.lock() {
                if held.ptr() == bytes.ptr() {
                    return Some(Arc::clone(obj));
                }
            }
        }
        match self.codec.decode(&bytes.slice) {
            Ok(obj) => {
                let obj = Arc::new(obj);
                self.remember(bytes, &obj);
                Some(obj)
            }
            Err(err) => {
                tracing::error!(
                    key = %String::from_utf8_lossy(key),
                    codec = self.codec.name(),
                    "compact cache: a stored object does not decode, reading it as absent: {err}"
                );
                None
            }
        }
    }
}

/// How a store keeps an object in its map and index entries: `Arc<K>` in the decoded
/// representation (one pointer), [`Stored`] in the compact one.
pub(crate) trait Slot<K>: Clone {
    /// The slot for `obj`.
    fn store(representation: &Representation<K>, key: &[u8], obj: &Arc<K>) -> Self;
    /// The slot for `obj`, listed as `bytes` by `codec` (see [`Representation::adopt`]).
    fn adopt(
        representation: &Representation<K>,
        codec: &ObjectCodec<K>,
        key: &[u8],
        bytes: &Encoded,
        obj: &Arc<K>,
    ) -> Self;
    /// The slot for an object listed as `bytes` by `codec`, without the object: `None` when
    /// the slot needs the object (see [`Representation::adopt_encoded`]).
    fn adopt_encoded(
        representation: &Representation<K>,
        codec: &ObjectCodec<K>,
        bytes: &Encoded,
    ) -> Option<Self>;
    /// The object, if the slot holds it decoded (no work to read it).
    fn decoded(&self) -> Option<&Arc<K>>;
    /// The object (decoding it if need be); `None` only if it does not decode.
    fn load(&self, representation: &Representation<K>, key: &[u8]) -> Option<Arc<K>>;
}

impl<K> Slot<K> for Arc<K> {
    fn store(_: &Representation<K>, _: &[u8], obj: &Arc<K>) -> Self {
        Arc::clone(obj)
    }

    fn adopt(
        _: &Representation<K>,
        _: &ObjectCodec<K>,
        _: &[u8],
        _: &Encoded,
        obj: &Arc<K>,
    ) -> Self {
        Arc::clone(obj)
    }

    fn adopt_encoded(_: &Representation<K>, _: &ObjectCodec<K>, _: &Encoded) -> Option<Self> {
        None
    }

    fn decoded(&self) -> Option<&Arc<K>> {
        Some(self)
    }

    fn load(&self, _: &Representation<K>, _: &[u8]) -> Option<Arc<K>> {
        Some(Arc::clone(self))
    }
}

impl<K> Slot<K> for Stored<K> {
    fn store(representation: &Representation<K>, key: &[u8], obj: &Arc<K>) -> Self {
        representation.store(key, obj)
    }

    fn adopt(
        representation: &Representation<K>,
        codec: &ObjectCodec<K>,
        key: &[u8],
        bytes: &Encoded,
        obj: &Arc<K>,
    ) -> Self {
        representation.adopt(codec, key, bytes, obj)
    }

    fn adopt_encoded(
        representation: &Representation<K>,
        codec: &ObjectCodec<K>,
        bytes: &Encoded,
    ) -> Option<Self> {
        representation.adopt_encoded(codec, bytes)
    }

    fn decoded(&self) -> Option<&Arc<K>> {
        match self {
            Stored::Object(obj) => Some(obj),
            Stored::Encoded(_) => None,
        }
    }

    fn load(&self, representation: &Representation<K>, key: &[u8]) -> Option<Arc<K>> {
        representation.load(key, self)
    }
}
