//! [`CacheRepresentation`]: how a store holds its objects — decoded (`Arc<K>`, the default)
//! or compact (each object as bytes of an [`ObjectCodec`], decoded when read).
//!
//! The compact representation trades CPU on reads for memory: a cached Pod is its protobuf
//! message (~2.5 KB without managedFields) instead of a tree of `String`s, `Option`s and
//! B-tree maps (~20 KB). Indices are still computed when an object is stored, so `by_index`
//! finds its matches without decoding anything but the matches; event handlers still get
//! decoded objects (a listed object is decoded for them on their lane, when they are called,
//! once for all of them); every read (`get`, `list`, `by_index`) decodes what it returns,
//! helped by a small cache of recently decoded objects. The figures, and when to choose
//! which, are in `docs/benchmarks.md` ("Choosing a cache representation").
//!
//! What a read gives back is what was stored, as the codec sees it. For protobuf that is
//! exactly the object for everything an API server sends; the one thing protobuf cannot tell
//! apart is an absent nested struct that Go declares as a struct rather than a pointer (a
//! Pod's `status`, a Deployment's `spec`): Go, and so every server, always sends it, and it
//! comes back as `Some` of an empty struct if it was stored as `None`.
//!
//! The compact store is compiled only with this crate's `compact` feature (in its default
//! features; the facade's `compact`, which its default `compact-protobuf` turns on). It is a
//! second copy of the store's code for every cached kind, which a program that never asks for
//! it need not build. Without the feature a store asked to be compact keeps its objects
//! decoded, logs a warning, and says so through `is_compact()`.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{CacheRepresentation, Indexers, ThreadSafeStore};
//!
//! let store =
//!     ThreadSafeStore::<Pod>::with_representation(Indexers::namespace(), CacheRepresentation::compact());
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! store.add("web", Arc::new(pod.clone())).unwrap();
//! // What comes back is a decoded copy, equal to what went in.
//! assert_eq!(*store.get("web").unwrap(), pod);
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::BoxError;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::index::Indexers;
use crate::stored::Encoded;
use crate::thread_safe_store::{index_values, IndexValues};

/// How many recently decoded objects a compact store keeps by default (see
/// [`CacheRepresentation::Compact`]).
pub const DEFAULT_RECENTLY_DECODED: usize = 256;

/// How a store holds its objects.
pub enum CacheRepresentation<K> {
    /// Each object as the `Arc<K>` it was stored as: reads hand out that `Arc` (no copy, no
    /// decoding), at the memory cost of the decoded Rust value.
    Decoded,
    /// Each object encoded by `codec`, decoded on every read (reads hand out a fresh `Arc`).
    Compact {
        /// The encoding.
        codec: ObjectCodec<K>,
        /// How many decoded objects are kept for reads of an object that has not changed
        /// since it was last decoded or stored (0 for none). The informer's own update path
        /// reads the old object twice (to tell handlers and to update indices): one entry
        /// per object being processed is enough for that.
        recently_decoded: usize,
    },
}

// Written out: a derived `Default` would require `K: Default`.
#[allow(clippy::derivable_impls)]
impl<K> Default for CacheRepresentation<K> {
    fn default() -> Self {
        Self::Decoded
    }
}

impl<K> Clone for CacheRepresentation<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Decoded => Self::Decoded,
            Self::Compact {
                codec,
                recently_decoded,
            } => Self::Compact {
                codec: codec.clone(),
                recently_decoded: *recently_decoded,
            },
        }
    }
}

impl<K> fmt::Debug for CacheRepresentation<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decoded => f.write_str("Decoded"),
            Self::Compact {
                codec,
                recently_decoded,
            } => f
                .debug_struct("Compact")
                .field("codec", &codec.name())
                .field("recently_decoded", recently_decoded)
                .finish(),
        }
    }
}

impl<K> CacheRepresentation<K> {
    /// The compact representation with the type's own encoding ([`ObjectCodec::for_type`]:
    /// protobuf for built-in kinds, JSON for the rest) and [`DEFAULT_RECENTLY_DECODED`].
    pub fn compact() -> Self
    where
        K: Serialize + DeserializeOwned + 'static,
    {
        Self::Compact {
            codec: ObjectCodec::for_type(),
            recently_decoded: DEFAULT_RECENTLY_DECODED,
        }
    }

    /// Whether this is [`Compact`](Self::Compact).
    pub fn is_compact(&self) -> bool {
        matches!(self, Self::Compact { .. })
    }
}

type EncodeFn<K> = dyn Fn(&K) -> Result<Vec<u8>, BoxError> + Send + Sync;
type DecodeFn<K> = dyn Fn(&[u8]) -> Result<K, BoxError> + Send + Sync;

