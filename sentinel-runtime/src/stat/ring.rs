//! [`Ring`]: the lock-free core of every sliding window, a fixed ring of buckets reused in place.
//!
//! # Protocol
//!
//! Bucket `i` holds the counters of one period `p` with `p % len == i`; the period is stored in
//! full (`u64`), so a bucket left from any time in the past is recognised as stale, whatever the
//! gap. An add at period `p`:
//!
//! * finds its bucket holding `p` (or a newer period: a reading delayed by a whole ring, which
//!   then counts in that newer period, so nothing is dropped and no bucket moves back in time)
//!   and adds to it: one atomic add, or a plain load and store for a single writer;
//! * or finds it holding an older period and *restarts* it: under the ring's restart lock (the
//!   `seq` word, odd while held), the counters are swapped to empty (their old values are handed
//!   to the caller, to fold into a coarser window) and the new period is stored. Adds that raced
//!   with the swap land in the new period: none is lost.
//!
//! Readers never take the lock on the common path: they read `seq`, the buckets, and `seq`
//! again, and retry if a restart ran meanwhile (a seqlock). After a few failed tries a reader
//! takes the lock itself, so no reader loops without bound.

use std::sync::atomic::Ordering::*;

use super::bucket::{Bucket, MetricEvent, NEVER, NO_MIN};
use super::fast_div::FastDiv;
use crate::sync::AtomicWord;

/// Reads retried this many times before a reader takes the restart lock.
const READ_TRIES: u32 = 4;

/// Where a time falls in a ring: computed once per call, used for every counter.
///
/// Only 8-byte fields: a copy of a struct with a 4-byte field is written in pieces and read back
/// whole, which the CPU cannot forward (a store-forwarding stall, measured on the entry path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) period: u64,
    pub(crate) index: usize,
}

impl Position {
    /// The position of `period` in a ring of `len` buckets. Inlined with constant arguments,
    /// the division is a multiply.
    #[inline(always)]
    pub(crate) const fn of_period(period: u64, len: u64) -> Position {
        Position {
            period,
            index: (period % len) as usize,
        }
    }
}

/// A ring of `len` buckets of `bucket_nanos` each. The buckets are stored in `S`: a boxed slice
/// of any length, or an inline array where the length is fixed (one pointer fewer to follow on
/// the hot path).
#[derive(Debug)]
pub(crate) struct Ring<A: AtomicWord, S: AsRef<[Bucket<A>]> = Box<[Bucket<A>]>> {
    /// Divides by the bucket length.
    bucket: FastDiv,
    /// Divides by the number of buckets.
    ring: FastDiv,
    buckets: S,
    /// Even while no restart runs; odd while one does (the restart lock).
    seq: A,
}

impl<A: AtomicWord> Ring<A> {
    /// An empty ring (`bucket_nanos` and `len` at least 1; 0 is taken as 1).
    pub(crate) fn new(bucket_nanos: u64, len: u32) -> Ring<A> {
        let len = len.max(1);
        Ring::with_buckets(bucket_nanos, (0..len).map(|_| Bucket::new()).collect())
    }
}

impl<A: AtomicWord, const N: usize> Ring<A, [Bucket<A>; N]> {
    /// An empty ring of `N` inline buckets.
    pub(crate) fn inline(bucket_nanos: u64) -> Self {
        Ring::with_buckets(bucket_nanos, std::array::from_fn(|_| Bucket::new()))
    }
}

impl<A: AtomicWord, S: AsRef<[Bucket<A>]>> Ring<A, S> {
    fn with_buckets(bucket_nanos: u64, buckets: S) -> Self {
        let len = buckets.as_ref().len().max(1) as u64;
        Ring {
            bucket: FastDiv::new(bucket_nanos.max(1)),
            ring: FastDiv::new(len),
            buckets,
            seq: A::new(0),
        }
    }

    #[inline(always)]
    fn buckets(&self) -> &[Bucket<A>] {
        self.buckets.as_ref()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.buckets().len()
    }

    #[inline]
    pub(crate) fn bucket_nanos(&self) -> u64 {
        self.bucket.divisor()
    }

    #[inline]
    pub(crate) fn period(&self, now: u64) -> u64 {
        self.bucket.div(now)
    }

    #[inline]
    pub(crate) fn position(&self, now: u64) -> Position {
        let period = self.period(now);
        Position {
            period,
            index: self.ring.rem(period) as usize,
        }
    }

    #[inline(always)]
    pub(crate) fn bucket_at(&self, pos: Position) -> &Bucket<A> {
        &self.buckets()[pos.index]
    }

