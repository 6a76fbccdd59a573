//! [`StoreKey`]: a storage key as the store keeps it, shared by the object map and every
//! index that lists the object.
//!
//! It is one allocation (a count, a length and the key's bytes) behind a thin, 8-byte
//! pointer. `Arc<str>` would cost 8 bytes more in each of those places (a fat pointer) and 8
//! more in the allocation (the weak count): for 100k Pods with the namespace index that
//! measured 117 rather than 93 bytes per cached object beyond the object itself, before index
//! entries carried the object too (`tests/memory.rs`, `docs/benchmarks.md`).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

use triomphe::ThinArc;

/// A shared, immutable storage key. Hashes and compares as its bytes, so maps keyed by it
/// are looked up with `key.as_bytes()`.
#[derive(Clone)]
pub(crate) struct StoreKey(ThinArc<(), u8>);

impl StoreKey {
    pub(crate) fn new(key: &str) -> Self {
        Self(ThinArc::from_header_and_slice((), key.as_bytes()))
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0.slice
    }

    /// The key as a `String`. Keys are made from `&str`, so the bytes are valid UTF-8 and
    /// nothing is replaced.
    pub(crate) fn to_text(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

impl PartialEq for StoreKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for StoreKey {}

/// Hashes exactly as `[u8]` does, as `Borrow<[u8]>` requires.
impl Hash for StoreKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl Borrow<[u8]> for StoreKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(self.as_bytes()), f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_key_is_one_thin_pointer_and_looks_up_by_bytes() {
        assert_eq!(std::mem::size_of::<StoreKey>(), 8);
        let mut map = HashMap::new();
        map.insert(StoreKey::new("ns/a"), 1);
        assert_eq!(map.get("ns/a".as_bytes()), Some(&1));
        assert_eq!(map.get("ns/b".as_bytes()), None);
        assert_eq!(StoreKey::new("ns/ä").to_text(), "ns/ä");
        assert_eq!(format!("{:?}", StoreKey::new("x")), "\"x\"");
    }
}