/// An encoding of `K` to bytes and back, for [`CacheRepresentation::Compact`]. Cheap to
/// clone.
///
/// Decoding what was encoded must give the object back. A compact store checks that with
/// its first object (encode, decode, encode again: the same bytes) and, if it does not hold
/// — a type whose serde attributes skip fields, say — keeps its objects decoded, with a
/// warning in the log.
pub struct ObjectCodec<K> {
    name: &'static str,
    encode: Arc<EncodeFn<K>>,
    decode: Arc<DecodeFn<K>>,
}

impl<K> Clone for ObjectCodec<K> {
    fn clone(&self) -> Self {
        Self {
            name: self.name,
            encode: Arc::clone(&self.encode),
            decode: Arc::clone(&self.decode),
        }
    }
}

impl<K> fmt::Debug for ObjectCodec<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectCodec").field(&self.name).finish()
    }
}

impl<K> ObjectCodec<K> {
    /// A codec of your own: `name` appears in logs.
    pub fn new(
        name: &'static str,
        encode: impl Fn(&K) -> Result<Vec<u8>, BoxError> + Send + Sync + 'static,
        decode: impl Fn(&[u8]) -> Result<K, BoxError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            encode: Arc::new(encode),
            decode: Arc::new(decode),
        }
    }

    /// The type's protobuf message (kclient-protobuf's generated codec), for built-in kinds
    /// (of the API groups compiled in) and `PartialObjectMetadata`; `None` for any other type,
    /// and for every type without this crate's `compact-protobuf` feature (which compiles the
    /// encoders).
    pub fn protobuf() -> Option<Self>
    where
        K: 'static,
    {
        #[cfg(feature = "compact-protobuf")]
        {
            let codec = kclient_protobuf::registry::codec::<K>()?;
            Some(Self::new(
                "protobuf",
                move |obj| Ok(codec.encode_message(obj)),
                move |bytes| Ok(codec.decode_message(bytes, kclient_protobuf::Ctx::default())?),
            ))
        }
        #[cfg(not(feature = "compact-protobuf"))]
        None
    }

    /// Compact JSON (serde_json), for any serde type: custom resources, `DynamicObject`.
    pub fn json() -> Self
    where
        K: Serialize + DeserializeOwned,
    {
        Self::new(
            "json",
            |obj| Ok(serde_json::to_vec(obj)?),
            |bytes| Ok(serde_json::from_slice(bytes)?),
        )
    }

    /// [`protobuf`](Self::protobuf) where the type has it, else [`json`](Self::json).
    pub fn for_type() -> Self
    where
        K: Serialize + DeserializeOwned + 'static,
    {
        Self::protobuf().unwrap_or_else(Self::json)
    }

    /// Whether `other` is this codec (a clone of it): bytes one encoded the other decodes.
    pub fn same_as(&self, other: &ObjectCodec<K>) -> bool {
        Arc::ptr_eq(&self.encode, &other.encode) && Arc::ptr_eq(&self.decode, &other.decode)
    }

    /// The codec's name (`protobuf`, `json` or yours).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Encodes `obj`.
    pub fn encode(&self, obj: &K) -> Result<Vec<u8>, BoxError> {
        (self.encode)(obj)
    }

    /// Decodes `bytes`.
    pub fn decode(&self, bytes: &[u8]) -> Result<K, BoxError> {
        (self.decode)(bytes)
    }
}

/// A list's objects as a compact informer's reflector keeps them until they are stored: each
/// one transformed, keyed (`namespace/name`) and encoded as its page arrived, so that no
/// moment of a sync holds every decoded object (see [`Store::replace_encoded`]).
///
/// [`Store::replace_encoded`]: crate::Store::replace_encoded
pub struct EncodedList<K> {
    codec: ObjectCodec<K>,
    items: Vec<(String, Encoded)>,
    indexed: Option<Indexed<K>>,
}

/// Each item's index values, computed with `indexers` from the object as it was encoded, so
/// that storing the list needs no decode when the store's index functions are still those.
struct Indexed<K> {
    indexers: Arc<Indexers<K>>,
    /// Parallel to the items; `None` where an index function failed (the store then decodes
    /// the item and reports the failure as it would have).
    values: Vec<Option<IndexValues>>,
}

impl<K> Clone for Indexed<K> {
    fn clone(&self) -> Self {
        Self {
            indexers: Arc::clone(&self.indexers),
            values: self.values.clone(),
        }
    }
}

impl<K> Clone for EncodedList<K> {
    fn clone(&self) -> Self {
        Self {
            codec: self.codec.clone(),
            items: self.items.clone(),
            indexed: self.indexed.clone(),
        }
    }
}

impl<K> fmt::Debug for EncodedList<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncodedList")
            .field("codec", &self.codec.name())
            .field("len", &self.items.len())
            .finish()
    }
}

