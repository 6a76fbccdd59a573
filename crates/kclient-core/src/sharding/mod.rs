//! Sharded list and watch (KEP-5866; kube-apiserver 1.36+, alpha gate `ShardedListAndWatch`):
//! a [`ShardSelector`] asks the server for the objects whose hashed `metadata.uid` (or
//! `metadata.namespace`) falls in some ranges of the 64-bit hash space, so that N clients
//! can each list and watch a disjoint N-th of a collection.
//!
//! The hash is 64-bit FNV-1a of the field's value ([`shard_hash`]); a range is `[start, end)`
//! with `end` at most 2⁶⁴. On the wire the selector is a CEL expression, the
//! `shardSelector` query parameter of a list or watch:
//! `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`, ranges
//! joined with `||`. Bounds are written with exactly 16 lowercase hex digits (2⁶⁴ as
//! `'0x10000000000000000'`): kube-apiserver refuses shorter ones. [`ShardSelector`]'s
//! `Display` is that canonical form — the one the server echoes in the list's
//! `metadata.shardInfo.selector` — and [`ShardSelector::parse`] reads an expression with
//! kube-apiserver's rules and words its errors as kube-apiserver does (see
//! [`ShardSelectorError`]).
//!
//! A server without the gate ignores the parameter and answers with every object and no
//! `shardInfo`: compare [`ListMeta::shard_info`](k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta)
//! with what was asked ([`ShardSelector::is_echoed_by`]) before trusting a list to be a
//! shard, and filter with [`ShardSelector::matches`] where it is not — what
//! [`ShardedListWatch`] does for an informer, so that a sharded informer holds its shard on
//! any server.
//!
//! ```
//! use kclient_core::sharding::{ShardKey, ShardSelector};
//!
//! // The second of four equal shards, by uid.
//! let selector = ShardSelector::shard(ShardKey::Uid, 1, 4).unwrap();
//! assert_eq!(
//!     selector.to_string(),
//!     "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')"
//! );
//! let parsed: ShardSelector = selector.to_string().parse().unwrap();
//! assert_eq!(parsed, selector);
//!
//! // Every object is in exactly one of the four shards: the hash of its uid decides.
//! let shards: Vec<_> = (0..4).map(|i| ShardSelector::shard(ShardKey::Uid, i, 4).unwrap()).collect();
//! let uid = "0b8f4a52-3c1e-4d55-9a7e-2f61c1d0e9a4";
//! assert_eq!(shards.iter().filter(|s| s.matches_value(uid)).count(), 1);
//! ```
//!
//! FNV-1a mixes a key's last bytes poorly into the top bits the ranges cut: random uids
//! spread evenly, but short keys that differ only at their end (`team-1`, `team-2`, …, as
//! namespaces may be named) can all land in one shard. Shard by namespace only where the
//! names are varied enough, and measure the spread.

mod list_watch;
mod parse;

pub use list_watch::ShardedListWatch;

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};

/// 2⁶⁴: the exclusive end of the whole hash space.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// The 64-bit FNV-1a hash of `value`, the hash kube-apiserver shards by.
///
/// ```
/// assert_eq!(kclient_core::sharding::shard_hash(""), 0xcbf29ce484222325);
/// assert_eq!(kclient_core::sharding::shard_hash("a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn shard_hash(value: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    value.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// Which of `count` equal parts of the hash space ([`ShardRange::nth_of`]) `hash` is in
/// (`count` > 0).
///
/// ```
/// use kclient_core::sharding::{part_of, ShardRange};
///
/// let hash = 0x5555_5555_5555_5555;
/// assert_eq!(part_of(hash, 3), 0);
/// assert!(ShardRange::nth_of(0, 3).unwrap().contains(hash));
/// ```
pub fn part_of(hash: u64, count: u32) -> u32 {
    // ⌊hash·count/2⁶⁴⌋ < count.
    ((u128::from(hash) * u128::from(count.max(1))) >> 64) as u32
}

/// The field whose hash places an object in a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardKey {
    /// `object.metadata.uid`: objects spread evenly, an object's shard never changes.
    Uid,
    /// `object.metadata.namespace`: all of a namespace in one shard (objects that refer to
    /// each other within a namespace stay together); cluster-scoped objects hash `""`.
    Namespace,
}

impl ShardKey {
    /// The CEL field path (`object.metadata.uid`, `object.metadata.namespace`).
    pub fn field_path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }

    /// The key of the field path, if it is one the server shards by.
    pub fn from_field_path(path: &str) -> Option<Self> {
        match path {
            "object.metadata.uid" => Some(Self::Uid),
            "object.metadata.namespace" => Some(Self::Namespace),
            _ => None,
        }
    }

    /// The value of this field in `meta` (`""` when unset, as the server reads it).
    pub fn value_of(self, meta: &ObjectMeta) -> &str {
        let value = match self {
            Self::Uid => &meta.uid,
            Self::Namespace => &meta.namespace,
        };
        value.as_deref().unwrap_or_default()
    }
}

