//! The table itself: its layout (shards of buckets of slots), the per-slot words, the shard
//! lock, and building, pinning and reading a table. Admission, eviction and lookup extend it in
//! their own files.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicWord, HugeSlice};

use super::debt_sketch::DebtSketch;

/// Slots per bucket: 8 key words, one cache line.
pub(super) const BUCKET: usize = 8;
/// Key-word flag: the slot holds a key (every tag has it).
pub(super) const OCCUPIED: u64 = 1;
/// Key-word flag: the value counts calls inside (else it is a TAT).
pub(super) const CONCURRENCY: u64 = 2;
/// Key-word flag: the key is pinned (never evicted; one slot for both kinds).
pub(super) const PINNED: u64 = 4;
/// A slot never used.
pub(super) const EMPTY: u64 = 0;
/// A slot being rewritten by its shard's lock holder (not a tag: `OCCUPIED` is clear).
pub(super) const BUSY: u64 = 2;
/// At least 3 shard bits, so that a tag has room for the 3 flags.
pub(super) const MIN_SHARDS: usize = 8;
pub(super) const MAX_SHARDS: usize = 64;
/// The largest capacity a table is built with (slot indices fit in a `u32`).
pub(super) const MAX_CAPACITY: usize = 1 << 30;

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
    pub(super) fn flags(self) -> u64 {
        match self {
            Kind::Rate => OCCUPIED,
            Kind::Inflight => OCCUPIED | CONCURRENCY,
        }
    }
}

/// A concurrency place taken by [`ParamTable::acquire_inflight`]: give it back with
/// [`ParamTable::release_inflight`], exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Place(pub(super) u32);

#[cfg(test)]
impl Place {
    /// A place with an arbitrary index, for tests of the code that carries places around.
    pub(crate) const fn arbitrary(index: u32) -> Place {
        Place(index)
    }
}

/// 8 key words on one cache line, then their 8 states on the next two.
#[repr(C, align(64))]
pub(super) struct Bucket<A> {
    pub(super) keys: [A; BUCKET],
    pub(super) states: [State<A>; BUCKET],
}

/// A slot's state: its value is `word - base` (see the module docs).
#[repr(C)]
pub(super) struct State<A> {
    pub(super) word: A,
    pub(super) base: A,
}

/// A shard's lock and counters (on their own cache line).
pub(super) struct Shard<A> {
    /// 1 while a thread inserts, evicts, gives back or pins in the shard.
    pub(super) lock: A,
    /// Slots ever taken (slots are reused, never emptied).
    pub(super) len: A,
    pub(super) live_evictions: A,
    pub(super) refused: A,
}

/// The shard lock, held (released on drop).
pub(super) struct Locked<'a, A: AtomicWord>(&'a A);

impl<A: AtomicWord> Drop for Locked<'_, A> {
    fn drop(&mut self) {
        self.0.store(0, Release);
    }
}

pub(super) fn lock<A: AtomicWord>(word: &A) -> Locked<'_, A> {
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
    pub(super) buckets: HugeSlice<Bucket<A>>,
    pub(super) shards: Box<[CachePadded<Shard<A>>]>,
    pub(super) shard_bits: u32,
    pub(super) buckets_per_shard: u64,
    pub(super) full: Full,
    /// Whether lookups prefetch (see [`PREFETCH_BYTES`]).
    pub(super) prefetch: bool,
    /// What the rate values forgotten while live owed: a value re-entering starts from it.
    pub(super) evicted: DebtSketch<A>,
}

/// Tables of more bytes than this prefetch a lookup's lines: in a table that outgrows the
/// caches, the lines are misses to memory whose latencies overlap when asked for at once (1
/// million keys in a table of capacity 1 million: 349 -> 284 ns an entry, measured with a loop
/// of entries); a table that fits in the caches has nothing to gain, and the prefetches cost
/// a little (1 000 keys cycled through the same table: 118 -> 140 ns).
pub(super) const PREFETCH_BYTES: usize = 8 << 20;

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
    pub(super) fn with_geometry(shards: usize, buckets_per_shard: usize, full: Full) -> Self {
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
