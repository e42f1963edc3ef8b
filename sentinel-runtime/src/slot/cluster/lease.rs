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
//!
//! A slot tells a lease that ran out because the store said the budget is spent (its last
//! answer granted less than asked, within the lease's TTL: [`LeaseSlot::is_spent`]) from one
//! that ran out or lapsed while the store had tokens (the key was idle longer than the lease's
//! TTL, or its traffic outran the lease before its refill came back). Only the first refuses
//! a call as the fleet's budget spent; the second is a key waiting for its lease, admitted
//! against the local share and charged with the lease.

// Without the `redis` feature nothing grants leases: only the local fallback is used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::*};
use std::sync::{Mutex, PoisonError};

use crate::sync::AtomicWord;

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
    /// Until when (µs of the store's clock) the key's state must exist in the store: this
    /// instance wrote it and its TTL runs until then (0: not known).
    pub(crate) alive_until: u64,
}

/// What [`Tokens::take`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Took {
    /// The tokens were spent.
    Spent,
    /// Too few tokens: nothing was taken.
    Short,
    /// The slot holds another key's tokens (or passed to another key during the take: what
    /// was taken is then dropped, never given to the other key).
    Other,
}

/// The token count of a slot and the key it belongs to: the lock-free part of a lease, generic
/// over the atomic word so that the loom models run this very code. The count is a two's
/// complement `i64` in a `u64` word (it dips below 0 while a take that found too few gives its
/// decrement back).
#[derive(Debug)]
pub(crate) struct Tokens<W: AtomicWord> {
    /// The key whose tokens these are; 0: none.
    owner: W,
    count: W,
}

impl<W: AtomicWord> Default for Tokens<W> {
    fn default() -> Self {
        Tokens {
            owner: W::new(0),
            count: W::new(0),
        }
    }
}

impl<W: AtomicWord> Tokens<W> {
    /// The key the tokens belong to.
    #[inline]
    pub(crate) fn owner(&self) -> u64 {
        self.owner.load(Acquire)
    }

    /// Spends `count` of `key`'s tokens: one atomic decrement when there are enough. Returns
    /// what it found and the count before the decrement.
    #[inline]
    pub(crate) fn take(&self, key: u64, count: u32) -> (Took, i64) {
        if self.owner.load(Acquire) != key {
            return (Took::Other, 0);
        }
        let c = u64::from(count);
        let old = self.count.fetch_add(c.wrapping_neg(), AcqRel) as i64;
        if old < i64::from(count) {
            // Give the decrement back: it took nothing (the sum of successful takes never
            // exceeds what was added, since every take saw at least its count).
            self.count.fetch_add(c, AcqRel);
            return (Took::Short, old);
        }
        if self.owner.load(Acquire) != key {
            // The tokens passed to another key meanwhile: what was taken is dropped (it may
            // have been either key's), never given back to the other key.
            return (Took::Other, old);
        }
        (Took::Spent, old)
    }

    /// Adds `n` tokens (at most 2^62); returns the count after.
    pub(crate) fn add(&self, n: u64) -> i64 {
        (self.count.fetch_add(n, AcqRel) as i64).wrapping_add(n as i64)
    }

    /// Drops every token (a lease expired). A count below 0 (a take giving its decrement
    /// back) is left alone: what it gives back was never there to spend twice.
    pub(crate) fn drop_all(&self) {
        let mut left = self.count.load(Acquire);
        while (left as i64) > 0 {
            match self.count.compare_exchange(left, 0, AcqRel, Acquire) {
                Ok(_) => break,
                Err(now) => left = now,
            }
        }
    }

    /// Passes the tokens to `key`: the previous key's are dropped.
    pub(crate) fn pass_to(&self, key: u64) {
        self.owner.store(key, Release);
        self.drop_all();
    }

    /// The count now (below 0 while takes give their decrements back).
    pub(crate) fn count(&self) -> i64 {
        self.count.load(Acquire) as i64
    }
}

