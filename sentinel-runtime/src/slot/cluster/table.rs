//! [`LeaseTable`]: the lease slots of one cluster rule.

// Without the `redis` feature nothing grants leases: only the local fallback is used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicBool, Ordering::*};

use super::lease::{LeaseSlot, Take};

/// The slots of one cluster rule: one for a flow rule, a bounded two-way set-associative table
/// for a hotspot rule's values. A value's lease lives in either slot (way) of the set its hash
/// picks, so two values that share a set both keep theirs. A third takes over the way whose
/// lease ends first: that value's tokens are dropped (so a collision can only under-admit),
/// and the value that took the way waits for its first lease as a new value does.
#[derive(Debug)]
pub(crate) struct LeaseTable {
    slots: Box<[LeaseSlot]>,
    /// Some slot asked for a refill since the background last looked.
    dirty: AtomicBool,
}

/// The slots of a set (see [`LeaseTable`]).
const WAYS: usize = 2;

/// The way of a set for `key`, which neither holds: the one already asking for it, else a way
/// no key used, else the one whose lease ends first (it was refilled longest ago: a busy value
/// refills often). Ties: the first.
#[inline(never)]
fn way_for_new<'t>(a: &'t LeaseSlot, b: &'t LeaseSlot, key: u64) -> &'t LeaseSlot {
    if a.wants(key) {
        return a;
    }
    if b.wants(key) {
        return b;
    }
    if a.is_free() {
        return a;
    }
    if b.is_free() || b.expires() < a.expires() {
        return b;
    }
    a
}

impl LeaseTable {
    /// A table of `slots` slots (a power of two, at least 1).
    pub(crate) fn new(slots: usize) -> LeaseTable {
        let n = slots.max(1).next_power_of_two();
        LeaseTable {
            slots: (0..n).map(|_| LeaseSlot::default()).collect(),
            dirty: AtomicBool::new(false),
        }
    }

    /// The slot of `key`: the way of its set that holds it, else the way that asks for it, else
    /// the way it takes over (see [`LeaseTable`]). A table of one slot (a flow rule's) has no
    /// choice.
    #[inline]
    pub(crate) fn slot(&self, key: u64) -> &LeaseSlot {
        let Some((a, b)) = self.ways(key) else {
            return &self.slots[0];
        };
        if a.owner() == key {
            return a;
        }
        if b.owner() == key {
            return b;
        }
        way_for_new(a, b, key)
    }

    /// The two ways of `key`'s set; `None` for a table of one slot.
    #[inline]
    fn ways(&self, key: u64) -> Option<(&LeaseSlot, &LeaseSlot)> {
        let sets = self.slots.len() / WAYS;
        if sets == 0 {
            return None;
        }
        // The high bits: value hashes are well mixed.
        let set = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (sets - 1);
        Some((self.slots.get(set * WAYS)?, self.slots.get(set * WAYS + 1)?))
    }

    /// Spends `count` tokens of `key` at `now`; returns whether they were spent, and whether
    /// the background work should be woken (a new ask).
    #[inline]
    pub(crate) fn take(&self, key: u64, count: u32, now: u64) -> (Take, bool) {
        let (take, asked) = self.slot(key).take(key, count, now);
        if asked {
            self.dirty.store(true, Release);
        }
        (take, asked)
    }

