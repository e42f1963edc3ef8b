//! Admission: the readers' lock-free acquisitions (a CAS on the key's own `word`), the
//! insertion of an absent key under its shard's lock, and the give-backs (see the protocol in
//! the [module docs](super)).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use crate::sync::AtomicWord;

use super::gcra::RateDecision;
use super::gcra::{gcra, RateRequest};
use super::lookup::{matches, Located};
use super::table::{lock, Bucket, ParamTable, Place, BUCKET, BUSY, CONCURRENCY, OCCUPIED};

impl<A: AtomicWord> ParamTable<A> {
    /// Admits `count` calls of `key` at `now` by the GCRA with emission interval `interval`
    /// (`window / threshold`, at least 1) and tolerance `tolerance` (both in nanoseconds), or
    /// with a wait of at most `max_wait`: let `start = max(TAT, now)` and
    /// `new = start + count * interval`; pass if `new - now <= tolerance + interval`, else wait
    /// `new - now - (tolerance + interval)` if that is at most `max_wait`, else block. An
    /// admission sets the TAT to `new` (one CAS: exact under any number of threads). A `new`
    /// beyond `u64::MAX`, or an `interval` of `u64::MAX` (a threshold of 0), blocks with
    /// `retry_after: u64::MAX`.
    ///
    /// With `tolerance = (threshold + burst - 1) * interval`, an idle key admits
    /// `threshold + burst` calls at once, then `threshold` per window evenly spaced.
    // Inlined into the hotspot check with its lookup and step: 902 -> 814 instructions a
    // guarded call (callgrind), about 3% over a table of 1 million keys.
    #[inline]
    pub(crate) fn acquire_rate(
        &self,
        key: u64,
        now: u64,
        count: u32,
        interval: u64,
        tolerance: u64,
        max_wait: u64,
    ) -> RateDecision {
        // No prefetch here: the caller asked for the lines already ([`prefetch_key`], which
        // the entry does before it reads the clock), a second request only costs instructions.
        //
        // [`prefetch_key`]: ParamTable::prefetch_key
        let k = self.locate(key);
        self.acquire_rate_located(&k, now, count, interval, tolerance, max_wait)
    }

    /// [`acquire_rate`](Self::acquire_rate) of the key `k` was [located](Self::locate) as
    /// (by a caller that located it once for its prefetch too). A key in the table is admitted
    /// inline; an absent one, or one whose slot changed hands meanwhile, out of line.
    #[inline(always)]
    pub(crate) fn acquire_rate_located(
        &self,
        k: &Located,
        now: u64,
        count: u32,
        interval: u64,
        tolerance: u64,
        max_wait: u64,
    ) -> RateDecision {
        let r = RateRequest {
            count,
            interval: interval.max(1),
            tolerance,
            max_wait,
        };
        if let Some((bucket, i)) = self.find_in(k, OCCUPIED)
            && let Some(decision) = rate_in(bucket, i, k, now, &r)
        {
            return decision;
        }
        self.acquire_rate_again(*k, now, r)
    }

    /// The rest of [`acquire_rate_located`](Self::acquire_rate_located): the key absent (its
    /// insertion), or its slot given to another key since it was found (look again). Given
    /// copies: the common path's values then need no place in memory.
    #[cold]
    #[inline(never)]
    fn acquire_rate_again(&self, k: Located, now: u64, r: RateRequest) -> RateDecision {
        let (k, r) = (&k, &r);
        loop {
            match self.find(k, OCCUPIED) {
                Some(slot) => {
                    if let Some(decision) = self.rate_at(slot, k, now, r) {
                        return decision;
                    }
                    // The slot was given to another key meanwhile: look again.
                }
                None => {
                    // Absent: the key's state is fresh (a TAT at or before now).
                    let (fresh, _) = gcra(0, now, r);
                    if let RateDecision::Block { .. } = fresh {
                        return fresh;
                    }
                    return self.insert_rate(k, now, r);
                }
            }
        }
    }

    /// The reader's admission at `slot` (see the module docs); `None` if the slot no longer
    /// holds the key.
    #[inline(always)]
    fn rate_at(&self, slot: usize, k: &Located, now: u64, r: &RateRequest) -> Option<RateDecision> {
        rate_in(&self.buckets[slot / BUCKET], slot % BUCKET, k, now, r)
    }

    /// The insertion of an absent rate key, under its shard's lock.
    #[cold]
    #[inline(never)]
    fn insert_rate(&self, k: &Located, now: u64, r: &RateRequest) -> RateDecision {
        let shard = &self.shards[k.shard];
        let _locked = lock(&shard.lock);
        let slot = match self.find_or_empty(k, OCCUPIED) {
            Ok(slot) => slot,
            Err(empty) => {
                // A key forgotten while it owed time owes it still. (Its evictions are recorded
                // under this lock: the sketch holds every one of them.)
                let start = self.evicted.owed(self.mixed_of(k.shard, k.id)).max(now);
                if start > now {
                    let (decision, _) = gcra(start, now, r);
                    if let RateDecision::Block { .. } = decision {
                        // Blocked on what it owes: its state stays in the sketch, and a slot
                        // stays free for a key that will be admitted.
                        return decision;
                    }
                }
                let tag = k.id | OCCUPIED;
                match self.place(shard, k, tag, start, empty, Some(now), self.full) {
                    Ok(slot) => slot,
                    Err(retry_after) => {
                        shard.refused.fetch_add(1, Relaxed);
                        return RateDecision::Block { retry_after };
                    }
                }
            }
        };
        // Only the lock holder rewrites slots, so the key is still there.
        self.rate_at(slot, k, now, r)
            .unwrap_or(RateDecision::Block { retry_after: 0 })
    }

