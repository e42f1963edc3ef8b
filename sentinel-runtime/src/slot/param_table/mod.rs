//! [`ParamTable`]: the per-value state of one hotspot rule, in a fixed allocation. Values are
//! keyed by their 64-bit hash (any `u64`, 0 included); each value keeps either a GCRA rate
//! state ([`acquire_rate`](ParamTable::acquire_rate)) or a count of calls inside
//! ([`acquire_inflight`](ParamTable::acquire_inflight)).
//!
//! Nothing a client sends can grow it: [`ParamTable::new`] allocates every slot, and a new value
//! that finds no room takes the slot of an idle one (a rate value whose TAT is at or before now,
//! or a concurrency value with no call inside: forgetting either loses nothing), else, by the
//! table's [`Full`] policy, the slot of the live rate value with the least debt, or nothing (the
//! call is blocked). A value with calls inside and a [pinned](ParamTable::pin) value are never
//! forgotten. A live rate value evicted leaves its TAT in a fixed sketch of evicted debts
//! (`debt_sketch`), and a rate key inserted later starts from what the sketch answers for it
//! (at least what it owed), so no key comes back with an allowance it had spent; a key whose
//! answer blocks it is not inserted.
//!
//! # Layout
//!
//! 24 bytes a slot, all allocated by [`ParamTable::new`] (2 slots per value of capacity): a table
//! never allocates after it is built. Slots come in buckets of 8: the 8 key words on one cache
//! line, the 8 states on the next two (a bucket is one 192-byte block, so a lookup's lines almost
//! always share a page and a TLB entry: 192 does not divide 4 KiB, so a few buckets straddle two
//! pages), and buckets live in shards of equal size. A key is first scrambled by a bijective
//! mixer; the top bits of the mixed key pick the shard, two further functions of it pick two
//! buckets in that shard (two-choice hashing: a key lives in one of 16 slots), so a lookup reads
//! at most two lines of keys. Each slot has a key word and a state of two words, `word` and `base`:
//!
//! * the key word is 0 (empty, never used), `BUSY` (the slot is being rewritten), or a *tag*: the
//!   mixed key shifted left by the shard bits (which the shard implies), with three flags in the
//!   bits freed: occupied, concurrency (else rate), pinned (either kind). Tags of different keys
//!   differ, so a key is found by one comparison per slot and never mistaken for another.
//! * the slot's *value* is `word - base` (wrapping): a rate value's TAT in nanoseconds, or a
//!   concurrency value's calls inside (`word` counts acquisitions, `base` releases).
//!
//! # Protocol
//!
//! * **`word` only grows.** Every write to it adds: an admission adds `new TAT - TAT` (> 0), an
//!   acquisition 1, a rewrite's claim 1. So a CAS on `word` that succeeds proves that nobody
//!   wrote it since it was read, and a re-read that finds it unchanged proves the same (short of
//!   2^64 of growth between a reader's load and its CAS): there is no ABA, even when a slot
//!   passes from one key to another and back.
//! * **Reading** (no lock, no write but the CAS on the key's own `word`): find the tag in the two
//!   buckets; load `word`, then the key word (`BUSY`: wait for the rewrite; another tag: the key
//!   moved, look again), then `base`. Decide with a pure function of the value and commit by a
//!   CAS of `word` to `word + delta`; a decision that writes nothing (a block) is confirmed by
//!   re-reading `word`. Either way the snapshot is consistent: a rewrite marks the key word
//!   `BUSY` and changes `word` before it touches `base` or writes the new tag.
//! * **Rewriting** a slot (a new key taking it, a give-back) is done only by the holder of the
//!   shard's lock (a spin lock on one word; waiters call `AtomicWord::spin_wait`, which yields):
//!   store the key word `BUSY`; claim by a CAS of `word` to `word + 1` (it fails if a reader
//!   committed since `word` was read: restore the key word and decide again, since an idle value
//!   may be live now); store `base` to give the slot its new value; store the key word (the new
//!   tag, or the old one). A reader that loaded `word` before the claim fails its CAS or its
//!   re-read; one that loaded it after sees `BUSY`, or the new tag and with it the new `base`.
//! * **Inserting** a key: look it up again under the shard's lock, then take the first empty slot
//!   of the emptier bucket (so a bucket's used slots come first, and a scan stops at its first
//!   empty slot), else an idle slot, else apply the policy. The new key's first admission runs
//!   (as a reader) before the lock is released, so a flood of new keys cannot take its slot
//!   before it is used. A key whose fresh state would block anyway is not inserted at all.
//! * **Releasing** a concurrency place adds 1 to `base`: the slot cannot be rewritten while a call
//!   is inside, so the release lands on the counter the acquisition took.
//!
//! # Exactness
//!
//! A rate admission is a CAS from the TAT it was decided on, so no number of threads admits more
//! than the GCRA allows; a concurrency acquisition is a CAS from the count it saw, so no value
//! ever has more than `max` calls inside. What the table forgets is only ever idle state, except
//! for the [`Full::Evict`] policy's live evictions (counted in
//! [`live_evictions`](ParamTable::live_evictions)), whose TATs the sketch keeps (recorded and
//! read under the key's shard lock; a cell only grows, by a CAS loop, so records of other
//! shards' keys into the same cell lose nothing).
//!
//! A table serves one kind of state. Both kinds may share a table (the kind is part of the tag),
//! but a pinned key has one slot for both, and [`cancel_rate`](ParamTable::cancel_rate) must only
//! be used with rate keys.
//!
//! # Files
//!
//! This file holds the table's layout (slots, buckets, shards), its construction and counters;
//! `lookup` finds a key's slot, `admission` admits, inserts and gives back, `gcra` is the rate
//! arithmetic, `eviction` chooses and rewrites the slot a new or pinned key takes, and
//! `debt_sketch` keeps what evicted values owed. The loom models of the protocol are in
//! `model_tests::loom_param_table`.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicWord, HugeSlice};