    /// Whether a slot asked since the last call (clears the mark).
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, AcqRel)
    }

    /// Marks the table for another look (a slot could not refill yet).
    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Release);
    }

    /// Every slot.
    pub(crate) fn slots(&self) -> &[LeaseSlot] {
        &self.slots
    }

    /// Ends every lease (the store failed, or the cluster stopped).
    pub(crate) fn expire_all(&self) {
        for slot in self.slots.iter() {
            slot.expire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::cluster::lease::FLOW_KEY;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    /// Grants `n` tokens to `key` at `now` as the background would: the key's call asks, the
    /// slot it asked on is refilled.
    fn grant(table: &LeaseTable, key: u64, n: u64, now: u64) {
        assert_eq!(
            table.take(key, 1, now).0,
            Take::Dry,
            "{key} has no tokens yet"
        );
        let slot = table.slot(key);
        assert_eq!(slot.begin_refill(now), Some(key));
        slot.finish(n, n, now, 0);
    }

    #[test]
    fn a_flow_rules_table_has_its_one_slot() {
        let table = LeaseTable::new(1);
        grant(&table, FLOW_KEY, 3, T0);
        assert!(std::ptr::eq(table.slot(FLOW_KEY), &table.slots()[0]));
        assert_eq!(table.take(FLOW_KEY, 3, T0).0, Take::Spent);
    }

    #[test]
    fn a_third_value_takes_over_the_way_whose_lease_ends_first() {
        // One set of two ways.
        let table = LeaseTable::new(2);
        grant(&table, 7, 10, T0);
        grant(&table, 8, 10, T0 + 10 * MS);
        let (seven, eight) = (table.slot(7) as *const _, table.slot(8) as *const _);
        assert_ne!(seven, eight, "two values, two ways");
        // 9 asks: 7's lease (granted first) ends first, so 7's way passes to 9.
        assert_eq!(table.take(9, 1, T0 + 20 * MS).0, Take::Dry);
        assert!(std::ptr::eq(table.slot(9), seven), "9 asks on 7's way");
        assert_eq!(table.slot(9).begin_refill(T0 + 20 * MS), Some(9));
        assert_eq!(
            table.take(8, 10, T0 + 20 * MS).0,
            Take::Spent,
            "8 kept its tokens"
        );
        assert_eq!(
            table.take(7, 1, T0 + 20 * MS).0,
            Take::Dry,
            "7 lost its way"
        );
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// The value's call takes a token.
        Take(bool),
        /// The background refills every slot that asked, with this many tokens.
        Refill(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            any::<bool>().prop_map(Op::Take),
            (1u8..5).prop_map(Op::Refill),
        ]
    }

    proptest! {
        /// Any two values of a set, in any order of calls and refills: once a value has a way,
        /// it keeps it, and every token granted to it is its own to spend (a direct-mapped
        /// slot passed between the two, dropping the tokens of the other).
        #[test]
        fn two_values_of_one_set_keep_their_own_ways_and_tokens(
            keys in (1u64.., 1u64..).prop_filter("two values", |(a, b)| a != b),
            sets in 0u32..4,
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let table = LeaseTable::new(2 << sets);
            // Both values in one set: the second is the first's set mate by construction.
            let (a, mut b) = keys;
            let first_way = |key| table.ways(key).map(|(way, _)| way as *const LeaseSlot);
            while first_way(a) != first_way(b) || b == a {
                b = b.wrapping_add(1).max(1);
            }
            let mut held: [Option<*const LeaseSlot>; 2] = [None, None];
            let mut tokens = [0u64; 2];
            for op in ops {
                match op {
                    Op::Take(second) => {
                        let (i, key) = if second { (1, b) } else { (0, a) };
                        let spent = table.take(key, 1, T0).0 == Take::Spent;
                        prop_assert_eq!(spent, tokens[i] > 0, "value {} with {} tokens", i, tokens[i]);
                        if spent {
                            tokens[i] -= 1;
                        }
                    }
                    Op::Refill(n) => {
                        for slot in table.slots() {
                            if let Some(key) = slot.begin_refill(T0) {
                                slot.finish(u64::from(n), u64::from(n), T0, 0);
                                let i = usize::from(key == b);
                                tokens[i] += u64::from(n);
                                let way: *const LeaseSlot = slot;
                                prop_assert!(held[i].is_none_or(|w| w == way), "value {} moved", i);
                                held[i] = Some(way);
                            }
                        }
                    }
                }
            }
        }
    }
}
