//! Eviction: which slot an absent key takes (an empty one, else an idle one, else by the
//! table's [`Full`] policy the live rate value with the least debt, whose TAT goes to the sketch
//! of evicted debts), the rewrite of a slot under its shard's lock, and pinning (a pinned key is
//! never evicted).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use crate::sync::AtomicWord;

use super::lookup::Located;
use super::table::{
    lock, Full, Kind, ParamTable, Shard, BUCKET, BUSY, CONCURRENCY, OCCUPIED, PINNED,
};

impl<A: AtomicWord> ParamTable<A> {
    /// Pins `key` (a rule's exception): it keeps its slot and state if present, else gets a slot
    /// now with a fresh state, and is never evicted until [unpinned](Self::unpin); the slot
    /// serves either kind of state. `false` if no slot could be had (its 16 slots pinned or with
    /// calls inside); a live rate value may be evicted to make room.
    pub(crate) fn pin(&self, key: u64) -> bool {
        let k = self.locate(key);
        let shard = &self.shards[k.shard];
        let _locked = lock(&shard.lock);
        let pinned = k.id | OCCUPIED | PINNED;
        match self.find_any(&k) {
            Ok(slot) => {
                // Readers accept either tag, so a plain store is enough.
                self.key(slot).store(pinned, Release);
                true
            }
            Err(empty) => self
                .place(shard, &k, pinned, 0, empty, None, Full::Evict)
                .is_ok(),
        }
    }

    /// Unpins `key` (a value a rule no longer lists): it keeps its slot and its state, as a
    /// key of `kind`, and may be evicted again like any other. Nothing if `key` is not pinned.
    pub(crate) fn unpin(&self, key: u64, kind: Kind) {
        let k = self.locate(key);
        let shard = &self.shards[k.shard];
        let _locked = lock(&shard.lock);
        let pinned = k.id | OCCUPIED | PINNED;
        if let Ok(slot) = self.find_or_empty(&k, OCCUPIED | PINNED) {
            // Only the lock holder writes key words, and readers of `kind` accept either tag
            // (one that sees the tag change looks the key up again), so a plain store is
            // enough.
            debug_assert_eq!(self.key(slot).load(Acquire), pinned);
            self.key(slot).store(k.id | kind.flags(), Release);
        }
    }

    /// Under the shard's lock: a slot for the absent key `k`, now tagged `tag` with the value
    /// `fresh` (a rate key's TAT, at least `now`; else 0). Takes `empty` (the first empty slot
    /// of the emptier bucket, found by the lookup), else an idle slot, else applies `full`; a
    /// live rate value evicted leaves its TAT in the sketch of evicted debts. `Err`:
    /// nanoseconds until the first candidate becomes idle (`u64::MAX`: unknown).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn place(
        &self,
        shard: &Shard<A>,
        k: &Located,
        tag: u64,
        fresh: u64,
        empty: Option<usize>,
        now: Option<u64>,
        full: Full,
    ) -> Result<usize, u64> {
        if let Some(slot) = empty {
            // Never used: its word and base are 0 and no reader writes them (none finds its
            // tag yet), so `base` alone gives it its value before the tag is published.
            self.state(slot).base.store(fresh.wrapping_neg(), Release);
            self.key(slot).store(tag, Release);
            shard.len.fetch_add(1, Relaxed);
            return Ok(slot);
        }
        // (No slot empties while the lock is held: no need to look for one again.)
        'choose: loop {
            // (slot, its tag, its word, its TAT): the live rate value with the least debt.
            let mut least: Option<(usize, u64, u64, u64)> = None;
            for slot in k
                .buckets()
                .iter()
                .flat_map(|&b| b * BUCKET..(b + 1) * BUCKET)
            {
                // Stable: only the lock holder writes key words.
                let old = self.key(slot).load(Acquire);
                if old & PINNED != 0 {
                    continue;
                }
                let state = self.state(slot);
                let word = state.word.load(Acquire);
                let value = word.wrapping_sub(state.base.load(Acquire));
                let idle = if old & CONCURRENCY != 0 {
                    value == 0
                } else {
                    now.is_some_and(|now| value <= now)
                };
                if idle {
                    if self.rewrite(slot, old, word, tag, fresh) {
                        return Ok(slot);
                    }
                    // A reader used the value meanwhile: it may be live now.
                    continue 'choose;
                }
                if old & CONCURRENCY == 0 && least.is_none_or(|(.., tat)| value < tat) {
                    least = Some((slot, old, word, value));
                }
            }
            return match least {
                Some((slot, old, word, tat)) if full == Full::Evict => {
                    if !self.rewrite(slot, old, word, tag, fresh) {
                        continue 'choose;
                    }
                    // Its key's later insertions take this shard's lock too: they see it.
                    self.evicted.record(self.mixed_of(k.shard, old), tat);
                    shard.live_evictions.fetch_add(1, Relaxed);
                    Ok(slot)
                }
                Some((.., tat)) => Err(now.map_or(u64::MAX, |now| tat.saturating_sub(now))),
                None => Err(u64::MAX),
            };
        }
    }

    /// Under the shard's lock: gives `slot` (tagged `old`, its word read as `word`) the tag
    /// `tag` and the value `value`, if no reader wrote its word since (else `false`, nothing
    /// changed).
    pub(super) fn rewrite(&self, slot: usize, old: u64, word: u64, tag: u64, value: u64) -> bool {
        let key = self.key(slot);
        let state = self.state(slot);
        key.store(BUSY, Release);
        let claimed = word.wrapping_add(1);
        if state
            .word
            .compare_exchange(word, claimed, AcqRel, Acquire)
            .is_err()
        {
            key.store(old, Release);
            return false;
        }
        state.base.store(claimed.wrapping_sub(value), Release);
        key.store(tag, Release);
        true
    }
}
