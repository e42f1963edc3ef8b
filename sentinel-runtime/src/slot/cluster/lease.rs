//! Leases: tokens granted by the cluster's store, spent locally.
//!
//! A [`LeaseSlot`] holds the tokens one key (a cluster flow rule, or one value of a cluster
//! hotspot rule) was granted: an atomic count spent with one atomic decrement per call, valid
//! until a short TTL after the grant arrived (on the runtime clock). A refill adds to the count;
//! tokens left when the lease expires, or when the slot passes to another key, are dropped. So a
//! token is spent at most once and never after its lease ended: a lease can under-admit a
//! little, never over-admit.
//!
//! The call path never waits here: a take that finds too few tokens (or leaves fewer than the
//! low-water mark) *asks* for a refill, which the cluster's background work reads.

// Without the `redis` feature nothing grants leases: only the local fallback is used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::*};
use std::sync::{Mutex, PoisonError};

/// How long granted tokens stay spendable after their grant arrived.
pub(crate) const LEASE_TTL_NANOS: u64 = 200_000_000;

/// The key of a flow rule's single slot (hotspot values use their value hash).
pub(crate) const FLOW_KEY: u64 = 1;

/// Value hashes are mapped off 0, which marks a slot owned by no key.
#[inline]
pub(crate) fn key_of(hash: u64) -> u64 {
    if hash == 0 {
        0x9e37_79b9_7f4a_7c15
    } else {
        hash
    }
}

/// The background's bookkeeping of one slot (never touched on the call path).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Book {
    /// The lease size last asked for.
    pub(crate) size: u64,
    /// Tokens in the slot right after the last refill.
    pub(crate) after: i64,
    /// When the last refill arrived (runtime clock), 0: never.
    pub(crate) at: u64,
}

/// The tokens one key holds.
#[derive(Debug, Default)]
pub(crate) struct LeaseSlot {
    /// The key whose tokens the slot holds; 0: none.
    owner: AtomicU64,
    /// The key the last caller that found the slot wanting asked for.
    wanted: AtomicU64,
    tokens: AtomicI64,
    /// When the tokens expire (runtime clock nanos).
    expires: AtomicU64,
    /// A take left fewer than this: ask for a refill.
    low: AtomicI64,
    /// A refill is asked for.
    asked: AtomicBool,
    /// A caller found the slot dry since the last refill (the lease was too small).
    starved: AtomicBool,
    /// A refill is in flight.
    busy: AtomicBool,
    /// Not before this time (runtime clock) will a refill be asked (the store said it has no
    /// tokens until about then).
    next_ask: AtomicU64,
    book: Mutex<Book>,
}

/// What a take found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// The tokens were spent.
    Spent,
    /// Not enough tokens (or none for this key, or expired): a refill was asked for.
    Dry,
}

impl LeaseSlot {
    /// Spends `count` tokens of `key` at `now`, or asks for a refill. Returns whether the ask
    /// was new (the caller then wakes the background work).
    #[inline]
    pub(crate) fn take(&self, key: u64, count: u32, now: u64) -> (Take, bool) {
        if self.owner.load(Acquire) != key || now >= self.expires.load(Acquire) {
            return (Take::Dry, self.ask(key, true));
        }
        let c = i64::from(count);
        let old = self.tokens.fetch_sub(c, AcqRel);
        if old < c {
            // Give the decrement back: it took nothing (the sum of successful takes never
            // exceeds what was added, since every take saw at least its count).
            self.tokens.fetch_add(c, AcqRel);
            return (Take::Dry, self.ask(key, true));
        }
        if self.owner.load(Acquire) != key {
            // The slot passed to another key meanwhile: what was taken is dropped (it may have
            // been either key's), never given back to the other key.
            return (Take::Dry, self.ask(key, true));
        }
        let low = self.low.load(Relaxed);
        if old >= low && old - c < low {
            return (Take::Spent, self.ask(key, false));
        }
        (Take::Spent, false)
    }