/// The tokens one key holds.
#[derive(Debug, Default)]
pub(crate) struct LeaseSlot {
    tokens: Tokens<AtomicU64>,
    /// The key the last caller that found the slot wanting asked for.
    wanted: AtomicU64,
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
    /// Calls admitted against the local share while the key had no lease: charged to the
    /// shared bucket with the next lease.
    owed: AtomicU64,
    /// The key asked for is waiting for the cap of new values leased per second.
    deferred: AtomicBool,
    /// Until when (runtime clock nanos) the store's last answer holds that the key's budget is
    /// spent (it granted less than asked); 0: it did not say so.
    spent_until: AtomicU64,
    /// Until when (runtime clock nanos) the key's bucket is short because the store lost its
    /// state (a lease answer said so): refusals meanwhile are the lost window's; 0: none.
    lost_until: AtomicU64,
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
        if now >= self.expires.load(Acquire) {
            // The lease lapsed (or none came yet): not a sign that it was too small, so the
            // next one is not doubled (a key called a little less often than the lease's TTL
            // would otherwise double its lease at every call, up to the cap, and the tokens
            // that expire unspent would drain the fleet's budget).
            return (Take::Dry, self.ask(key, false));
        }
        let (took, old) = self.tokens.take(key, count);
        if took != Took::Spent {
            return (Take::Dry, self.ask(key, true));
        }
        let (c, low) = (i64::from(count), self.low.load(Relaxed));
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
        self.deferred.store(false, Relaxed);
        let key = self.wanted.load(Relaxed);
        if key == 0 {
            self.busy.store(false, Release);
            return None;
        }
        if self.tokens.owner() != key {
            // The slot passes to `key`: the previous key's tokens are dropped, and its lease
            // ends first, so that `key` waits for its own first lease as a value new to the
            // slot does (admitted against the local share: see `never_leased`), not as a
            // leased value gone dry (blocked: "the instances together used the tokens").
            // Before the owner's release store: `never_leased` loads the owner first
            // (acquire), so a caller that sees `key` as the owner sees this 0 (or the expiry
            // `finish` stores later).
            self.expires.store(0, Release);
            self.spent_until.store(0, Relaxed);
            self.lost_until.store(0, Relaxed);
            self.tokens.pass_to(key);
            *self.book_mut() = Book::default();
            self.next_ask.store(0, Release);
        }
        Some(key)
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
            let spent = (book.after - self.tokens.count()).max(0) as u64;
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
    /// the slot may ask again if it asks (the store said more tokens come only then). Fewer
    /// than `size` granted: the store's budget for the key is spent, for the lease's TTL (see
    /// [`is_spent`](Self::is_spent)).
    pub(crate) fn finish(&self, granted: u64, size: u64, now: u64, retry_at: u64) {
        if now >= self.expires.load(Acquire) {
            self.tokens.drop_all();
        }
        let spent_until = if granted < size {
            now.saturating_add(LEASE_TTL_NANOS).max(1)
        } else {
            0
        };
        self.spent_until.store(spent_until, Relaxed);
        let granted = granted.min(u64::MAX >> 2);
        let after = self.tokens.add(granted);
        self.low
            .store(i64::try_from(size / 2).unwrap_or(i64::MAX).max(1), Relaxed);
        if granted > 0 {
            self.expires
                .store(now.saturating_add(LEASE_TTL_NANOS), Release);
        } else if self.expires.load(Acquire) == 0 {
            // Answered, with nothing: no longer a key waiting for its first lease.
            self.expires.store(1, Release);
        }
        {
            let mut book = self.book_mut();
            book.size = size;
            book.after = after;
            book.at = now;
        }
        self.next_ask.store(retry_at, Release);
        self.busy.store(false, Release);
    }

    /// Whether, at `now`, the store's last answer holds that the key's budget is spent: it
    /// granted less than asked, less than a lease's TTL ago. A dry lease is then a refusal by
    /// the fleet's budget; otherwise the lease ran out while the store had tokens (the key was
    /// idle, or its refill is on its way) and the key waits for its lease as a new one does.
    #[inline]
    pub(crate) fn is_spent(&self, now: u64) -> bool {
        now < self.spent_until.load(Relaxed)
    }

    /// Records that the store lost the key's state (found at `now`): its bucket is short for
    /// `window_nanos`.
    pub(crate) fn set_lost(&self, now: u64, window_nanos: u64) {
        self.lost_until
            .store(now.saturating_add(window_nanos).max(1), Relaxed);
    }

    /// Whether the key's bucket is short at `now` because the store lost its state.
    #[inline]
    pub(crate) fn is_lost(&self, now: u64) -> bool {
        now < self.lost_until.load(Relaxed)
    }