/// What places an object in a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    /// Its own key field (uid or namespace): what the server's shard selector reads.
    #[default]
    Object,
    /// Its controller's: the uid of its owner reference with `controller: true` (an object
    /// without one is in no shard), or, sharding by namespace, its own namespace (an owner
    /// and what it controls share one). The server cannot select by it; a
    /// [`ShardedListWatch`] keeps the shard's objects of everything listed and watched. For
    /// the kinds a sharded controller owns: they follow their owner's shard.
    ControllerOwner,
}

/// A range `[start, end)` of the hash space; `end` is at most 2⁶⁴ ([`HASH_SPACE_END`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardRange {
    start: u64,
    end: u128,
}

impl ShardRange {
    /// `[start, end)`; an error unless `start < end <= 2⁶⁴`.
    pub fn new(start: u64, end: u128) -> Result<Self, ShardSelectorError> {
        if end > HASH_SPACE_END {
            return Err(ShardSelectorError::new(format!(
                "shard range end {end:#x} is beyond the hash space (at most 0x10000000000000000)"
            )));
        }
        if u128::from(start) >= end {
            return Err(ShardSelectorError::new(format!(
                "shard range start {} must be less than end {}",
                hex_bound(u128::from(start)),
                hex_bound(end)
            )));
        }
        Ok(Self { start, end })
    }

    /// The whole hash space.
    pub fn full() -> Self {
        Self {
            start: 0,
            end: HASH_SPACE_END,
        }
    }

    /// The `index`-th of `count` equal parts of the hash space (`index < count`), the parts
    /// together covering it exactly: part `i` starts at ⌈i·2⁶⁴/count⌉, so that a hash is in
    /// part [`part_of`]`(hash, count)`.
    pub fn nth_of(index: u32, count: u32) -> Result<Self, ShardSelectorError> {
        if index >= count {
            return Err(ShardSelectorError::new(format!(
                "shard {index} of {count} does not exist (0 <= index < count)"
            )));
        }
        let count = u128::from(count);
        let bound = |i: u32| (HASH_SPACE_END * u128::from(i)).div_ceil(count);
        Ok(Self {
            // Below 2⁶⁴ since index < count.
            start: bound(index) as u64,
            end: bound(index + 1),
        })
    }

    /// The inclusive start.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The exclusive end (2⁶⁴ for a range reaching the end of the space).
    pub fn end(&self) -> u128 {
        self.end
    }

    /// Whether `hash` is in the range.
    pub fn contains(&self, hash: u64) -> bool {
        self.start <= hash && u128::from(hash) < self.end
    }
}

/// A bound as the server writes it: `0x` and 16 lowercase hex digits, 2⁶⁴ with 17.
fn hex_bound(bound: u128) -> String {
    format!("0x{bound:016x}")
}

/// Which shard of a collection a list or watch asks for: ranges of the hash of one field.
///
/// Build one with [`shard`](Self::shard) or [`new`](Self::new), or [`parse`](Self::parse)
/// an expression; its `Display` is the canonical expression the server echoes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    key: ShardKey,
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// The objects whose `key` hashes into one of `ranges` (at least one).
    pub fn new(
        key: ShardKey,
        ranges: impl IntoIterator<Item = ShardRange>,
    ) -> Result<Self, ShardSelectorError> {
        let ranges: Vec<_> = ranges.into_iter().collect();
        if ranges.is_empty() {
            return Err(ShardSelectorError::new(
                "a shard selector needs at least one range".to_owned(),
            ));
        }
        Ok(Self { key, ranges })
    }

    /// The `index`-th of `count` equal shards by `key` (see [`ShardRange::nth_of`]).
    pub fn shard(key: ShardKey, index: u32, count: u32) -> Result<Self, ShardSelectorError> {
        Self::new(key, [ShardRange::nth_of(index, count)?])
    }

    /// Reads a `shardSelector` expression as kube-apiserver does (its errors worded as the
    /// server words them, after `invalid shard selector: `).
    pub fn parse(expression: &str) -> Result<Self, ShardSelectorError> {
        parse::parse(expression)
    }

    /// The field hashed.
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// The ranges, in the order written.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// Whether an object whose key field is `value` is in the shard.
    pub fn matches_value(&self, value: &str) -> bool {
        let hash = shard_hash(value);
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// Whether the object with metadata `meta` is in the shard.
    pub fn matches(&self, meta: &ObjectMeta) -> bool {
        self.matches_value(self.key.value_of(meta))
    }

    /// Whether the object with metadata `meta` is in the shard, placed as `placement` says.
    pub fn places(&self, placement: Placement, meta: &ObjectMeta) -> bool {
        match (placement, self.key) {
            (Placement::Object, _) | (Placement::ControllerOwner, ShardKey::Namespace) => {
                self.matches(meta)
            }
            (Placement::ControllerOwner, ShardKey::Uid) => meta
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .is_some_and(|owner| self.matches_value(&owner.uid)),
        }
    }

    /// Whether a list's metadata says the server applied this selector: its
    /// `shardInfo.selector` is this selector. A server without the `ShardedListAndWatch`
    /// gate sends no `shardInfo` (and every object).
    pub fn is_echoed_by(&self, metadata: &ListMeta) -> bool {
        metadata
            .shard_info
            .as_ref()
            .is_some_and(|info| Self::parse(&info.selector).is_ok_and(|echoed| echoed == *self))
    }
}

impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, range) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.key.field_path(),
                hex_bound(u128::from(range.start)),
                hex_bound(range.end)
            )?;
        }
        Ok(())
    }
}

impl FromStr for ShardSelector {
    type Err = ShardSelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A shard selector that cannot be built or read; the message is kube-apiserver's for the
/// same expression, except for CEL syntax errors (`CEL parse error: …`), whose detail is
/// this crate's own wording rather than cel-go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ShardSelectorError {
    message: String,
}

impl ShardSelectorError {
    fn new(message: String) -> Self {
        Self { message }
    }

    /// What is wrong, as kube-apiserver words it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv_1a_64() {
        // Reference values of the FNV-1a 64-bit test suite.
        assert_eq!(shard_hash("foobar"), 0x85944171f73967e8);
        assert_eq!(shard_hash("a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn equal_shards_cover_the_space_exactly() {
        for count in [1, 2, 3, 7, 64, 1000] {
            let ranges: Vec<_> = (0..count)
                .map(|i| ShardRange::nth_of(i, count).unwrap())
                .collect();
            assert_eq!(ranges[0].start(), 0);
            assert_eq!(ranges.last().unwrap().end(), HASH_SPACE_END);
            for pair in ranges.windows(2) {
                assert_eq!(u128::from(pair[1].start()), pair[0].end());
            }
        }
        assert!(ShardRange::nth_of(4, 4).is_err());
        assert!(ShardRange::nth_of(0, 0).is_err());
    }

    #[test]
    fn part_of_names_the_part_that_contains_the_hash() {
        for count in [1u32, 2, 3, 7, 16, 1000] {
            let starts = (0..count).map(|i| ShardRange::nth_of(i, count).unwrap());
            for (i, range) in starts.enumerate() {
                for hash in [
                    range.start(),
                    range.start().saturating_add(1),
                    (range.end() - 1) as u64,
                ] {
                    assert_eq!(part_of(hash, count), i as u32, "{hash:#x} of {count}");
                }
            }
        }
        assert_eq!(part_of(u64::MAX, 16), 15);
    }

    #[test]
    fn bounds_are_checked() {
        assert!(ShardRange::new(5, 5).is_err());
        assert!(ShardRange::new(5, HASH_SPACE_END + 1).is_err());
        assert!(ShardRange::new(u64::MAX, HASH_SPACE_END).is_ok());
        assert!(ShardSelector::new(ShardKey::Uid, []).is_err());
    }

    #[test]
    fn every_hash_is_in_exactly_one_of_equal_shards() {
        let shards: Vec<_> = (0..3)
            .map(|i| ShardSelector::shard(ShardKey::Uid, i, 3).unwrap())
            .collect();
        for n in 0..500 {
            let uid = format!("uid-{n}");
            assert_eq!(shards.iter().filter(|s| s.matches_value(&uid)).count(), 1);
        }
    }

    #[test]
    fn the_canonical_form_is_the_servers() {
        let selector = ShardSelector::new(
            ShardKey::Namespace,
            [
                ShardRange::new(0, 0xaa).unwrap(),
                ShardRange::new(0x8000000000000000, HASH_SPACE_END).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(
            selector.to_string(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x00000000000000aa') || \
             shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
        );
    }

    #[test]
    fn a_list_echoing_the_selector_is_a_shard() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ShardInfo;
        let selector = ShardSelector::shard(ShardKey::Uid, 0, 2).unwrap();
        let mut meta = ListMeta::default();
        assert!(!selector.is_echoed_by(&meta));
        meta.shard_info = Some(ShardInfo {
            selector: selector.to_string(),
        });
        assert!(selector.is_echoed_by(&meta));
        let other = ShardSelector::shard(ShardKey::Uid, 1, 2).unwrap();
        assert!(!other.is_echoed_by(&meta));
    }
}