mod admission;
mod debt_sketch;
mod eviction;
mod gcra;
mod lookup;
#[cfg(test)]
mod tests;

#[cfg(not(test))]
use debt_sketch::DebtSketch;
#[cfg(test)]
pub(crate) use debt_sketch::DebtSketch;
pub(crate) use gcra::RateDecision;
pub(crate) use lookup::Located;

/// Slots per bucket: 8 key words, one cache line.
const BUCKET: usize = 8;
/// Key-word flag: the slot holds a key (every tag has it).
const OCCUPIED: u64 = 1;
/// Key-word flag: the value counts calls inside (else it is a TAT).
const CONCURRENCY: u64 = 2;
/// Key-word flag: the key is pinned (never evicted; one slot for both kinds).
const PINNED: u64 = 4;
/// A slot never used.
const EMPTY: u64 = 0;
/// A slot being rewritten by its shard's lock holder (not a tag: `OCCUPIED` is clear).
const BUSY: u64 = 2;
/// At least 3 shard bits, so that a tag has room for the 3 flags.
const MIN_SHARDS: usize = 8;
const MAX_SHARDS: usize = 64;
/// The largest capacity a table is built with (slot indices fit in a `u32`).
const MAX_CAPACITY: usize = 1 << 30;

/// What a table does with a new key when its slots hold only live values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Full {
    /// Forget the live rate value with the least debt (the TAT nearest to now); counted in
    /// [`ParamTable::live_evictions`]. Never a value with calls inside, never a pinned one.
    #[default]
    Evict,
    /// Refuse the new key: its call is blocked; counted in [`ParamTable::refused`].
    // Not yet offered by `HotspotRule` (its policy is always `Evict`); tested here.
    #[cfg_attr(not(test), allow(dead_code))]
    Block,
}

/// The kind of state a table's key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A GCRA TAT ([`ParamTable::acquire_rate`]).
    Rate,
    /// A count of calls inside ([`ParamTable::acquire_inflight`]).
    Inflight,
}

impl Kind {
    /// The key-word flags of an unpinned key of this kind.
    fn flags(self) -> u64 {
        match self {
            Kind::Rate => OCCUPIED,
            Kind::Inflight => OCCUPIED | CONCURRENCY,
        }
    }
}

/// A concurrency place taken by [`ParamTable::acquire_inflight`]: give it back with
/// [`ParamTable::release_inflight`], exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Place(u32);

#[cfg(test)]
impl Place {
    /// A place with an arbitrary index, for tests of the code that carries places around.
    pub(crate) const fn arbitrary(index: u32) -> Place {
        Place(index)
    }
}

