//! [`LeaseTable`]: the lease slots of one cluster rule.

// Without the `redis` feature nothing grants leases: only the local fallback is used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicBool, Ordering::*};

use super::lease::{LeaseSlot, Take};

/// The slots of one cluster rule: one for a flow rule, a bounded direct-mapped table for a
/// hotspot rule's values (a value whose slot another value holds asks for the slot: the other
/// value's tokens are dropped, so a collision can only under-admit).
#[derive(Debug)]
pub(crate) struct LeaseTable {
    slots: Box<[LeaseSlot]>,
    /// Some slot asked for a refill since the background last looked.
    dirty: AtomicBool,
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

    /// The slot of `key`.
    #[inline]
    pub(crate) fn slot(&self, key: u64) -> &LeaseSlot {
        // The high bits: value hashes are well mixed, and FLOW_KEY lands on slot 0.
        let i = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (self.slots.len() - 1);
        &self.slots[i]
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