    /// Until when the store must hold the key's state (see [`Book::alive_until`]).
    pub(crate) fn alive_until(&self) -> u64 {
        self.book().alive_until
    }

    pub(crate) fn set_alive_until(&self, until: u64) {
        self.book_mut().alive_until = until;
    }

    /// The key whose tokens the slot holds (0: none).
    #[inline]
    pub(crate) fn owner(&self) -> u64 {
        self.tokens.owner()
    }

    /// Whether the last caller that found the slot wanting asked for `key`.
    #[inline]
    pub(crate) fn wants(&self, key: u64) -> bool {
        self.wanted.load(Relaxed) == key
    }

    /// Whether no key ever held or asked for the slot.
    pub(crate) fn is_free(&self) -> bool {
        self.tokens.owner() == 0 && self.wanted.load(Relaxed) == 0
    }

    /// When the slot's lease ends (runtime clock nanos; 0: no lease, or its first is on its
    /// way).
    pub(crate) fn expires(&self) -> u64 {
        self.expires.load(Acquire)
    }

    /// Whether the slot asks for a key other than the one it holds (a new hotspot value).
    pub(crate) fn asks_for_new_key(&self) -> bool {
        self.asked.load(Acquire) && self.wanted.load(Relaxed) != self.tokens.owner()
    }

    /// Whether the slot never held a lease for `key` (a value new to this instance, or one
    /// whose slot another value took): its calls are admitted against the local share until
    /// its lease arrives.
    #[inline]
    pub(crate) fn never_leased(&self, key: u64) -> bool {
        self.tokens.owner() != key || self.expires.load(Acquire) == 0
    }

    /// Marks the key asked for as waiting for the cap of new values; whether it was not yet.
    pub(crate) fn defer(&self) -> bool {
        !self.deferred.swap(true, Relaxed)
    }

    /// Counts `count` calls admitted against the local share while the key had no lease.
    #[inline]
    pub(crate) fn owe(&self, count: u32) {
        self.owed.fetch_add(u64::from(count), Relaxed);
    }

    /// The calls owed, now charged (see [`owe`](Self::owe)).
    pub(crate) fn take_owed(&self) -> u64 {
        self.owed.swap(0, AcqRel)
    }

    /// A refill that failed: the slot may ask again at once.
    pub(crate) fn abandon(&self) {
        self.busy.store(false, Release);
    }

