//! Finding a key: the mixer and the two-choice bucket placement, and the scan of a key's
//! buckets for its slot (or the first empty one).

use std::sync::atomic::Ordering::Acquire;

use crate::sync::AtomicWord;

use super::table::{Bucket, ParamTable, State, BUCKET, CONCURRENCY, EMPTY, OCCUPIED, PINNED};

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

/// Where a key lives: its shard, its tag without flags, its buckets (one or two). Found once
/// per call ([`ParamTable::locate`]): the entry's prefetch and the admission share it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Located {
    pub(super) shard: usize,
    pub(super) id: u64,
    pub(super) buckets: [usize; 2],
    /// 1 if both choices are the same bucket, else 2.
    pub(super) distinct: usize,
}

impl Located {
    /// The key's buckets.
    #[inline(always)]
    pub(super) fn buckets(&self) -> &[usize] {
        &self.buckets[..self.distinct]
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

/// The position in `bucket` of the key word `own` or `pinned`, if it is there (the scan stops
/// at the first empty slot: see [`ParamTable::find`]).
#[inline(always)]
fn position<A: AtomicWord>(bucket: &Bucket<A>, own: u64, pinned: u64) -> Option<usize> {
    for (i, key) in bucket.keys.iter().enumerate() {
        let word = key.load(Acquire);
        if word == own || word == pinned {
            return Some(i);
        }
        if word == EMPTY {
            break;
        }
    }
    None
}

/// Whether key word `word` is the key `id` with kind `flags`, or the key pinned.
#[inline]
pub(super) fn matches(word: u64, id: u64, flags: u64) -> bool {
    word == id | flags || word == id | OCCUPIED | PINNED
}

impl<A: AtomicWord> ParamTable<A> {
    #[inline]
    pub(crate) fn locate(&self, key: u64) -> Located {
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
    pub(super) fn mixed_of(&self, shard: usize, tag: u64) -> u64 {
        (tag >> self.shard_bits) | ((shard as u64) << (64 - self.shard_bits))
    }

    /// Asks the CPU to start loading every line a lookup of `k` may read (the key line of each
    /// of its buckets and the two lines of their states) at once, so that their cache misses overlap instead of
    /// following one another (over a large table each is a miss to memory).
    #[inline(always)]
    pub(crate) fn prefetch(&self, k: &Located) {
        if !self.prefetch {
            return;
        }
        // Unrolled (a loop over `k.buckets()` costs 10 instructions more a call).
        self.prefetch_bucket(k.buckets[0]);
        if k.distinct == 2 {
            self.prefetch_bucket(k.buckets[1]);
        }
    }

    /// Asks the CPU to start loading bucket `bucket`'s three lines.
    #[inline(always)]
    fn prefetch_bucket(&self, bucket: usize) {
        let bucket = &self.buckets[bucket];
        prefetch_line(bucket);
        // 8 states of 16 bytes: the two lines after the keys'.
        prefetch_line(&bucket.states[0]);
        prefetch_line(&bucket.states[BUCKET / 2]);
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
    pub(super) fn state(&self, slot: usize) -> &State<A> {
        &self.buckets[slot / BUCKET].states[slot % BUCKET]
    }

    #[inline(always)]
    pub(super) fn key(&self, slot: usize) -> &A {
        &self.buckets[slot / BUCKET].keys[slot % BUCKET]
    }

    /// The slot holding key `k` of kind `flags` (or pinned), if any (a slot being rewritten is
    /// skipped). A bucket's used slots come first (slots are taken in order and never emptied),
    /// so the scan of a bucket stops at its first empty slot.
    #[inline]
    pub(super) fn find(&self, k: &Located, flags: u64) -> Option<usize> {
        self.find_or_empty(k, flags).ok()
    }

    /// The slot holding key `k` of kind `flags` (or pinned), else the first empty slot of the
    /// emptier of its buckets, if any.
    #[inline(always)]
    pub(super) fn find_or_empty(&self, k: &Located, flags: u64) -> Result<usize, Option<usize>> {
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

    /// [`find`](Self::find), answering with the bucket and the position in it (a caller that
    /// reads the slot then needs no second look-up of the bucket).
    #[inline(always)]
    pub(super) fn find_in(&self, k: &Located, flags: u64) -> Option<(&Bucket<A>, usize)> {
        let (own, pinned) = (k.id | flags, k.id | OCCUPIED | PINNED);
        // Unrolled over the one or two buckets, as the prefetch.
        let first = &self.buckets[k.buckets[0]];
        if let Some(i) = position(first, own, pinned) {
            return Some((first, i));
        }
        if k.distinct == 2 {
            let second = &self.buckets[k.buckets[1]];
            return position(second, own, pinned).map(|i| (second, i));
        }
        None
    }

    /// The TAT of rate key `key`, if the table holds it (for a RateLimit header, read after
    /// the key's admission: a slot being rewritten is skipped, as [`find`](Self::find) does).
    #[cfg(feature = "tower")]
    pub(crate) fn rate_tat(&self, key: u64) -> Option<u64> {
        let state = self.state(self.find(&self.locate(key), OCCUPIED)?);
        Some(
            state
                .word
                .load(Acquire)
                .wrapping_sub(state.base.load(Acquire)),
        )
    }

    /// The slot holding key `k` of any kind, else the first empty slot of the emptier of its
    /// buckets, if any.
    pub(super) fn find_any(&self, k: &Located) -> Result<usize, Option<usize>> {
        match self.find_or_empty(k, OCCUPIED) {
            Err(_) => self.find_or_empty(k, OCCUPIED | CONCURRENCY),
            found => found,
        }
    }
}