    /// Adds `value` to `event` at `pos`. With `exclusive` the add is a plain load and store: the
    /// caller must then be the ring's only writer. `displaced(period, event, value)` receives
    /// the counters of a bucket this add restarted.
    #[inline]
    pub(crate) fn add_at(
        &self,
        pos: Position,
        event: MetricEvent,
        value: u64,
        exclusive: bool,
        mut displaced: impl FnMut(u64, MetricEvent, u64),
    ) {
        let bucket = self.bucket_at(pos);
        loop {
            let held = bucket.period();
            if held == pos.period || (held != NEVER && held > pos.period) {
                if exclusive {
                    bucket.merge_exclusive(event, value);
                } else {
                    bucket.merge_shared(event, value);
                }
                return;
            }
            self.restart(bucket, pos.period, &mut displaced);
        }
    }

    /// Moves `bucket` to `period` if it still holds an older one.
    #[cold]
    #[inline(never)]
    pub(crate) fn restart(
        &self,
        bucket: &Bucket<A>,
        period: u64,
        displaced: impl FnMut(u64, MetricEvent, u64),
    ) {
        let seq = self.lock();
        let held = bucket.period();
        if held == NEVER || held < period {
            bucket.restart(period, displaced);
        }
        self.unlock(seq);
    }

    /// Takes the restart lock: waits for an even `seq` and makes it odd. Returns the even value.
    pub(crate) fn lock(&self) -> u64 {
        loop {
            let seq = self.seq.load(Acquire);
            if seq & 1 == 0
                && self
                    .seq
                    .compare_exchange_weak(seq, seq + 1, SeqCst, Relaxed)
                    .is_ok()
            {
                return seq;
            }
            A::spin_wait();
        }
    }

    /// Releases the restart lock taken by [`lock`](Self::lock), which returned `seq`.
    pub(crate) fn unlock(&self, seq: u64) {
        self.seq.store(seq + 2, SeqCst);
    }

    /// The restart lock's word, to check later with [`unchanged`](Self::unchanged); `None`
    /// while a restart runs.
    #[inline]
    pub(crate) fn seq(&self) -> Option<u64> {
        let seq = self.seq.load(SeqCst);
        (seq & 1 == 0).then_some(seq)
    }

    /// No restart ran since [`seq`](Self::seq) returned `seq`.
    #[inline]
    pub(crate) fn unchanged(&self, seq: u64) -> bool {
        self.seq.load(SeqCst) == seq
    }

    /// Runs `read` until it ran while no restart did (a consistent view of every bucket); after
    /// a few tries, runs it holding the restart lock.
    pub(crate) fn consistent<T>(&self, mut read: impl FnMut() -> T) -> T {
        for _ in 0..READ_TRIES {
            if let Some(seq) = self.seq() {
                let value = read();
                if self.unchanged(seq) {
                    return value;
                }
            } else {
                A::spin_wait();
            }
        }
        let seq = self.lock();
        let value = read();
        self.unlock(seq);
        value
    }

    /// Whether a bucket of period `held` is one of the `periods` periods ending at `period`.
    #[inline(always)]
    pub(crate) fn within(held: u64, period: u64, periods: u64) -> bool {
        held != NEVER && held <= period && period - held < periods
    }

    /// Calls `f(bucket_period, bucket)` for every bucket among the `periods` periods ending at
    /// the period of `now` (no consistency: call inside [`consistent`](Self::consistent)).
    #[inline]
    pub(crate) fn each_within(&self, now: u64, periods: u64, mut f: impl FnMut(u64, &Bucket<A>)) {
        let period = self.period(now);
        for bucket in self.buckets().iter() {
            let held = bucket.period();
            if Self::within(held, period, periods) {
                f(held, bucket);
            }
        }
    }

    /// Calls `f(bucket)` for every bucket that holds a period, whatever its age (no consistency:
    /// call inside [`consistent`](Self::consistent) or under the restart lock).
    #[inline]
    pub(crate) fn each_held(&self, mut f: impl FnMut(&Bucket<A>)) {
        for bucket in self.buckets().iter() {
            if bucket.period() != NEVER {
                f(bucket);
            }
        }
    }

    /// Sum of `event` over the `periods` periods ending at `now`, consistent.
    pub(crate) fn sum_within(&self, now: u64, event: MetricEvent, periods: u64) -> u64 {
        self.consistent(|| {
            let mut sum = 0u64;
            self.each_within(now, periods, |_, b| {
                sum = sum.saturating_add(b.count(event))
            });
            sum
        })
    }

    /// The smallest response time over the `periods` periods ending at `now`, consistent.
    pub(crate) fn min_within(&self, now: u64, periods: u64) -> Option<u64> {
        self.consistent(|| {
            let mut min = NO_MIN;
            self.each_within(now, periods, |_, b| {
                min = min.min(b.count(MetricEvent::MinRt))
            });
            (min != NO_MIN).then_some(min)
        })
    }
}