    /// Ends the lease now (the cluster stopped or the store failed): nothing left is spent.
    pub(crate) fn expire(&self) {
        self.expires.store(0, Release);
        self.spent_until.store(0, Relaxed);
        self.tokens.drop_all();
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
        self.tokens.count()
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
    fn a_key_waits_for_its_first_answer_unleased_and_owes_what_it_admitted_meanwhile() {
        let slot = LeaseSlot::default();
        assert!(slot.never_leased(7), "a new key");
        assert_eq!(slot.take(7, 1, T0).0, Take::Dry);
        assert!(slot.asks_for_new_key());
        slot.owe(3);
        assert_eq!(slot.begin_refill(T0), Some(7));
        assert!(slot.never_leased(7), "the refill is on its way");
        assert_eq!(slot.take_owed(), 3, "charged with the lease");
        assert_eq!(slot.take_owed(), 0);
        // Answered with nothing (the bucket is spent): no longer waiting, dry.
        slot.finish(0, 5, T0, T0 + 10 * MS);
        assert!(!slot.never_leased(7));
        assert_eq!(slot.take(7, 1, T0).0, Take::Dry);
        // The store failed: every lease ends, and the key waits for a lease again.
        slot.expire();
        assert!(slot.never_leased(7));
        assert!(slot.defer(), "first deferral counts");
        assert!(!slot.defer(), "once");
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
    fn a_lease_that_lapsed_is_not_a_spent_budget_but_a_short_answer_is_for_a_ttl() {
        let slot = LeaseSlot::default();
        grant(&slot, FLOW_KEY, 2, T0);
        assert!(!slot.is_spent(T0), "granted what was asked");
        // Idle past the TTL, by any length: the lease lapsed, the budget is not spent.
        for gap in [LEASE_TTL_NANOS, 1_000 * MS, 5_000 * MS, 60_000 * MS] {
            assert_eq!(slot.take(FLOW_KEY, 1, T0 + gap).0, Take::Dry, "gap {gap}");
            assert!(!slot.is_spent(T0 + gap), "gap {gap}");
            assert!(!slot.never_leased(FLOW_KEY));
        }
        // The store grants fewer than asked: spent, for a lease's TTL from the answer.
        let t1 = T0 + 60_000 * MS;
        assert_eq!(slot.begin_refill(t1), Some(FLOW_KEY));
        slot.finish(1, 4, t1, t1 + 10 * MS);
        assert!(slot.is_spent(t1));
        assert!(slot.is_spent(t1 + LEASE_TTL_NANOS - 1));
        assert!(
            !slot.is_spent(t1 + LEASE_TTL_NANOS),
            "an answer holds for a TTL"
        );
        // A later full answer clears it.
        slot.ask(FLOW_KEY, false);
        assert_eq!(slot.begin_refill(t1 + 20 * MS), Some(FLOW_KEY));
        slot.finish(4, 4, t1 + 20 * MS, 0);
        assert!(!slot.is_spent(t1 + 20 * MS));
        // The store lost the key's state: refusals within the window are the lost window's.
        slot.set_lost(t1, 1_000 * MS);
        assert!(slot.is_lost(t1 + 999 * MS));
        assert!(!slot.is_lost(t1 + 1_000 * MS));
    }

    #[test]
    fn a_lapsed_lease_does_not_double_the_next_one_but_a_dry_one_does() {
        let slot = LeaseSlot::default();
        grant(&slot, FLOW_KEY, 4, T0);
        slot.take(FLOW_KEY, 1, T0);
        // Found lapsed 300 ms later: 1 spent in 300 ms is 1 per 50 ms, not 2 x 4.
        assert_eq!(slot.take(FLOW_KEY, 1, T0 + 300 * MS).0, Take::Dry);
        assert_eq!(slot.next_size(T0 + 300 * MS, 50 * MS, 100), 1);
        grant(&slot, FLOW_KEY, 4, T0 + 300 * MS);
        for _ in 0..4 {
            slot.take(FLOW_KEY, 1, T0 + 300 * MS);
        }
        // Dry within its lease (4 spent in 100 ms: 2 per 50 ms): it was too small, the next
        // one doubles.
        assert_eq!(slot.take(FLOW_KEY, 1, T0 + 400 * MS).0, Take::Dry);
        assert_eq!(slot.next_size(T0 + 400 * MS, 50 * MS, 100), 8);
    }

    #[test]
    fn a_slot_taken_over_by_another_value_drops_the_first_values_tokens() {
        let slot = LeaseSlot::default();
        grant(&slot, 7, 10, T0);
        assert_eq!(slot.take(8, 1, T0), (Take::Dry, true));
        assert!(slot.never_leased(8));
        assert_eq!(slot.begin_refill(T0), Some(8));
        assert_eq!(slot.tokens(), 0);
        // Until its first lease arrives, the value that took the slot over waits for it as a
        // new value does (admitted against the local share), not as a leased one gone dry.
        assert!(slot.never_leased(8), "8 has had no lease of its own yet");
        assert_eq!(slot.take(8, 1, T0).0, Take::Dry);
        assert!(slot.never_leased(8));
        slot.finish(2, 2, T0, 0);
        assert!(!slot.never_leased(8));
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
        /// The owner's lease was answered (it holds, or held, a lease of its own): until then
        /// its calls wait for their first lease unleased, as a new key's do.
        answered: bool,
    }

    proptest! {
        /// A slot with its keys sharing it (a hotspot table's collisions), grants, time and
        /// forced expiry, against a plain model: the same decision on every take, so tokens
        /// are spent only by the key they were granted to, within their lease, at most once;
        /// and a key waits for its first lease (`never_leased`) exactly until its own lease is
        /// answered, also a key that took the slot over from another.
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
                                if model.owner != key {
                                    model.answered = false;
                                }
                                model.owner = key;
                                // The refill is on its way: a key new to the slot still waits.
                                prop_assert_eq!(slot.never_leased(key), !model.answered);
                                slot.finish(granted, granted, now, 0);
                                model.answered = true;
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
                        model.answered = false;
                    }
                }
                for key in 1..4 {
                    prop_assert_eq!(
                        slot.never_leased(key),
                        model.owner != key || !model.answered,
                        "key {} after {:?}", key, op
                    );
                }
                if now < model.expires {
                    prop_assert_eq!(slot.tokens().max(0) as u64, model.tokens);
                }
            }
        }
    }
}