/// 8 key words on one cache line, then their 8 states on the next two.
#[repr(C, align(64))]
struct Bucket<A> {
    keys: [A; BUCKET],
    states: [State<A>; BUCKET],
}

/// A slot's state: its value is `word - base` (see the module docs).
#[repr(C)]
struct State<A> {
    word: A,
    base: A,
}

/// A shard's lock and counters (on their own cache line).
struct Shard<A> {
    /// 1 while a thread inserts, evicts, gives back or pins in the shard.
    lock: A,
    /// Slots ever taken (slots are reused, never emptied).
    len: A,
    live_evictions: A,
    refused: A,
}

/// The shard lock, held (released on drop).
struct Locked<'a, A: AtomicWord>(&'a A);

impl<A: AtomicWord> Drop for Locked<'_, A> {
    fn drop(&mut self) {
        self.0.store(0, Release);
    }
}

fn lock<A: AtomicWord>(word: &A) -> Locked<'_, A> {
    loop {
        if word.load(Relaxed) == 0 && word.compare_exchange(0, 1, Acquire, Relaxed).is_ok() {
            return Locked(word);
        }
        // The holder's section is a few dozen loads and stores.
        A::spin_wait();
    }
}

/// The per-value state of one hotspot rule (see the module docs).
pub(crate) struct ParamTable<A: AtomicWord = AtomicU64> {
    /// On huge pages where the system allows (a lookup reads two buckets anywhere).
    buckets: HugeSlice<Bucket<A>>,
    shards: Box<[CachePadded<Shard<A>>]>,
    shard_bits: u32,
    buckets_per_shard: u64,
    full: Full,
    /// Whether lookups prefetch (see [`PREFETCH_BYTES`]).
    prefetch: bool,
    /// What the rate values forgotten while live owed: a value re-entering starts from it.
    evicted: DebtSketch<A>,
}

/// Tables of more bytes than this prefetch a lookup's lines: in a table that outgrows the
/// caches, the lines are misses to memory whose latencies overlap when asked for at once (1
/// million keys in a table of capacity 1 million: 349 -> 284 ns an entry, measured with a loop
/// of entries); a table that fits in the caches has nothing to gain, and the prefetches cost
/// a little (1 000 keys cycled through the same table: 118 -> 140 ns).
const PREFETCH_BYTES: usize = 8 << 20;

impl<A: AtomicWord> fmt::Debug for ParamTable<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamTable")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("full", &self.full)
            .field("live_evictions", &self.live_evictions())
            .field("refused", &self.refused())
            .finish()
    }
}

impl<A: AtomicWord> ParamTable<A> {
    /// A table for `capacity` live values (clamped to `1..=2^30`), allocated at once: 2 slots
    /// per value, rounded up to whole buckets of 8, at least 2 buckets in each of 8 to 64
    /// shards. Two-choice placement in buckets of 8 first finds a new key's 16 slots all taken
    /// at 60-80% of the slots (measured: 1.35 to 1.9 times `capacity`), so `capacity` live
    /// values fit with room to spare.
    /// [`capacity`](Self::capacity) gives the slot count, the bound on [`len`](Self::len).
    pub(crate) fn new(capacity: usize, full: Full) -> Self {
        let (shards, buckets_per_shard) = Self::geometry(capacity);
        Self::with_geometry(shards, buckets_per_shard, full)
    }

    /// The shards and buckets per shard of [`new`](Self::new)`(capacity)`.
    fn geometry(capacity: usize) -> (usize, usize) {
        let wanted = capacity.clamp(1, MAX_CAPACITY) * 2;
        let shards = wanted
            .div_ceil(256)
            .next_power_of_two()
            .clamp(MIN_SHARDS, MAX_SHARDS);
        (shards, wanted.div_ceil(shards * BUCKET).max(2))
    }

    /// The bytes [`new`](Self::new)`(capacity)` allocates (its
    /// [`allocated_bytes`](Self::allocated_bytes)), found without allocating them: what a rule's
    /// table will cost before it is built.
    pub(crate) fn bytes_for(capacity: usize) -> usize {
        let (shards, buckets_per_shard) = Self::geometry(capacity);
        shards * buckets_per_shard * std::mem::size_of::<Bucket<A>>()
            + shards * std::mem::size_of::<CachePadded<Shard<A>>>()
            + DebtSketch::<A>::bytes_for(shards * buckets_per_shard * BUCKET)
            + std::mem::size_of::<Self>()
    }