impl<K> EncodedList<K> {
    /// An empty list of objects encoded by `codec`.
    pub fn new(codec: ObjectCodec<K>) -> Self {
        Self {
            codec,
            items: Vec::new(),
            indexed: None,
        }
    }

    /// The same list, computing each object's index values with `indexers` as it is pushed
    /// (a store with those index functions then stores the list without decoding it).
    pub(crate) fn indexed_by(self, indexers: Arc<Indexers<K>>) -> Self {
        let values = vec![None; self.items.len()];
        self.with_index_values(indexers, values)
    }

    /// Encodes `obj` and appends it under `key`.
    pub fn push(&mut self, key: String, obj: &K) -> Result<(), BoxError> {
        let bytes = Self::encode_one(&self.codec, obj)?;
        if let Some(indexed) = &mut self.indexed {
            let values = index_values(&indexed.indexers, key.as_bytes(), obj).ok();
            indexed.values.push(values);
        }
        self.items.push((key, bytes));
        Ok(())
    }

    /// `obj` encoded by `codec`, as a list holds it.
    pub(crate) fn encode_one(codec: &ObjectCodec<K>, obj: &K) -> Result<Encoded, BoxError> {
        Ok(Encoded::from_header_and_slice((), &codec.encode(obj)?))
    }

    /// A list of objects already encoded by `codec`.
    pub(crate) fn from_entries(codec: ObjectCodec<K>, items: Vec<(String, Encoded)>) -> Self {
        Self {
            codec,
            items,
            indexed: None,
        }
    }

    /// The same list with each item's index values, computed with `indexers` (one per item,
    /// `None` where not computed).
    pub(crate) fn with_index_values(
        mut self,
        indexers: Arc<Indexers<K>>,
        values: Vec<Option<IndexValues>>,
    ) -> Self {
        debug_assert_eq!(values.len(), self.items.len());
        self.indexed = Some(Indexed { indexers, values });
        self
    }

    /// Appends the objects of `other` (encoded by the same kind of codec).
    pub fn append(&mut self, other: EncodedList<K>) {
        self.indexed = match (self.indexed.take(), other.indexed) {
            (Some(mut mine), Some(theirs)) if Arc::ptr_eq(&mine.indexers, &theirs.indexers) => {
                mine.values.extend(theirs.values);
                Some(mine)
            }
            _ => None,
        };
        self.items.extend(other.items);
    }

    /// The index values of the item at `index` computed with `indexers`, if they were.
    pub(crate) fn index_values(
        &self,
        index: usize,
        indexers: &Arc<Indexers<K>>,
    ) -> Option<&IndexValues> {
        let indexed = self.indexed.as_ref()?;
        if !Arc::ptr_eq(&indexed.indexers, indexers) {
            return None;
        }
        indexed.values.get(index)?.as_ref()
    }

    /// How many objects.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The codec the objects are encoded with.
    pub fn codec(&self) -> &ObjectCodec<K> {
        &self.codec
    }

    /// The keys, in list order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|(key, _)| key.as_str())
    }

    /// Decodes the object at `index` (in list order).
    pub fn decode(&self, index: usize) -> Option<Result<K, BoxError>> {
        let (_, bytes) = self.items.get(index)?;
        Some(self.codec.decode(&bytes.slice))
    }

    /// Every object decoded, in list order (what a store without a compact representation
    /// gets).
    pub fn decode_all(&self) -> Result<Vec<Arc<K>>, BoxError> {
        self.items
            .iter()
            .map(|(_, bytes)| self.codec.decode(&bytes.slice).map(Arc::new))
            .collect()
    }

    /// The keys and encoded objects, for a store that keeps them as they are.
    pub(crate) fn entries(&self) -> &[(String, Encoded)] {
        &self.items
    }
}

/// A list's objects as a reflector holds them until it replaces its store's content: decoded,
/// or encoded for a compact consumer.
pub(crate) enum Listed<K> {
    Decoded(Vec<Arc<K>>),
    Encoded(EncodedList<K>),
}

#[cfg(test)]
pub(crate) mod tests {
    // Without the `compact` feature the compact store's tests are left out, and their helpers
    // unused.
    #![cfg_attr(not(feature = "compact"), allow(unused_imports, dead_code))]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::index::IndexFuncError;
    use crate::ThreadSafeStore;

    /// JSON for ConfigMaps, counting its decodes (shared by the crate's unit tests).
    pub(crate) fn counting_json(decodes: &Arc<AtomicUsize>) -> ObjectCodec<ConfigMap> {
        let json = ObjectCodec::<ConfigMap>::json();
        let (encode, decodes) = (json.clone(), Arc::clone(decodes));
        ObjectCodec::new(
            "counting-json",
            move |cm: &ConfigMap| encode.encode(cm),
            move |bytes: &[u8]| {
                decodes.fetch_add(1, Ordering::Relaxed);
                json.decode(bytes)
            },
        )
    }