    /// Gives back a reservation of `count` calls at `interval` (a later check blocked the call,
    /// or its caller stopped waiting): `TAT = max(TAT - count * interval, 0)`. The give-back is
    /// exact while the reservation is the key's latest debt (a cancel right after the
    /// acquisition); nothing happens if the key is not in the table (its state, reservation
    /// included, was forgotten). One given back after the reservation has elapsed credits later
    /// admissions of the key with up to `count * interval`.
    pub(crate) fn cancel_rate(&self, key: u64, count: u32, interval: u64) {
        let give = u128::from(count) * u128::from(interval.max(1));
        let give = u64::try_from(give).unwrap_or(u64::MAX);
        if give == 0 {
            return;
        }
        let k = self.locate(key);
        if self.find(&k, OCCUPIED).is_none() {
            return;
        }
        let shard = &self.shards[k.shard];
        let _locked = lock(&shard.lock);
        let Some(slot) = self.find(&k, OCCUPIED) else {
            return;
        };
        let tag = self.key(slot).load(Acquire);
        let state = self.state(slot);
        loop {
            let word = state.word.load(Acquire);
            let tat = word.wrapping_sub(state.base.load(Acquire));
            let given_back = tat.saturating_sub(give);
            if given_back == tat || self.rewrite(slot, tag, word, tag, given_back) {
                return;
            }
        }
    }

    /// Takes a concurrency place for `key` if fewer than `max` calls of it are inside (one CAS:
    /// never more than `max`, under any number of threads). `Err` if `max` are inside, or if
    /// the key is new and no slot could be had.
    pub(crate) fn acquire_inflight(&self, key: u64, max: u64) -> Result<Place, ()> {
        if max == 0 {
            return Err(());
        }
        // (No prefetch: as in `acquire_rate`.)
        let k = self.locate(key);
        loop {
            match self.find(&k, OCCUPIED | CONCURRENCY) {
                Some(slot) => {
                    if let Some(taken) = self.inflight_at(slot, &k, max) {
                        return taken;
                    }
                }
                None => return self.insert_inflight(&k, max),
            }
        }
    }

    /// The reader's acquisition at `slot`; `None` if the slot no longer holds the key.
    #[inline]
    fn inflight_at(&self, slot: usize, k: &Located, max: u64) -> Option<Result<Place, ()>> {
        let key = self.key(slot);
        let state = self.state(slot);
        loop {
            let word = state.word.load(Acquire);
            let tag = key.load(Acquire);
            if tag == BUSY {
                A::spin_wait();
                continue;
            }
            if !matches(tag, k.id, OCCUPIED | CONCURRENCY) {
                return None;
            }
            // `base` only grows (releases): the count seen is at least the true one.
            let inside = word.wrapping_sub(state.base.load(Acquire));
            if inside < max {
                if state
                    .word
                    .compare_exchange(word, word.wrapping_add(1), AcqRel, Acquire)
                    .is_ok()
                {
                    return Some(Ok(Place(slot as u32)));
                }
            } else if state.word.load(Acquire) == word {
                return Some(Err(()));
            }
        }
    }

    /// The insertion of an absent concurrency key, under its shard's lock.
    #[cold]
    #[inline(never)]
    fn insert_inflight(&self, k: &Located, max: u64) -> Result<Place, ()> {
        let shard = &self.shards[k.shard];
        let _locked = lock(&shard.lock);
        let flags = OCCUPIED | CONCURRENCY;
        let slot = match self.find_or_empty(k, flags) {
            Ok(slot) => slot,
            Err(empty) => match self.place(shard, k, k.id | flags, 0, empty, None, self.full) {
                Ok(slot) => slot,
                Err(_) => {
                    shard.refused.fetch_add(1, Relaxed);
                    return Err(());
                }
            },
        };
        self.inflight_at(slot, k, max).unwrap_or(Err(()))
    }

    /// Gives back a place taken by [`acquire_inflight`](Self::acquire_inflight).
    #[inline]
    pub(crate) fn release_inflight(&self, slot: Place) {
        debug_assert!(
            (slot.0 as usize) < self.capacity(),
            "a slot of another table"
        );
        if let Some(state) = self
            .buckets
            .get(slot.0 as usize / BUCKET)
            .map(|b| &b.states[slot.0 as usize % BUCKET])
        {
            state.base.fetch_add(1, Release);
        }
    }
}

/// The reader's admission at position `i` of `bucket` (see the module docs); `None` if the slot
/// no longer holds the key.
#[inline(always)]
fn rate_in<A: AtomicWord>(
    bucket: &Bucket<A>,
    i: usize,
    k: &Located,
    now: u64,
    r: &RateRequest,
) -> Option<RateDecision> {
    let key = &bucket.keys[i];
    let state = &bucket.states[i];
    loop {
        let word = state.word.load(Acquire);
        let tag = key.load(Acquire);
        if tag == BUSY {
            A::spin_wait();
            continue;
        }
        if !matches(tag, k.id, OCCUPIED) {
            return None;
        }
        let tat = word.wrapping_sub(state.base.load(Acquire));
        let (decision, new_tat) = gcra(tat, now, r);
        if new_tat != tat {
            // (`new_tat > tat`: an admission only moves the TAT forward.)
            let next = word.wrapping_add(new_tat - tat);
            if state
                .word
                .compare_exchange(word, next, AcqRel, Acquire)
                .is_ok()
            {
                return Some(decision);
            }
        } else if state.word.load(Acquire) == word {
            return Some(decision);
        }
    }
}