    /// Asks for a refill for `key`; whether the ask is new.
    #[cold]
    fn ask(&self, key: u64, dry: bool) -> bool {
        if dry && !self.starved.load(Relaxed) {
            self.starved.store(true, Relaxed);
        }
        if self.wanted.load(Relaxed) != key {
            self.wanted.store(key, Relaxed);
        }
        !self.asked.load(Acquire) && !self.asked.swap(true, AcqRel)
    }

    /// The refill the background work should ask for now, if any: the key, with the slot
    /// marked busy (the caller must [`finish`](Self::finish) it).
    pub(crate) fn begin_refill(&self, now: u64) -> Option<u64> {
        if !self.asked.load(Acquire) || self.busy.load(Acquire) {
            return None;
        }
        if self.next_ask.load(Acquire) > now {
            return None;
        }
        if self.busy.swap(true, AcqRel) {
            return None;
        }
        self.asked.store(false, Release);
        let key = self.wanted.load(Relaxed);
        if key == 0 {
            self.busy.store(false, Release);
            return None;
        }
        if self.owner.load(Acquire) != key {
            // The slot passes to `key`: the previous key's tokens are dropped.
            self.owner.store(key, Release);
            self.drop_tokens();
            *self.book_mut() = Book::default();
            self.next_ask.store(0, Release);
        }
        Some(key)
    }

    /// Whether a refill may arrive by `deadline` (one is in flight, or may be asked by then):
    /// else a caller that found the slot dry does not wait for one.
    #[inline]
    pub(crate) fn may_refill_by(&self, deadline: u64) -> bool {
        self.busy.load(Acquire) || self.next_ask.load(Acquire) <= deadline
    }

    /// Whether the slot asked for a refill it has not begun (one of the background's checks).
    pub(crate) fn is_asking(&self) -> bool {
        self.asked.load(Acquire)
    }

    /// The lease size to ask for: about `horizon_nanos` of the traffic spent since the last
    /// refill (twice the last size if callers went dry), within `1..=cap`.
    pub(crate) fn next_size(&self, now: u64, horizon_nanos: u64, cap: u64) -> u64 {
        let book = self.book();
        let cap = cap.max(1);
        let starved = self.starved.swap(false, AcqRel);
        let size = if book.at == 0 {
            // First lease: start small, grow from what is spent.
            (cap / 20).max(1)
        } else {
            let spent = (book.after - self.tokens.load(Acquire)).max(0) as u64;
            let elapsed = now.saturating_sub(book.at).max(1_000_000);
            let per_horizon =
                (u128::from(spent) * u128::from(horizon_nanos)).div_ceil(u128::from(elapsed));
            let mut size = per_horizon.min(u128::from(u64::MAX)) as u64;
            if starved {
                size = size.max(book.size.saturating_mul(2));
            }
            size
        };
        size.clamp(1, cap)
    }

    /// Adds `granted` tokens that arrived at `now` for a lease of `size`; `retry_at` is when
    /// the slot may ask again if it asks (the store said more tokens come only then).
    pub(crate) fn finish(&self, granted: u64, size: u64, now: u64, retry_at: u64) {
        if now >= self.expires.load(Acquire) {
            self.drop_tokens();
        }
        let granted = i64::try_from(granted).unwrap_or(i64::MAX);
        let after = self
            .tokens
            .fetch_add(granted, AcqRel)
            .saturating_add(granted);
        self.low
            .store(i64::try_from(size / 2).unwrap_or(i64::MAX).max(1), Relaxed);
        if granted > 0 {
            self.expires
                .store(now.saturating_add(LEASE_TTL_NANOS), Release);
        }
        *self.book_mut() = Book {
            size,
            after,
            at: now,
        };
        self.next_ask.store(retry_at, Release);
        self.busy.store(false, Release);
    }