    fn config_map(name: &str, team: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.metadata.labels = Some([("team".to_string(), team.to_string())].into());
        cm
    }

    fn by_team(cm: &ConfigMap) -> Result<Vec<String>, IndexFuncError> {
        match cm.metadata.labels.as_ref().and_then(|l| l.get("team")) {
            Some(team) if team == "broken" => Err(IndexFuncError::new("no team")),
            Some(team) => Ok(vec![team.clone()]),
            None => Ok(Vec::new()),
        }
    }

    fn names(objects: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut names: Vec<String> = objects
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Without the `compact` feature a store asked to be compact holds its objects decoded,
    /// and says so.
    #[test]
    #[cfg(not(feature = "compact"))]
    fn compact_without_the_feature_is_decoded() {
        let compact = CacheRepresentation::Compact {
            codec: ObjectCodec::<ConfigMap>::json(),
            recently_decoded: 0,
        };
        let store = ThreadSafeStore::with_representation(Indexers::new(), compact);
        assert!(!store.is_compact());
        let cm = Arc::new(config_map("a", "x"));
        store.add("ns/a", Arc::clone(&cm)).unwrap();
        assert!(Arc::ptr_eq(&store.get("ns/a").unwrap(), &cm));
    }

    /// A list indexed with the store's own index functions is stored without decoding its
    /// items (but the one round-trip check); one indexed with functions the store no longer
    /// has is decoded item by item; either way the indices are right, and an index function
    /// that failed when the item was pushed fails the replace as it would have.
    #[test]
    #[cfg(feature = "compact")]
    fn a_list_indexed_as_it_was_encoded_is_stored_without_decoding() {
        let decodes = Arc::new(AtomicUsize::new(0));
        let codec = counting_json(&decodes);
        let store = ThreadSafeStore::with_representation(
            Indexers::new().with("team", by_team),
            CacheRepresentation::Compact {
                codec: codec.clone(),
                recently_decoded: 0,
            },
        );
        let fill = |list: &mut EncodedList<ConfigMap>, teams: &[&str]| {
            for (i, team) in teams.iter().enumerate() {
                list.push(format!("ns/cm-{i}"), &config_map(&format!("cm-{i}"), team))
                    .unwrap();
            }
        };
        let mut list = EncodedList::new(codec.clone()).indexed_by(store.current_indexers());
        fill(&mut list, &["a", "b", "a"]);
        let before = decodes.load(Ordering::Relaxed);
        store.replace_encoded(&list).unwrap();
        assert_eq!(
            decodes.load(Ordering::Relaxed) - before,
            1,
            "the round-trip check only"
        );
        assert_eq!(
            names(store.by_index("team", "a").unwrap()),
            ["cm-0", "cm-2"]
        );

        // Index functions added since: the list's values are not theirs, so items are decoded.
        let stale = store.current_indexers();
        store
            .add_indexers(Indexers::new().with("name", |cm: &ConfigMap| {
                Ok(cm.metadata.name.clone().into_iter().collect())
            }))
            .unwrap();
        let mut list = EncodedList::new(codec.clone()).indexed_by(stale);
        fill(&mut list, &["c", "c"]);
        let before = decodes.load(Ordering::Relaxed);
        store.replace_encoded(&list).unwrap();
        assert_eq!(decodes.load(Ordering::Relaxed) - before, 2);
        assert_eq!(
            names(store.by_index("team", "c").unwrap()),
            ["cm-0", "cm-1"]
        );
        assert_eq!(names(store.by_index("name", "cm-1").unwrap()), ["cm-1"]);

        // An index function that failed on an item: the replace fails, the store unchanged.
        let mut list = EncodedList::new(codec).indexed_by(store.current_indexers());
        fill(&mut list, &["d", "broken"]);
        assert!(matches!(
            store.replace_encoded(&list),
            Err(crate::StoreError::Index(_))
        ));
        assert_eq!(store.list_keys().len(), 2);
        assert_eq!(
            names(store.by_index("team", "c").unwrap()),
            ["cm-0", "cm-1"]
        );

        // Appending keeps the values only where both lists were indexed alike.
        let indexers = store.current_indexers();
        let mut a = EncodedList::new(ObjectCodec::json()).indexed_by(Arc::clone(&indexers));
        let mut b = EncodedList::new(ObjectCodec::json()).indexed_by(indexers);
        fill(&mut a, &["x"]);
        fill(&mut b, &["y"]);
        let current = store.current_indexers();
        a.append(b);
        assert!(a.index_values(1, &current).is_some());
        a.append(EncodedList::new(ObjectCodec::json()));
        assert!(a.index_values(0, &current).is_none());
    }
}
