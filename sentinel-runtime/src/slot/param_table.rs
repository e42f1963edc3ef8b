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

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicWord, HugeSlice};

mod debt_sketch;
use debt_sketch::DebtSketch;

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

/// A hint to the CPU to bring the cache line of `value` in; nothing is read.
#[inline(always)]
fn prefetch_line<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program, never faults, and
    // `value` is a live reference anyway. SSE (which has it) is part of every x86_64 target.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The outcome of [`ParamTable::acquire_rate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RateDecision {
    /// Admitted now.
    Pass,
    /// Admitted; the caller waits this many nanoseconds (until `now + wait`).
    Wait(u64),
    /// Not admitted. `retry_after`, in nanoseconds: the request's excess over the tolerance
    /// (after that long the same request passes, if nothing else was admitted meanwhile and it
    /// fits the tolerance at all); for a new key refused for want of a slot, the time until one
    /// of its slots turns idle; `u64::MAX`: never (a threshold of 0, a TAT past `u64::MAX`) or
    /// unknown.
    Block { retry_after: u64 },
}

/// A concurrency place taken by [`ParamTable::acquire_inflight`]: give it back with
/// [`ParamTable::release_inflight`], exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Slot(u32);

#[cfg(test)]
impl Slot {
    /// A place with an arbitrary index, for tests of the code that carries places around.
    pub(crate) const fn arbitrary(index: u32) -> Slot {
        Slot(index)
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

/// Where a key lives: its shard, its tag without flags, its buckets (one or two).
#[derive(Clone, Copy, Debug)]
struct Located {
    shard: usize,
    id: u64,
    buckets: [usize; 2],
    /// 1 if both choices are the same bucket, else 2.
    distinct: usize,
}

impl Located {
    /// The key's buckets.
    #[inline(always)]
    fn buckets(&self) -> &[usize] {
        &self.buckets[..self.distinct]
    }
}

/// What a rate acquisition asks for (see [`ParamTable::acquire_rate`]).
#[derive(Clone, Copy, Debug)]
struct RateRequest {
    count: u32,
    interval: u64,
    tolerance: u64,
    max_wait: u64,
}

/// The GCRA step from `tat` at `now`: the decision and the TAT it leaves (unchanged on a
/// block). A TAT past `u64::MAX` cannot be kept, so such a request blocks, and an interval of
/// `u64::MAX` (a threshold of 0) passes nothing.
fn gcra(tat: u64, now: u64, r: &RateRequest) -> (RateDecision, u64) {
    if r.interval == u64::MAX {
        // A threshold of 0 (even at `now == 0`, where one such interval would still fit).
        return (
            RateDecision::Block {
                retry_after: u64::MAX,
            },
            tat,
        );
    }
    let now_wide = u128::from(now);
    let start = u128::from(tat).max(now_wide);
    let new_tat = start + u128::from(r.count) * u128::from(r.interval);
    let Ok(kept) = u64::try_from(new_tat) else {
        return (
            RateDecision::Block {
                retry_after: u64::MAX,
            },
            tat,
        );
    };
    let ahead = new_tat - now_wide;
    let limit = u128::from(r.tolerance) + u128::from(r.interval);
    if ahead <= limit {
        return (RateDecision::Pass, kept);
    }
    let wait = u64::try_from(ahead - limit).unwrap_or(u64::MAX);
    if wait <= r.max_wait {
        (RateDecision::Wait(wait), kept)
    } else {
        (
            RateDecision::Block {
                retry_after: retry_after(wait, r, limit),
            },
            tat,
        )
    }
}

/// When a blocked request may pass: after `wait`, unless it is blocked even from idle (a batch
/// larger than the threshold and burst, beyond what `max_wait` covers), then never (`u64::MAX`).
fn retry_after(wait: u64, r: &RateRequest, limit: u128) -> u64 {
    let from_idle = u128::from(r.count) * u128::from(r.interval);
    if from_idle > limit && from_idle - limit > u128::from(r.max_wait) {
        u64::MAX
    } else {
        wait
    }
}

/// A bijection of `u64` (splitmix64's finalizer): distinct keys stay distinct, and every bit of
/// the key reaches the bits that pick the shard and the buckets.
#[inline]
fn mix(key: u64) -> u64 {
    let mut x = key;
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// `x` scaled into `0..n` (`n <= 2^32`) without a division.
#[inline]
fn fastrange(x: u32, n: u64) -> usize {
    ((u64::from(x) * n) >> 32) as usize
}

/// Whether key word `word` is the key `id` with kind `flags`, or the key pinned.
#[inline]
fn matches(word: u64, id: u64, flags: u64) -> bool {
    word == id | flags || word == id | OCCUPIED | PINNED
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

    #[inline]
    fn locate(&self, key: u64) -> Located {
        let mixed = mix(key);
        let shard = (mixed >> (64 - self.shard_bits)) as usize;
        let first = shard * self.buckets_per_shard as usize;
        let one = fastrange((mixed >> 26) as u32, self.buckets_per_shard);
        let mut two = fastrange(
            (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32,
            self.buckets_per_shard,
        );
        // Two choices always, where the shard has two buckets: a key whose second bucket
        // coincided with its first had 8 slots instead of 16, and such keys met a bucket full of
        // live values about once in 10^8 insertions at a tenth of the table live (a live value
        // then forgotten), against never in practice with 16.
        if two == one && self.buckets_per_shard > 1 {
            two = (one + 1) % self.buckets_per_shard as usize;
        }
        Located {
            shard,
            id: mixed << self.shard_bits,
            buckets: [first + one, first + two],
            distinct: if one == two { 1 } else { 2 },
        }
    }

    /// The mixed key of a key of `shard` whose tag (or id) is `tag`: the tag is the mixed key
    /// shifted left by the shard bits (flags in the bits freed), and the shard is its top bits.
    fn mixed_of(&self, shard: usize, tag: u64) -> u64 {
        (tag >> self.shard_bits) | ((shard as u64) << (64 - self.shard_bits))
    }

    /// Asks the CPU to start loading every line a lookup of `k` may read (the key line of each
    /// of its buckets and the two lines of their states) at once, so that their cache misses overlap instead of
    /// following one another (over a large table each is a miss to memory).
    #[inline(always)]
    fn prefetch(&self, k: &Located) {
        if !self.prefetch {
            return;
        }
        for &bucket in k.buckets() {
            prefetch_line(&self.buckets[bucket]);
            let states = &self.buckets[bucket].states;
            // 8 states of 16 bytes: the two lines after the keys'.
            prefetch_line(&states[0]);
            prefetch_line(&states[BUCKET / 2]);
        }
    }

    /// Starts loading the lines a lookup of `key` will read (see [`prefetch`](Self::prefetch)),
    /// for a caller with other work to do before the lookup: the misses then overlap that work.
    #[inline]
    pub(crate) fn prefetch_key(&self, key: u64) {
        if self.prefetch {
            self.prefetch(&self.locate(key));
        }
    }

    #[inline(always)]
    fn state(&self, slot: usize) -> &State<A> {
        &self.buckets[slot / BUCKET].states[slot % BUCKET]
    }

    #[inline(always)]
    fn key(&self, slot: usize) -> &A {
        &self.buckets[slot / BUCKET].keys[slot % BUCKET]
    }

    /// The slot holding key `k` of kind `flags` (or pinned), if any (a slot being rewritten is
    /// skipped). A bucket's used slots come first (slots are taken in order and never emptied),
    /// so the scan of a bucket stops at its first empty slot.
    #[inline]
    fn find(&self, k: &Located, flags: u64) -> Option<usize> {
        self.find_or_empty(k, flags).ok()
    }

    /// The slot holding key `k` of kind `flags` (or pinned), else the first empty slot of the
    /// emptier of its buckets, if any.
    #[inline(always)]
    fn find_or_empty(&self, k: &Located, flags: u64) -> Result<usize, Option<usize>> {
        let (own, pinned) = (k.id | flags, k.id | OCCUPIED | PINNED);
        // (used slots, the first empty one)
        let mut emptiest: Option<(usize, usize)> = None;
        for &bucket in k.buckets() {
            let keys = &self.buckets[bucket].keys;
            let mut used = 0;
            while used < BUCKET {
                let word = keys[used].load(Acquire);
                if word == own || word == pinned {
                    return Ok(bucket * BUCKET + used);
                }
                if word == EMPTY {
                    break;
                }
                used += 1;
            }
            if used < BUCKET && emptiest.is_none_or(|(fewest, _)| used < fewest) {
                emptiest = Some((used, bucket * BUCKET + used));
            }
        }
        Err(emptiest.map(|(_, slot)| slot))
    }

    /// The slot holding key `k` of any kind, else the first empty slot of the emptier of its
    /// buckets, if any.
    fn find_any(&self, k: &Located) -> Result<usize, Option<usize>> {
        match self.find_or_empty(k, OCCUPIED) {
            Err(_) => self.find_or_empty(k, OCCUPIED | CONCURRENCY),
            found => found,
        }
    }

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
        let r = RateRequest {
            count,
            interval: interval.max(1),
            tolerance,
            max_wait,
        };
        let k = self.locate(key);
        self.prefetch(&k);
        loop {
            match self.find(&k, OCCUPIED) {
                Some(slot) => {
                    if let Some(decision) = self.rate_at(slot, &k, now, &r) {
                        return decision;
                    }
                    // The slot was given to another key meanwhile: look again.
                }
                None => {
                    // Absent: the key's state is fresh (a TAT at or before now).
                    let (fresh, _) = gcra(0, now, &r);
                    if let RateDecision::Block { .. } = fresh {
                        return fresh;
                    }
                    return self.insert_rate(&k, now, &r);
                }
            }
        }
    }

    /// The reader's admission at `slot` (see the module docs); `None` if the slot no longer
    /// holds the key.
    #[inline(always)]
    fn rate_at(&self, slot: usize, k: &Located, now: u64, r: &RateRequest) -> Option<RateDecision> {
        let key = self.key(slot);
        let state = self.state(slot);
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
    pub(crate) fn acquire_inflight(&self, key: u64, max: u64) -> Result<Slot, ()> {
        if max == 0 {
            return Err(());
        }
        let k = self.locate(key);
        self.prefetch(&k);
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
    fn inflight_at(&self, slot: usize, k: &Located, max: u64) -> Option<Result<Slot, ()>> {
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
                    return Some(Ok(Slot(slot as u32)));
                }
            } else if state.word.load(Acquire) == word {
                return Some(Err(()));
            }
        }
    }

    /// The insertion of an absent concurrency key, under its shard's lock.
    #[cold]
    #[inline(never)]
    fn insert_inflight(&self, k: &Located, max: u64) -> Result<Slot, ()> {
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
    pub(crate) fn release_inflight(&self, slot: Slot) {
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
    fn place(
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
    fn rewrite(&self, slot: usize, old: u64, word: u64, tag: u64, value: u64) -> bool {
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

    /// The value of `key` of kind `flags` (a TAT, or calls inside), if present.
    #[cfg(test)]
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
    #[cfg(test)]
    fn tat(&self, key: u64) -> Option<u64> {
        self.value_of(key, OCCUPIED)
    }

    /// The calls inside of concurrency key `key`, if present.
    #[cfg(test)]
    fn inside(&self, key: u64) -> Option<u64> {
        self.value_of(key, OCCUPIED | CONCURRENCY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64 as StdWord;
    use std::sync::{Arc, Barrier};
    use std::thread;

    use proptest::prelude::*;

    use RateDecision::{Block, Pass, Wait};

    const SECOND: u64 = 1_000_000_000;
    /// Tests start an hour in (as the mock clock does).
    const T0: u64 = 3_600 * SECOND;

    type Table = ParamTable<StdWord>;

    #[test]
    fn every_key_has_two_distinct_buckets_in_its_shard_where_the_shard_has_two() {
        for buckets_per_shard in [1, 2, 3, 5, 64, 1000] {
            let t = Table::with_geometry(8, buckets_per_shard, Full::Evict);
            for i in 0..20_000u64 {
                let k = t.locate(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i);
                let first = k.shard * buckets_per_shard;
                for &b in k.buckets() {
                    assert!(
                        (first..first + buckets_per_shard).contains(&b),
                        "{b} outside its shard"
                    );
                }
                if buckets_per_shard > 1 {
                    assert_eq!(k.distinct, 2, "key {i}: {:?}", k.buckets);
                    assert_ne!(k.buckets[0], k.buckets[1], "key {i}");
                } else {
                    assert_eq!(k.buckets(), &[first][..]);
                }
            }
        }
    }

    /// The caller's GCRA parameters for `threshold` per `window` with `burst`: the interval
    /// `window / threshold` rounded up, the tolerance `(threshold + burst - 1) * interval`.
    fn pace(threshold: u64, burst: u64, window: u64) -> (u64, u64) {
        let interval = u128::from(window).div_ceil(u128::from(threshold)).max(1);
        let tolerance = (u128::from(threshold) + u128::from(burst) - 1) * interval;
        (interval as u64, tolerance as u64)
    }

    /// Distinct keys spread like hashes; `key_of(0) == 0`.
    fn key_of(i: u64) -> u64 {
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// `n` distinct keys of one shard of `t`.
    fn same_shard<A: AtomicWord>(t: &ParamTable<A>, n: usize) -> Vec<u64> {
        let shard = t.locate(key_of(1)).shard;
        (1..)
            .map(key_of)
            .filter(|&k| t.locate(k).shard == shard)
            .take(n)
            .collect()
    }

    fn admitted(d: RateDecision) -> bool {
        matches!(d, Pass | Wait(_))
    }

    #[test]
    fn memory_is_24_bytes_a_slot_and_at_most_8_more_for_the_sketch() {
        // The keys on one line, the states on the next two.
        assert_eq!(std::mem::size_of::<Bucket<StdWord>>(), 192);
        assert_eq!(std::mem::align_of::<Bucket<StdWord>>(), 64);
        assert_eq!(std::mem::offset_of!(Bucket<StdWord>, states), 64);
        assert_eq!(std::mem::size_of::<State<StdWord>>(), 16);
        for capacity in [1, 100, 1_000, 4_096, 100_000, 1_000_000] {
            let t = Table::new(capacity, Full::Evict);
            let bytes = t.allocated_bytes();
            let per_slot = bytes as f64 / t.capacity() as f64;
            let per_value = bytes as f64 / capacity as f64;
            eprintln!(
                "capacity {capacity}: {} slots, {bytes} bytes, {per_slot:.1} B/slot, \
                 {per_value:.1} B/requested value",
                t.capacity()
            );
            assert!(t.capacity() >= 2 * capacity, "{capacity}");
            assert_eq!(t.len(), 0);
            assert_eq!(
                Table::bytes_for(capacity),
                bytes,
                "{capacity}: known before it is built"
            );
            let sketch = DebtSketch::<StdWord>::bytes_for(t.capacity());
            assert!(
                sketch <= 8 * t.capacity(),
                "{capacity}: the sketch, {sketch} bytes"
            );
            if capacity >= 1_000 {
                // The slots' 24 bytes, and a cell of the sketch of evicted debts for every
                // second slot (4 bytes a slot, up to 8 where its rows round up to a power of 2).
                assert!(per_slot < 33.0, "{capacity}: {per_slot} B/slot");
                assert!(per_value <= 68.0, "{capacity}: {per_value} B/value");
            }
        }
    }

    #[test]
    fn an_idle_key_admits_threshold_plus_burst_then_one_per_interval() {
        let t = Table::new(16, Full::Evict);
        let (iv, tau) = pace(10, 5, SECOND);
        for i in 0..15 {
            assert_eq!(
                t.acquire_rate(42, T0, 1, iv, tau, 0),
                Pass,
                "call {i} at T0"
            );
        }
        assert_eq!(
            t.acquire_rate(42, T0, 1, iv, tau, 0),
            Block { retry_after: iv }
        );
        assert_eq!(
            t.acquire_rate(42, T0 + iv - 1, 1, iv, tau, 0),
            Block { retry_after: 1 }
        );
        assert_eq!(t.acquire_rate(42, T0 + iv, 1, iv, tau, 0), Pass);
        assert_eq!(
            t.acquire_rate(42, T0 + iv, 1, iv, tau, 0),
            Block { retry_after: iv }
        );
        // With a wait allowed, the next call waits for its turn.
        assert_eq!(t.acquire_rate(42, T0 + iv, 1, iv, tau, iv), Wait(iv));
        assert_eq!(
            t.acquire_rate(42, T0 + iv, 1, iv, tau, iv),
            Block {
                retry_after: 2 * iv
            }
        );
        assert_eq!(t.tat(42), Some(T0 + 17 * iv));
        // A batch larger than the burst never fits: its retry-after says never.
        assert_eq!(
            t.acquire_rate(7, T0, 16, iv, tau, 0),
            Block {
                retry_after: u64::MAX
            }
        );
        assert_eq!(t.tat(7), None, "a call blocked while fresh takes no slot");
        assert_eq!(t.acquire_rate(7, T0, 15, iv, tau, 0), Pass);
    }

    #[test]
    fn key_zero_and_extreme_keys_are_keys_like_any_other() {
        let t = Table::new(16, Full::Evict);
        let (iv, tau) = pace(1, 0, SECOND);
        for key in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63] {
            assert_eq!(t.acquire_rate(key, T0, 1, iv, tau, 0), Pass, "key {key:#x}");
        }
        for key in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63] {
            assert!(
                !admitted(t.acquire_rate(key, T0, 1, iv, tau, 0)),
                "key {key:#x}"
            );
        }
        assert_eq!(t.len(), 5);
        assert_eq!(t.acquire_inflight(0, 1).map(|_| ()), Ok(()));
        assert_eq!(t.inside(0), Some(1));
        assert_eq!(t.tat(0), Some(T0 + iv), "the two kinds of key 0 are apart");
    }

    #[test]
    fn a_threshold_of_zero_passes_nothing() {
        let t = Table::new(16, Full::Evict);
        for now in [0, 1, T0, u64::MAX] {
            assert_eq!(
                t.acquire_rate(3, now, 1, u64::MAX, 0, u64::MAX),
                Block {
                    retry_after: u64::MAX
                }
            );
        }
        assert_eq!(t.len(), 0);
        assert_eq!(t.acquire_inflight(3, 0), Err(()));
    }

    #[test]
    fn threads_admit_exactly_threshold_plus_burst_per_key() {
        const THREADS: usize = 8;
        const KEYS: u64 = 1_000;
        const ROUNDS: usize = 3;
        let (threshold, burst) = (5, 2);
        let (iv, tau) = pace(threshold, burst, SECOND);
        let table = Arc::new(Table::new(4 * KEYS as usize, Full::Evict));
        let barrier = Arc::new(Barrier::new(THREADS));
        let started = std::time::Instant::now();
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (table, barrier) = (Arc::clone(&table), Arc::clone(&barrier));
                thread::spawn(move || {
                    let mut passes = vec![0u64; KEYS as usize];
                    let mut blocks = 0u64;
                    barrier.wait();
                    for _ in 0..ROUNDS {
                        for i in 0..KEYS {
                            match table.acquire_rate(key_of(i), T0, 1, iv, tau, 0) {
                                Pass => passes[i as usize] += 1,
                                Block { .. } => blocks += 1,
                                Wait(w) => panic!("a wait of {w} ns without max_wait"),
                            }
                        }
                    }
                    (passes, blocks)
                })
            })
            .collect();
        let mut passes = vec![0u64; KEYS as usize];
        let mut blocks = 0;
        for worker in workers {
            let (p, b) = worker.join().unwrap();
            passes.iter_mut().zip(p).for_each(|(sum, p)| *sum += p);
            blocks += b;
        }
        eprintln!(
            "{} calls in {:?}",
            THREADS * ROUNDS * KEYS as usize,
            started.elapsed()
        );
        for (i, &p) in passes.iter().enumerate() {
            assert_eq!(p, threshold + burst, "key {i} at frozen now {T0}");
        }
        assert_eq!(
            passes.iter().sum::<u64>() + blocks,
            (THREADS * ROUNDS) as u64 * KEYS
        );
        assert_eq!((table.live_evictions(), table.refused()), (0, 0));
        assert_eq!(table.len(), KEYS as usize);
    }

    #[test]
    fn high_rates_are_paced_exactly() {
        for threshold in [1_001, 5_000, 1_000_000] {
            let (iv, _) = pace(threshold, 0, SECOND);
            let t = Table::new(16, Full::Evict);
            // Tolerance 0 and unlimited waits: each call's turn is exactly one interval after
            // the one before.
            let mut last = None;
            for i in 0..2_000 {
                let turn = match t.acquire_rate(9, T0, 1, iv, 0, u64::MAX) {
                    Pass => T0,
                    Wait(w) => T0 + w,
                    Block { retry_after } => panic!("call {i} blocked ({retry_after})"),
                };
                if let Some(last) = last {
                    assert_eq!(turn - last, iv, "threshold {threshold}, call {i}");
                }
                last = Some(turn);
            }
        }
    }

    /// Calls arriving every `step` ns for `duration` without waiting: the admitted ones, in
    /// order.
    fn stream(threshold: u64, burst: u64, step: u64, duration: u64) -> (Vec<u64>, u64) {
        let (iv, tau) = pace(threshold, burst, SECOND);
        let t = Table::new(16, Full::Evict);
        let mut passed = Vec::new();
        let mut now = T0;
        while now < T0 + duration {
            if t.acquire_rate(5, now, 1, iv, tau, 0) == Pass {
                passed.push(now);
            }
            now += step;
        }
        (passed, iv)
    }

    #[test]
    fn any_k_windows_hold_at_most_k_plus_1_thresholds_plus_burst() {
        for (threshold, burst, step) in [
            (1_001, 3, 97_003),
            (5_000, 10, 31_013),
            (1_000_000, 50, 397),
        ] {
            let duration = 3 * SECOND + SECOND / 2;
            let (passed, iv) = stream(threshold, burst, step, duration);
            for k in 1..=3u64 {
                let bound = (k + 1) * threshold + burst;
                let mut end = 0;
                for (start, &at) in passed.iter().enumerate() {
                    while end < passed.len() && passed[end] < at + k * SECOND {
                        end += 1;
                    }
                    let held = (end - start) as u64;
                    assert!(held <= bound, "{threshold}/s: {held} in {k} s from {at}");
                }
            }
            // And the rate is kept: threshold + burst at once, then one per interval.
            let expected = (threshold + burst) as f64 + duration as f64 / iv as f64;
            let got = passed.len() as f64;
            assert!(
                (got - expected).abs() <= 2.0 + expected * 1e-3,
                "{threshold}/s: {got} passed, {expected} expected"
            );
        }
    }

    #[test]
    fn ten_million_values_stay_in_the_fixed_allocation() {
        const THREADS: u64 = 2;
        const VALUES: u64 = 10_000_000;
        let t = Arc::new(Table::new(100_000, Full::Evict));
        let bytes = t.allocated_bytes();
        let capacity = t.capacity();
        // One call per value, 10 new values a microsecond of a shared clock, each live for
        // 1 ms: about 10,000 live at a time, the rest idle.
        let (iv, tau) = pace(1, 0, 1_000_000);
        let clock = Arc::new(StdWord::new(T0));
        let started = std::time::Instant::now();
        let workers: Vec<_> = (0..THREADS)
            .map(|n| {
                let (t, clock) = (Arc::clone(&t), Arc::clone(&clock));
                thread::spawn(move || {
                    for i in (n..VALUES).step_by(THREADS as usize) {
                        let now = clock.fetch_add(100, Relaxed) + 100;
                        let decision = t.acquire_rate(key_of(i), now, 1, iv, tau, 0);
                        debug_assert_eq!(decision, Pass, "value {i} at {now}");
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        eprintln!(
            "10M values through {capacity} slots in {:?}",
            started.elapsed()
        );
        assert_eq!(t.len(), capacity, "every slot in use, none added");
        assert_eq!(t.allocated_bytes(), bytes);
        assert_eq!((t.live_evictions(), t.refused()), (0, 0));
        // In the full table, 5,000 more values (live for the rest of the test) all find room
        // among the idle ones and keep it.
        let mut now = clock.load(Relaxed);
        let newest = VALUES..VALUES + 5_000;
        for i in newest.clone() {
            now += 100;
            assert_eq!(
                t.acquire_rate(key_of(i), now, 1, iv, tau, 0),
                Pass,
                "value {i}"
            );
        }
        for i in newest {
            assert!(
                t.tat(key_of(i)).is_some_and(|tat| tat > now),
                "value {i} at {now}"
            );
        }
        assert_eq!((t.len(), t.live_evictions()), (capacity, 0));
    }

    #[test]
    fn a_flood_of_live_values_evicts_the_least_debt_and_never_grows() {
        let t = Table::new(1_000, Full::Evict);
        let bytes = t.allocated_bytes();
        let (iv, tau) = pace(1, 0, SECOND);
        let passed = (0..200_000u64)
            .filter(|&i| admitted(t.acquire_rate(key_of(i), T0, 1, iv, tau, 0)))
            .count() as u64;
        assert_eq!(t.len(), t.capacity());
        assert_eq!(t.allocated_bytes(), bytes);
        // Every value admitted beyond the slots took a live one's place; once the evicted
        // debts cover every cell of the sketch, new values are held back instead.
        assert_eq!(t.live_evictions(), passed - t.capacity() as u64);
        assert!(passed < 200_000, "{passed}");
        // No value passes again within its second: the admitted ones owe it (in their slots or
        // in the sketch), the rest are held back by the sketch.
        for i in 0..200_000u64 {
            let decision = t.acquire_rate(key_of(i), T0 + iv / 2, 1, iv, tau, 0);
            assert!(!admitted(decision), "value {i}: {decision:?}");
        }
        // A second later every debt is paid: new and old values pass again.
        for i in 0..1_000u64 {
            let decision = t.acquire_rate(key_of(i), T0 + iv, 1, iv, tau, 0);
            assert_eq!(decision, Pass, "value {i}");
        }
    }

    /// A stream of new values, each called once (so none is hot: every block is a false
    /// one), at a pace that keeps `live` values owing time at once: `live` per window of a rule
    /// of 1 per window. After two windows to settle, the share of the third window's values
    /// blocked, and the live evictions per value.
    pub(super) fn false_blocks(capacity: usize, live: u64) -> (f64, f64) {
        let t = Table::new(capacity, Full::Evict);
        let window = 10 * SECOND;
        let (iv, tau) = pace(1, 0, window);
        let step = window / live;
        let (mut blocked, mut measured) = (0u64, 0u64);
        let evictions_before_last = |i: u64| i == 2 * live;
        let mut evicted = 0;
        for i in 0..3 * live {
            if evictions_before_last(i) {
                evicted = t.live_evictions();
            }
            let decision = t.acquire_rate(key_of(i + 1), T0 + i * step, 1, iv, tau, 0);
            if i >= 2 * live {
                measured += 1;
                blocked += u64::from(!admitted(decision));
            }
        }
        let evictions = (t.live_evictions() - evicted) as f64 / measured as f64;
        (blocked as f64 / measured as f64, evictions)
    }

    /// The false-block rate of the sketch of evicted debts (`examples/hotspot_flood.rs`
    /// measures it at the default capacity): new values are never held back while the table
    /// holds every value that owes time, rarely at twice its capacity, and mostly once the
    /// values owing time outnumber the sketch's cells (it holds back rather than forget).
    #[test]
    fn innocent_values_held_back_at_1_2_10_100_times_the_capacity() {
        let capacity = 1_024;
        let mut rates = Vec::new();
        for times in [1, 2, 10, 100] {
            let (rate, evictions) = false_blocks(capacity, times * capacity as u64);
            eprintln!(
                "{times}x the capacity owing at once: {:.2}% of new values held back, {:.3} \
                 live evictions per value",
                100.0 * rate,
                evictions
            );
            rates.push(rate);
        }
        assert_eq!(rates[0], 0.0, "{rates:?}");
        assert!(rates[1] < 0.03, "{rates:?}");
        assert!(rates[1] < rates[2] && rates[2] < rates[3], "{rates:?}");
    }

    #[test]
    fn evict_takes_the_live_value_with_the_least_debt() {
        let t = Table::with_geometry(8, 1, Full::Evict);
        let keys = same_shard(&t, 9);
        let (iv, tau) = (SECOND, 10 * SECOND);
        // Debts of 3, 2, 4, 5, ... intervals: the second key owes least.
        for (j, &key) in keys[..8].iter().enumerate() {
            let count = if j == 1 { 2 } else { 3 + j as u32 };
            assert_eq!(t.acquire_rate(key, T0, count, iv, tau, 0), Pass);
        }
        assert_eq!(t.acquire_rate(keys[8], T0, 1, iv, tau, 0), Pass);
        assert_eq!(t.live_evictions(), 1);
        assert_eq!(t.tat(keys[1]), None);
        assert_eq!(t.tat(keys[8]), Some(T0 + iv));
        assert_eq!(t.tat(keys[0]), Some(T0 + 3 * iv));
    }

    #[test]
    fn idle_values_are_evicted_first_and_one_shot_floods_spare_live_ones() {
        let t = Table::new(1_000, Full::Evict);
        let live: Vec<u64> = (0..500).map(|i| key_of(1 << 40 | i)).collect();
        let hour = 3_600 * SECOND;
        for &key in &live {
            assert_eq!(t.acquire_rate(key, T0, 1, hour, 0, 0), Pass);
        }
        // One-shot values, each idle by the time the next arrives.
        let mut now = T0;
        for i in 0..300_000 {
            now += 2_000;
            assert_eq!(t.acquire_rate(key_of(i), now, 1, 1_000, 0, 0), Pass);
        }
        assert_eq!((t.live_evictions(), t.refused()), (0, 0));
        for &key in &live {
            assert_eq!(t.tat(key), Some(T0 + hour));
        }
        assert!(t.len() <= t.capacity());
    }

    #[test]
    fn block_policy_refuses_new_values_while_full_of_live_ones() {
        let t = Table::with_geometry(8, 1, Full::Block);
        let keys = same_shard(&t, 9);
        let (iv, tau) = (SECOND, 0);
        for &key in &keys[..8] {
            assert_eq!(t.acquire_rate(key, T0, 1, iv, tau, 0), Pass);
        }
        assert_eq!(
            t.acquire_rate(keys[8], T0 + 10, 1, iv, tau, 0),
            Block {
                retry_after: iv - 10
            },
            "refused until the first live value is idle"
        );
        assert_eq!((t.refused(), t.live_evictions()), (1, 0));
        assert_eq!(t.tat(keys[8]), None);
        for &key in &keys[..8] {
            assert_eq!(t.tat(key), Some(T0 + iv));
        }
        // Once they are idle, the new value takes a slot.
        assert_eq!(t.acquire_rate(keys[8], T0 + iv, 1, iv, tau, 0), Pass);
        assert_eq!(t.refused(), 1);
        // A table full of calls inside refuses a new concurrency value.
        let c = Table::with_geometry(8, 1, Full::Evict);
        for &key in &keys[..8] {
            assert!(c.acquire_inflight(key, 1).is_ok());
        }
        assert_eq!(c.acquire_inflight(keys[8], 1), Err(()));
        assert_eq!(c.refused(), 1);
    }

    #[test]
    fn pinned_values_survive_floods() {
        let t = Table::with_geometry(8, 2, Full::Evict);
        let pinned = same_shard(&t, 3);
        let (iv, tau) = (SECOND, 0);
        assert!(t.pin(pinned[0]));
        // Already present: pinning keeps its state.
        assert_eq!(t.acquire_rate(pinned[1], T0, 1, iv, tau, 0), Pass);
        assert!(t.pin(pinned[1]));
        assert_eq!(t.tat(pinned[1]), Some(T0 + iv));
        assert_eq!(t.tat(pinned[0]), Some(0), "pinned with a fresh state");
        assert_eq!(t.acquire_rate(pinned[0], T0, 1, iv, tau, 0), Pass);
        // The pinned values owe the least, yet a flood of live values never takes them.
        for i in 0..20_000 {
            let _ = t.acquire_rate(key_of(1 << 50 | i), T0, 2, iv, iv, 0);
        }
        assert!(t.live_evictions() > 0);
        assert_eq!(t.tat(pinned[0]), Some(T0 + iv));
        assert_eq!(t.tat(pinned[1]), Some(T0 + iv));
        // A pinned key serves concurrency too.
        assert!(t.pin(pinned[2]));
        let slot = t.acquire_inflight(pinned[2], 1).unwrap();
        assert_eq!(t.acquire_inflight(pinned[2], 1), Err(()));
        t.release_inflight(slot);
        assert_eq!(t.inside(pinned[2]), Some(0));
    }

    #[test]
    fn an_unpinned_value_keeps_its_state_and_can_be_evicted_again() {
        let t = Table::with_geometry(8, 2, Full::Evict);
        let keys = same_shard(&t, 2);
        let (iv, tau) = (SECOND, 0);
        assert!(t.pin(keys[0]));
        assert_eq!(t.acquire_rate(keys[0], T0, 1, iv, tau, 0), Pass);
        t.unpin(keys[0], Kind::Rate);
        assert_eq!(t.tat(keys[0]), Some(T0 + iv), "its state stays");
        assert_eq!(
            t.acquire_rate(keys[0], T0, 1, iv, tau, 0),
            Block { retry_after: iv },
            "and still counts"
        );
        // A flood of live values that owe more now takes it.
        for i in 0..20_000 {
            let _ = t.acquire_rate(key_of(1 << 50 | i), T0, 2, iv, iv, 0);
        }
        assert_eq!(t.tat(keys[0]), None, "evicted like any other");
        // A concurrency value keeps its calls inside across an unpin, and is not evicted while
        // they are.
        assert!(t.pin(keys[1]));
        let slot = t.acquire_inflight(keys[1], 2).unwrap();
        t.unpin(keys[1], Kind::Inflight);
        assert_eq!(t.inside(keys[1]), Some(1));
        let second = t.acquire_inflight(keys[1], 2).unwrap();
        assert_eq!(
            t.acquire_inflight(keys[1], 2),
            Err(()),
            "the limit counts both"
        );
        for i in 0..20_000 {
            let _ = t.acquire_rate(key_of(1 << 51 | i), T0, 2, iv, iv, 0);
        }
        assert_eq!(t.inside(keys[1]), Some(2), "not evicted with calls inside");
        t.release_inflight(slot);
        t.release_inflight(second);
        assert_eq!(t.inside(keys[1]), Some(0));
        // Unpinning a value that is not pinned changes nothing.
        t.unpin(key_of(1 << 52), Kind::Rate);
        assert_eq!(t.tat(key_of(1 << 52)), None);
    }

    #[test]
    fn concurrency_limit_holds_under_threads_and_returns_to_zero() {
        const THREADS: usize = 8;
        const MAX: u64 = 3;
        let table = Arc::new(Table::new(64, Full::Evict));
        let ghost = Arc::new(StdWord::new(0));
        let peak = Arc::new(StdWord::new(0));
        let barrier = Arc::new(Barrier::new(THREADS));
        let workers: Vec<_> = (0..THREADS)
            .map(|n| {
                let (table, ghost, peak, barrier) = (
                    Arc::clone(&table),
                    Arc::clone(&ghost),
                    Arc::clone(&peak),
                    Arc::clone(&barrier),
                );
                thread::spawn(move || {
                    barrier.wait();
                    let mut taken = 0;
                    for i in 0..20_000u64 {
                        // Other values come and go beside the contended one.
                        if let Ok(s) = table.acquire_inflight(key_of(i % 500 + 1), 1) {
                            table.release_inflight(s);
                        }
                        if let Ok(slot) = table.acquire_inflight(0, MAX) {
                            let inside = ghost.fetch_add(1, AcqRel) + 1;
                            peak.fetch_max(inside, AcqRel);
                            if (i + n as u64).is_multiple_of(7) {
                                thread::yield_now();
                            }
                            ghost.fetch_sub(1, AcqRel);
                            table.release_inflight(slot);
                            taken += 1;
                        }
                    }
                    taken
                })
            })
            .collect();
        let taken: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        let peak = peak.load(Acquire);
        assert!(peak <= MAX, "{peak} inside with a limit of {MAX}");
        assert!(taken > 0);
        assert_eq!(table.inside(0), Some(0));
    }

    #[test]
    fn a_value_with_calls_inside_survives_a_flood() {
        let t = Table::new(1, Full::Evict);
        let held = t.acquire_inflight(77, 1).unwrap();
        let (iv, tau) = (SECOND, 0);
        for i in 0..50_000 {
            if let Ok(slot) = t.acquire_inflight(key_of(i + 1), 2) {
                t.release_inflight(slot);
            }
            // Live rate values too (Evict policy): never the one with a call inside.
            let _ = t.acquire_rate(key_of((i + 1) << 32), T0, 1, iv, tau, 0);
        }
        assert!(t.live_evictions() > 0);
        assert_eq!(t.inside(77), Some(1));
        assert_eq!(t.acquire_inflight(77, 1), Err(()));
        t.release_inflight(held);
        assert_eq!(t.inside(77), Some(0));
        let again = t.acquire_inflight(77, 1).unwrap();
        assert_eq!(again, held, "the same counter");
    }

    #[test]
    fn cancel_gives_back_exactly_and_never_below_zero() {
        let t = Table::new(16, Full::Evict);
        let (iv, tau) = pace(3, 0, SECOND);
        for _ in 0..3 {
            assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
        }
        assert!(!admitted(t.acquire_rate(1, T0, 1, iv, tau, 0)));
        t.cancel_rate(1, 1, iv);
        assert_eq!(t.tat(1), Some(T0 + 2 * iv));
        assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
        assert!(!admitted(t.acquire_rate(1, T0, 1, iv, tau, 0)));
        t.cancel_rate(1, u32::MAX, u64::MAX);
        assert_eq!(t.tat(1), Some(0));
        for _ in 0..3 {
            assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
        }
        // An absent key: nothing to give back, nothing inserted.
        t.cancel_rate(2, 1, iv);
        assert_eq!((t.tat(2), t.len()), (None, 1));
        t.cancel_rate(1, 0, iv);
        assert_eq!(t.tat(1), Some(T0 + 3 * iv));
    }

    #[test]
    fn a_threshold_reload_keeps_every_values_state() {
        let t = Table::new(16, Full::Evict);
        let (iv, tau) = pace(10, 0, SECOND);
        for _ in 0..10 {
            assert_eq!(t.acquire_rate(4, T0, 1, iv, tau, 0), Pass);
        }
        // A lower threshold admits nothing the old one had spent.
        let (iv2, tau2) = pace(5, 0, SECOND);
        assert!(!admitted(t.acquire_rate(4, T0, 1, iv2, tau2, 0)));
        assert_eq!(t.tat(4), Some(T0 + SECOND));
        // A higher one keeps the debt in time: the old rule spent a whole window (TAT 1 s
        // ahead), which is the new rule's whole tolerance too; it then paces at its own rate.
        let (iv3, tau3) = pace(20, 0, SECOND);
        assert!(!admitted(t.acquire_rate(4, T0, 1, iv3, tau3, 0)));
        assert_eq!(t.acquire_rate(4, T0 + iv3, 1, iv3, tau3, 0), Pass);
        assert!(!admitted(t.acquire_rate(4, T0 + iv3, 1, iv3, tau3, 0)));
        assert_eq!(t.acquire_rate(4, T0 + 2 * iv3, 1, iv3, tau3, 0), Pass);
    }

    /// The GCRA as specified, in `u128`, over an unbounded map.
    #[derive(Default)]
    struct Reference {
        tats: HashMap<u64, u128>,
    }

    impl Reference {
        fn acquire(
            &mut self,
            key: u64,
            now: u64,
            count: u32,
            iv: u64,
            tau: u64,
            max_wait: u64,
        ) -> RateDecision {
            let tat = self.tats.get(&key).copied().unwrap_or(0);
            let now = u128::from(now);
            let new = tat.max(now) + u128::from(count) * u128::from(iv);
            if new > u128::from(u64::MAX) {
                return Block {
                    retry_after: u64::MAX,
                };
            }
            let ahead = new - now;
            let limit = u128::from(tau) + u128::from(iv);
            let decision = if ahead <= limit {
                Pass
            } else if ahead - limit <= u128::from(max_wait) {
                Wait((ahead - limit) as u64)
            } else {
                let from_idle = u128::from(count) * u128::from(iv);
                let never = from_idle > limit && from_idle - limit > u128::from(max_wait);
                return Block {
                    retry_after: if never {
                        u64::MAX
                    } else {
                        (ahead - limit).min(u128::from(u64::MAX)) as u64
                    },
                };
            };
            self.tats.insert(key, new);
            decision
        }

        fn cancel(&mut self, key: u64, count: u32, iv: u64) {
            if let Some(tat) = self.tats.get_mut(&key) {
                *tat = tat.saturating_sub(u128::from(count) * u128::from(iv));
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// key index, time step, count, max_wait choice
        Acquire(u16, u8, u32, u8),
        /// key index, count
        Cancel(u16, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<u16>(), 0u8..7, 1u32..4, 0u8..3)
                .prop_map(|(k, step, count, wait)| Op::Acquire(k, step, count, wait)),
            1 => (any::<u16>(), 1u32..3).prop_map(|(k, count)| Op::Cancel(k, count)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn decisions_match_an_unbounded_reference(
            threshold in prop::sample::select(vec![1u64, 3, 10, 1_001, 5_000, 1_000_000]),
            burst in 0u64..4,
            window in prop::sample::select(vec![1_000_000u64, 100_000_000, SECOND]),
            large in any::<bool>(),
            ops in prop::collection::vec(op(), 1..300),
        ) {
            let (iv, tau) = pace(threshold, burst, window);
            let keys: u64 = if large { 300 } else { 4 };
            let t = Table::new(4 * keys as usize, Full::Evict);
            let mut model = Reference::default();
            let mut now = T0;
            for (n, op) in ops.iter().enumerate() {
                match *op {
                    Op::Acquire(k, step, count, wait) => {
                        let key = key_of(u64::from(k) % keys);
                        now = match step {
                            0 => now,
                            1 => now + 1,
                            2 => now + iv / 2,
                            3 => now + iv,
                            4 => now + 3 * iv,
                            5 => now + window,
                            _ => now - iv / 2, // a stale reading
                        };
                        let max_wait = [0, iv, window][usize::from(wait)];
                        let got = t.acquire_rate(key, now, count, iv, tau, max_wait);
                        let want = model.acquire(key, now, count, iv, tau, max_wait);
                        prop_assert_eq!(got, want, "op {} {:?} at {}", n, op, now);
                    }
                    Op::Cancel(k, count) => {
                        let key = key_of(u64::from(k) % keys);
                        t.cancel_rate(key, count, iv);
                        model.cancel(key, count, iv);
                    }
                }
            }
            for (&key, &tat) in &model.tats {
                prop_assert_eq!(t.tat(key).map(u128::from), Some(tat), "key {:#x}", key);
            }
            prop_assert_eq!((t.live_evictions(), t.refused()), (0, 0));
        }
    }
}

/// The table under floods that force live evictions, against the GCRA of each value over the
/// calls the table actually admitted.
#[cfg(test)]
mod eviction_model {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64 as StdWord;

    use proptest::prelude::*;

    const T0: u64 = 3_600_000_000_000;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Whatever the table forgets, it never admits a call that the value's own GCRA, over
        /// the calls of that value admitted before, would refuse: a value evicted while it owed
        /// time comes back owing it. (The reverse may differ: a new value colliding in the
        /// sketch with ones that owe more is held back.)
        #[test]
        fn evictions_never_admit_beyond_each_values_own_limit(
            ops in prop::collection::vec((0u64..400, 0u8..10, any::<bool>()), 1..600),
            hot in 0u64..8,
            threshold in 1u64..4,
            burst in 0u64..3,
        ) {
            // 8 shards of one bucket: 64 slots for up to 400 values, evictions all the time.
            let t = ParamTable::<StdWord>::with_geometry(8, 1, Full::Evict);
            let iv = SECOND_MS / threshold;
            let tau = (threshold + burst - 1) * iv;
            let mut tats: HashMap<u64, u64> = HashMap::new();
            let mut now = T0;
            for (n, &(value, step, whole)) in ops.iter().enumerate() {
                now += [0, 1, iv / 50, iv][usize::from(step) / 3];
                // A few values call far more often than the rest; a call may take a value's
                // whole allowance at once (a debt that outbids the hot values' for a slot).
                let value = if value % 4 == 0 { value % (hot + 1) } else { value };
                let count = if whole { (threshold + burst) as u32 } else { 1 };
                let key = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let decision = t.acquire_rate(key, now, count, iv, tau, 0);
                let tat = tats.get(&value).copied().unwrap_or(0).max(now);
                let new = tat + u64::from(count) * iv;
                if decision == RateDecision::Pass {
                    prop_assert!(
                        new - now <= tau + iv,
                        "op {}: value {} x{} admitted at {} while it owed until {}",
                        n, value, count, now, tat
                    );
                    tats.insert(value, new);
                }
            }
        }
    }

    const SECOND_MS: u64 = 1_000_000;
}

/// Loom models of the table's protocol: every interleaving of two threads, within a preemption
/// bound, on the smallest table (8 shards of one bucket: 8 slots a shard).
#[cfg(test)]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicU64 as LoomWord;
    use loom::sync::Arc;
    use loom::thread;

    use RateDecision::{Block, Pass};

    type Table = ParamTable<LoomWord>;

    fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(bound);
        // The setups fill a bucket single-threaded: many loads, few real choices.
        builder.max_branches = 100_000;
        builder.check(f);
    }

    fn table(full: Full) -> Arc<Table> {
        Arc::new(Table::with_geometry(8, 1, full))
    }

    /// `n` distinct keys of one shard.
    fn same_shard(t: &Table, n: usize) -> Vec<u64> {
        let shard = t.locate(1).shard;
        (1..)
            .filter(|&k| t.locate(k).shard == shard)
            .take(n)
            .collect()
    }

    fn passes(decisions: &[RateDecision]) -> usize {
        decisions.iter().filter(|d| **d == Pass).count()
    }

    /// Two threads, a limit of 1, a key neither has seen: both race to insert it, then to
    /// admit. Exactly one passes, and the key has one slot.
    #[test]
    fn a_new_key_with_room_for_one_admits_one() {
        check(3, || {
            let t = table(Full::Evict);
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.acquire_rate(7, 100, 1, 10, 0, 0));
            let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
            let theirs = h.join().unwrap();
            assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
            assert_eq!(t.len(), 1);
            assert_eq!(t.tat(7), Some(110));
        });
    }

    /// The same race on a key already present (the lock-free path only).
    #[test]
    fn a_present_key_with_room_for_one_admits_one() {
        check(3, || {
            let t = table(Full::Evict);
            assert_eq!(t.acquire_rate(7, 50, 1, 10, 0, 0), Pass);
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.acquire_rate(7, 100, 1, 10, 0, 0));
            let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
            let theirs = h.join().unwrap();
            assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
            assert_eq!(t.tat(7), Some(110));
        });
    }

    /// Two threads take concurrency places of a new key: one slot, both counted, both given
    /// back.
    #[test]
    fn racing_inserts_of_one_key_share_one_slot() {
        check(3, || {
            let t = table(Full::Evict);
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.acquire_inflight(9, 2));
            let mine = t.acquire_inflight(9, 2).unwrap();
            let theirs = h.join().unwrap().unwrap();
            assert_eq!(mine, theirs);
            assert_eq!(t.len(), 1);
            assert_eq!(t.inside(9), Some(2));
            t.release_inflight(mine);
            t.release_inflight(theirs);
            assert_eq!(t.inside(9), Some(0));
        });
    }

    /// A reader of key A races a new key B that evicts A (idle) from a full bucket. With the
    /// Block policy exactly one of them gets the slot; its state is exactly its own admission
    /// and the other is absent, blocked: no admission lands on the other key's state.
    #[test]
    fn an_eviction_races_a_reader_of_the_evicted_key() {
        check(2, || {
            let t = table(Full::Block);
            let keys = same_shard(&t, 9);
            let (a, b) = (keys[0], keys[8]);
            for &k in &keys[1..8] {
                assert_eq!(t.acquire_rate(k, 0, 1, 1_000, 0, 0), Pass);
            }
            assert_eq!(t.acquire_rate(a, 0, 1, 10, 0, 0), Pass); // TAT 10: idle at 100
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.acquire_rate(b, 100, 1, 10, 0, 0));
            let for_a = t.acquire_rate(a, 100, 1, 10, 0, 0);
            let for_b = h.join().unwrap();
            assert_eq!(passes(&[for_a, for_b]), 1, "{for_a:?} {for_b:?}");
            let (winner, loser) = if for_a == Pass { (a, b) } else { (b, a) };
            assert_eq!(t.tat(winner), Some(110));
            assert_eq!(t.tat(loser), None);
            assert_eq!((t.refused(), t.live_evictions()), (1, 0));
            for &k in &keys[1..8] {
                assert_eq!(t.tat(k), Some(1_000));
            }
        });
    }

    /// A reload unpins a key while two threads race to admit it with room for one: the
    /// readers accept the key's tag before and after the change, so exactly one passes, on the
    /// key's one slot, and the key ends unpinned.
    #[test]
    fn an_unpin_races_admissions_of_the_key() {
        check(3, || {
            let t = table(Full::Evict);
            assert!(t.pin(7));
            assert_eq!(t.acquire_rate(7, 50, 1, 10, 0, 0), Pass); // TAT 60: room for one at 100
            let other = Arc::clone(&t);
            let h = thread::spawn(move || {
                other.unpin(7, Kind::Rate);
                other.acquire_rate(7, 100, 1, 10, 0, 0)
            });
            let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
            let theirs = h.join().unwrap();
            assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
            assert_eq!(t.len(), 1);
            assert_eq!(t.tat(7), Some(110));
            let k = t.locate(7);
            let slot = t.find(&k, OCCUPIED).unwrap();
            assert_eq!(t.key(slot).load(Acquire), k.id | OCCUPIED, "unpinned");
        });
    }

    /// A give-back races an admission of the same key: the admission sees the TAT before or
    /// after the give-back, never a torn state.
    #[test]
    fn a_cancel_races_an_admission() {
        check(3, || {
            let t = table(Full::Evict);
            assert_eq!(t.acquire_rate(5, 100, 1, 10, 0, 0), Pass); // TAT 110: full
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.cancel_rate(5, 1, 10));
            let decision = t.acquire_rate(5, 100, 1, 10, 0, 0);
            h.join().unwrap();
            match decision {
                Pass => assert_eq!(t.tat(5), Some(110)),
                Block { retry_after } => {
                    assert_eq!(retry_after, 10);
                    assert_eq!(t.tat(5), Some(100));
                }
                other => panic!("{other:?}"),
            }
        });
    }

    /// A release races a new key that needs the releasing key's slot: the slot is taken only
    /// once no call is inside, and the release lands on the counter it took.
    #[test]
    fn a_release_races_an_eviction() {
        check(2, || {
            let t = table(Full::Evict);
            let keys = same_shard(&t, 9);
            let (a, b) = (keys[0], keys[8]);
            for &k in &keys[1..8] {
                assert!(t.acquire_inflight(k, 1).is_ok());
            }
            let held = t.acquire_inflight(a, 1).unwrap();
            let other = Arc::clone(&t);
            let h = thread::spawn(move || other.release_inflight(held));
            let for_b = t.acquire_inflight(b, 1);
            h.join().unwrap();
            match for_b {
                Ok(slot) => {
                    assert_eq!(slot, held, "B took A's slot");
                    assert_eq!((t.inside(a), t.inside(b)), (None, Some(1)));
                    assert_eq!(t.refused(), 0);
                }
                Err(()) => {
                    assert_eq!((t.inside(a), t.inside(b)), (Some(0), None));
                    assert_eq!(t.refused(), 1);
                }
            }
            for &k in &keys[1..8] {
                assert_eq!(t.inside(k), Some(1));
            }
            assert_eq!(t.live_evictions(), 0);
        });
    }
}