    /// A refill that failed: the slot may ask again at once.
    pub(crate) fn abandon(&self) {
        self.busy.store(false, Release);
    }

    /// Drops every token the slot holds (a lease expired, or the slot changed keys).
    fn drop_tokens(&self) {
        let left = self.tokens.load(Acquire);
        if left > 0 {
            // Concurrent takes may push the count below 0 meanwhile: each such take then
            // fails and gives its decrement back, so nothing is spent twice.
            self.tokens.fetch_sub(left, AcqRel);
        }
    }

    /// Ends the lease now (the cluster stopped or the store failed): nothing left is spent.
    pub(crate) fn expire(&self) {
        self.expires.store(0, Release);
        self.drop_tokens();
    }

    fn book(&self) -> Book {
        *self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn book_mut(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tokens held (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn tokens(&self) -> i64 {
        self.tokens.load(Acquire)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    /// Grants `n` tokens to `key` in `slot` at `now` as the background would.
    fn grant(slot: &LeaseSlot, key: u64, n: u64, now: u64) {
        slot.ask(key, false);
        assert_eq!(slot.begin_refill(now), Some(key));
        slot.finish(n, n, now, 0);
    }

    #[test]
    fn a_lease_spends_what_was_granted_and_asks_at_low_water() {
        let slot = LeaseSlot::default();
        assert_eq!(slot.take(FLOW_KEY, 1, T0), (Take::Dry, true), "empty");
        assert_eq!(slot.begin_refill(T0), Some(FLOW_KEY));
        slot.finish(10, 10, T0, 0);
        for i in 0..5 {
            assert_eq!(slot.take(FLOW_KEY, 1, T0).0, Take::Spent, "take {i}");
        }
        // 5 left: at the low-water mark (10 / 2); the next take crosses it and asks.
        assert_eq!(slot.take(FLOW_KEY, 1, T0), (Take::Spent, true));
        assert_eq!(
            slot.take(FLOW_KEY, 1, T0),
            (Take::Spent, false),
            "asked once"
        );
        assert_eq!(slot.take(FLOW_KEY, 4, T0).0, Take::Dry, "3 left");
        assert_eq!(slot.take(FLOW_KEY, 3, T0).0, Take::Spent);
        assert_eq!(slot.tokens(), 0);
    }

    #[test]
    fn tokens_expire_with_their_lease_and_are_not_carried_into_the_next() {
        let slot = LeaseSlot::default();
        grant(&slot, FLOW_KEY, 10, T0);
        assert_eq!(
            slot.take(FLOW_KEY, 1, T0 + LEASE_TTL_NANOS - 1).0,
            Take::Spent
        );
        assert_eq!(
            slot.take(FLOW_KEY, 1, T0 + LEASE_TTL_NANOS).0,
            Take::Dry,
            "t = T0 + TTL: expired"
        );
        assert_eq!(slot.begin_refill(T0 + LEASE_TTL_NANOS), Some(FLOW_KEY));
        slot.finish(3, 3, T0 + LEASE_TTL_NANOS, 0);
        assert_eq!(slot.tokens(), 3, "the 9 expired tokens were dropped");
    }

    #[test]
    fn a_slot_taken_over_by_another_value_drops_the_first_values_tokens() {
        let slot = LeaseSlot::default();
        grant(&slot, 7, 10, T0);
        assert_eq!(slot.take(8, 1, T0), (Take::Dry, true));
        assert_eq!(slot.begin_refill(T0), Some(8));
        assert_eq!(slot.tokens(), 0);
        slot.finish(2, 2, T0, 0);
        assert_eq!(slot.take(7, 1, T0).0, Take::Dry, "7 lost the slot");
        assert_eq!(slot.take(8, 2, T0).0, Take::Spent);
    }

    #[test]
    fn the_lease_size_follows_the_traffic_within_the_cap() {
        let slot = LeaseSlot::default();
        assert_eq!(
            slot.next_size(T0, 50 * MS, 1_000),
            50,
            "first lease: cap / 20"
        );
        grant(&slot, FLOW_KEY, 50, T0);
        for _ in 0..40 {
            slot.take(FLOW_KEY, 1, T0);
        }
        // 40 spent in 100 ms: 20 per 50 ms.
        assert_eq!(slot.next_size(T0 + 100 * MS, 50 * MS, 1_000), 20);
        assert_eq!(slot.next_size(T0 + 100 * MS, 50 * MS, 8), 8, "capped");
    }

    #[test]
    fn eight_threads_never_spend_more_than_was_granted() {
        use std::sync::Barrier;
        let slot = LeaseSlot::default();
        grant(&slot, FLOW_KEY, 1_000, T0);
        let barrier = Barrier::new(8);
        let spent: u32 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        (0..500)
                            .filter(|_| slot.take(FLOW_KEY, 1, T0).0 == Take::Spent)
                            .count() as u32
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(spent, 1_000);
        assert_eq!(slot.tokens(), 0);
    }

    /// One step against [`Model`].
    #[derive(Clone, Debug)]
    enum Op {
        Take { key: u64, count: u32 },
        Refill { granted: u64 },
        Advance { ms: u64 },
        Expire,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u64..4, 1u32..4).prop_map(|(key, count)| Op::Take { key, count }),
            2 => (0u64..20).prop_map(|granted| Op::Refill { granted }),
            1 => (0u64..300).prop_map(|ms| Op::Advance { ms }),
            1 => Just(Op::Expire),
        ]
    }

    /// The plain model: the key that holds the lease, its tokens and their expiry.
    #[derive(Debug, Default)]
    struct Model {
        owner: u64,
        wanted: u64,
        tokens: u64,
        expires: u64,
        /// The low-water mark: a take that crosses it asks for a refill.
        low: u64,
    }

    proptest! {
        /// A slot with its keys sharing it (a hotspot table's collisions), grants, time and
        /// forced expiry, against a plain model: the same decision on every take, so tokens
        /// are spent only by the key they were granted to, within their lease, at most once.
        #[test]
        fn a_slot_spends_exactly_like_a_plain_model(ops in proptest::collection::vec(op(), 1..80)) {
            let slot = LeaseSlot::default();
            let mut model = Model::default();
            let mut now = T0;
            for op in ops {
                match op {
                    Op::Take { key, count } => {
                        let (took, _) = slot.take(key, count, now);
                        let expected = if model.owner == key
                            && now < model.expires
                            && model.tokens >= u64::from(count)
                        {
                            if model.tokens >= model.low
                                && model.tokens - u64::from(count) < model.low
                            {
                                model.wanted = key;
                            }
                            model.tokens -= u64::from(count);
                            Take::Spent
                        } else {
                            model.wanted = key;
                            Take::Dry
                        };
                        prop_assert_eq!(took, expected, "{:?} at {}", op, now - T0);
                    }
                    Op::Refill { granted } => {
                        match slot.begin_refill(now) {
                            Some(key) => {
                                prop_assert_eq!(key, model.wanted);
                                if model.owner != key || now >= model.expires {
                                    model.tokens = 0;
                                }
                                model.owner = key;
                                slot.finish(granted, granted, now, 0);
                                model.tokens += granted;
                                model.low = (granted / 2).max(1);
                                if granted > 0 {
                                    model.expires = now + LEASE_TTL_NANOS;
                                }
                            }
                            None => prop_assert!(model.wanted == 0 || !slot.is_asking()),
                        }
                    }
                    Op::Advance { ms } => now += ms * MS,
                    Op::Expire => {
                        slot.expire();
                        model.tokens = 0;
                        model.expires = 0;
                    }
                }
                if now < model.expires {
                    prop_assert_eq!(slot.tokens().max(0) as u64, model.tokens);
                }
            }
        }
    }
}