    /// A table of `shards` (a power of two in `8..=64`) of `buckets_per_shard` buckets of 8.
    fn with_geometry(shards: usize, buckets_per_shard: usize, full: Full) -> Self {
        let shards = shards.clamp(MIN_SHARDS, MAX_SHARDS).next_power_of_two();
        let buckets_per_shard = buckets_per_shard.max(1);
        let total = shards * buckets_per_shard;
        ParamTable {
            buckets: HugeSlice::from_fn(total, |_| Bucket {
                keys: std::array::from_fn(|_| A::new(EMPTY)),
                states: std::array::from_fn(|_| State {
                    word: A::new(0),
                    base: A::new(0),
                }),
            }),
            shards: (0..shards)
                .map(|_| {
                    CachePadded::new(Shard {
                        lock: A::new(0),
                        len: A::new(0),
                        live_evictions: A::new(0),
                        refused: A::new(0),
                    })
                })
                .collect(),
            shard_bits: shards.trailing_zeros(),
            buckets_per_shard: buckets_per_shard as u64,
            full,
            prefetch: total * std::mem::size_of::<Bucket<A>>() > PREFETCH_BYTES,
            evicted: DebtSketch::new(total * BUCKET),
        }
    }

    /// Slots: the most values the table holds at once.
    pub(crate) fn capacity(&self) -> usize {
        self.buckets.len() * BUCKET
    }

    /// Slots holding a value (idle ones included: they are forgotten only when a slot is
    /// needed).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.len.load(Relaxed) as usize)
            .sum()
    }

    /// Live rate values forgotten to make room ([`Full::Evict`]).
    pub(crate) fn live_evictions(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.live_evictions.load(Relaxed))
            .sum()
    }

    /// Calls blocked because no slot could be had ([`Full::Block`], or every candidate slot
    /// pinned or with calls inside).
    pub(crate) fn refused(&self) -> u64 {
        self.shards.iter().map(|s| s.refused.load(Relaxed)).sum()
    }

    /// Bytes allocated by [`new`](Self::new) (all the table ever allocates).
    // Measured by the tests (bytes per key); nothing reads it at run time yet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn allocated_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
            + std::mem::size_of_val(&*self.shards)
            + self.evicted.allocated_bytes()
            + std::mem::size_of::<Self>()
    }
}

/// What the tests here and the loom models (`model_tests::loom_param_table`) read inside a table.
#[cfg(test)]
impl<A: AtomicWord> ParamTable<A> {
    /// The value of `key` of kind `flags` (a TAT, or calls inside), if present.
    fn value_of(&self, key: u64, flags: u64) -> Option<u64> {
        let k = self.locate(key);
        let slot = self.find(&k, flags)?;
        let state = self.state(slot);
        Some(
            state
                .word
                .load(Acquire)
                .wrapping_sub(state.base.load(Acquire)),
        )
    }

    /// The TAT of rate key `key`, if present.
    pub(crate) fn tat(&self, key: u64) -> Option<u64> {
        self.value_of(key, OCCUPIED)
    }

    /// The calls inside of concurrency key `key`, if present.
    pub(crate) fn inside(&self, key: u64) -> Option<u64> {
        self.value_of(key, OCCUPIED | CONCURRENCY)
    }

    /// The smallest table: 8 shards of one bucket (8 slots a shard).
    pub(crate) fn smallest(full: Full) -> Self {
        Self::with_geometry(8, 1, full)
    }

    /// The shard of `key`.
    pub(crate) fn shard_of(&self, key: u64) -> usize {
        self.locate(key).shard
    }

    /// The key word of the slot of rate key `key` (its tag, pinned or not), if present.
    pub(crate) fn rate_key_word(&self, key: u64) -> Option<u64> {
        let slot = self.find(&self.locate(key), OCCUPIED)?;
        Some(self.key(slot).load(Acquire))
    }

    /// The tag of `key` unpinned, as a key of `kind`.
    pub(crate) fn tag_of(&self, key: u64, kind: Kind) -> u64 {
        self.locate(key).id | kind.flags()
    }
}
