//! Which member of a ring owns which slot: rendezvous hashing over the live members, and the
//! shard selector of a set of slots.

use std::collections::{BTreeMap, BTreeSet};

use kclient_core::sharding::{shard_hash, ShardKey, ShardRange, ShardSelector};

/// A slot's owner among `members`: the member with the highest weight for the slot
/// (rendezvous hashing; ties, which need equal 64-bit weights, go to the smaller name).
/// `None` when there are no members.
///
/// Every member computes the same owner from the same set of members, and a member joining
/// or leaving moves only the slots it wins or held: about `slots / members` of them.
pub fn owner<'a>(slot: u32, members: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    members
        .into_iter()
        .map(|member| (weight(member, slot), member))
        .max_by(|(wa, ma), (wb, mb)| wa.cmp(wb).then_with(|| mb.cmp(ma)))
        .map(|(_, member)| member)
}

/// The slots each of `members` owns, out of `slots`; every member is in the map, with no
/// slot if it wins none.
pub fn assign<'a>(
    members: impl IntoIterator<Item = &'a str>,
    slots: u32,
) -> BTreeMap<&'a str, BTreeSet<u32>> {
    let members: BTreeSet<&str> = members.into_iter().collect();
    let mut owned: BTreeMap<&str, BTreeSet<u32>> =
        members.iter().map(|m| (*m, BTreeSet::new())).collect();
    for slot in 0..slots {
        if let Some(member) = owner(slot, members.iter().copied()) {
            owned.entry(member).or_default().insert(slot);
        }
    }
    owned
}

/// The selector of the objects in `slots` (of `count` equal slots of the hash space) by
/// `key`, adjacent slots joined into one range; `None` for no slot.
pub fn selector_of(slots: &BTreeSet<u32>, count: u32, key: ShardKey) -> Option<ShardSelector> {
    let mut ranges: Vec<ShardRange> = Vec::new();
    for &slot in slots.iter().filter(|s| **s < count) {
        let range = ShardRange::nth_of(slot, count).ok()?;
        match ranges.last_mut() {
            Some(last) if last.end() == u128::from(range.start()) => {
                *last = ShardRange::new(last.start(), range.end()).ok()?;
            }
            _ => ranges.push(range),
        }
    }
    ShardSelector::new(key, ranges).ok()
}

/// A member's weight for a slot: FNV-1a of the name (as the server hashes keys) with the
/// slot, through a 64-bit finalizer, since FNV alone spreads similar short names poorly.
fn weight(member: &str, slot: u32) -> u64 {
    mix(shard_hash(member) ^ mix(u64::from(slot) + 1))
}

/// SplitMix64's finalizer.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::sharding::part_of;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("replica-{i}")).collect()
    }

    #[test]
    fn every_slot_has_one_owner_and_the_spread_is_even() {
        for n in 1..=8 {
            let members = names(n);
            let owned = assign(members.iter().map(String::as_str), 256);
            assert_eq!(owned.len(), n);
            assert_eq!(owned.values().map(BTreeSet::len).sum::<usize>(), 256);
            let fair = 256 / n;
            for slots in owned.values() {
                // Within half of the fair share either way.
                assert!(
                    slots.len() >= fair / 2 && slots.len() <= fair * 3 / 2 + 1,
                    "{n}: {}",
                    slots.len()
                );
            }
        }
        assert_eq!(owner(3, []), None);
    }

    #[test]
    fn a_member_joining_takes_slots_from_others_and_moves_nothing_else() {
        let before = names(3);
        let mut after = before.clone();
        after.push("replica-new".into());
        for slot in 0..512 {
            let (was, is) = (
                owner(slot, before.iter().map(String::as_str)).unwrap(),
                owner(slot, after.iter().map(String::as_str)).unwrap(),
            );
            assert!(
                was == is || is == "replica-new",
                "slot {slot}: {was} -> {is}"
            );
        }
    }

    #[test]
    fn a_member_leaving_gives_up_only_its_own_slots() {
        let before = names(4);
        let after: Vec<_> = before
            .iter()
            .filter(|m| *m != "replica-2")
            .cloned()
            .collect();
        for slot in 0..512 {
            let (was, is) = (
                owner(slot, before.iter().map(String::as_str)).unwrap(),
                owner(slot, after.iter().map(String::as_str)).unwrap(),
            );
            assert!(
                was == is || was == "replica-2",
                "slot {slot}: {was} -> {is}"
            );
        }
    }

    #[test]
    fn the_selector_covers_exactly_the_slots() {
        let slots: BTreeSet<u32> = [0, 1, 2, 5, 7, 8, 15].into();
        let selector = selector_of(&slots, 16, ShardKey::Uid).unwrap();
        assert_eq!(selector.ranges().len(), 4); // 0-2, 5, 7-8, 15
        for i in 0..4096u64 {
            let uid = format!("{:016x}-{i}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let hash = shard_hash(&uid);
            assert_eq!(
                selector.matches_value(&uid),
                slots.contains(&part_of(hash, 16))
            );
        }
        assert_eq!(selector_of(&BTreeSet::new(), 16, ShardKey::Uid), None);
        let all: BTreeSet<u32> = (0..16).collect();
        assert_eq!(
            selector_of(&all, 16, ShardKey::Uid).unwrap().ranges(),
            [ShardRange::full()]
        );
    }
}
