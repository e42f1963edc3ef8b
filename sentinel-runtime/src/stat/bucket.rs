//! [`MetricEvent`] and the counters of one time bucket.

use std::sync::atomic::Ordering::*;

use crate::sync::AtomicWord;

/// The events a window counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricEvent {
    /// Calls admitted (a batch counts its size).
    Pass,
    /// Calls rejected by a rule.
    Block,
    /// Calls that finished (the entry was dropped).
    Complete,
    /// Calls that finished with an error or a panic.
    Error,
    /// Sum of response times, in microseconds.
    RtSum,
    /// The smallest response time, in microseconds (read with [`LeapArray::min_rt`](super::LeapArray::min_rt)).
    MinRt,
}

/// How many kinds of rule the block totals count blocks of (`BlockTotals`): one per kind of
/// block.
pub(crate) const RULE_KINDS: usize = crate::block_kinds::COUNT;

/// How many events there are.
pub(crate) const EVENTS: usize = 6;

impl MetricEvent {
    /// Every event, in storage order.
    pub const ALL: [MetricEvent; EVENTS] = [
        MetricEvent::Pass,
        MetricEvent::Block,
        MetricEvent::Complete,
        MetricEvent::Error,
        MetricEvent::RtSum,
        MetricEvent::MinRt,
    ];

    #[inline(always)]
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// The value of an empty counter: 0, or "no minimum yet" (`u64::MAX`) for [`MetricEvent::MinRt`].
    #[inline(always)]
    pub(crate) const fn empty(self) -> u64 {
        match self {
            MetricEvent::MinRt => NO_MIN,
            _ => 0,
        }
    }
}

/// A [`MetricEvent::MinRt`] counter that has seen no call.
pub(crate) const NO_MIN: u64 = u64::MAX;
/// The period of a bucket that was never used.
pub(crate) const NEVER: u64 = u64::MAX;

/// The counters of one bucket and the period they belong to.
///
/// The period is a full `u64` (never a wrapping tag), and every counter is a full `u64`: a
/// bucket is correct after any idle gap and cannot overflow in any realistic run. The period
/// and the counters change together only in [`Ring::restart`](super::ring::Ring), which readers
/// detect and retry.
#[derive(Debug)]
pub(crate) struct Bucket<A: AtomicWord> {
    period: A,
    counts: [A; EVENTS],
}

impl<A: AtomicWord> Bucket<A> {
    pub(crate) fn new() -> Bucket<A> {
        Bucket {
            period: A::new(NEVER),
            counts: std::array::from_fn(|i| A::new(MetricEvent::ALL[i].empty())),
        }
    }

    /// The period the counters belong to ([`NEVER`] if none).
    #[inline(always)]
    pub(crate) fn period(&self) -> u64 {
        self.period.load(Acquire)
    }

    #[inline(always)]
    pub(crate) fn count(&self, event: MetricEvent) -> u64 {
        self.counts[event.index()].load(Acquire)
    }

    /// Merges `value` into `event` with an atomic read-modify-write: any number of threads may
    /// add at once.
    #[inline(always)]
    pub(crate) fn merge_shared(&self, event: MetricEvent, value: u64) {
        let counter = &self.counts[event.index()];
        match event {
            MetricEvent::MinRt => {
                counter.fetch_min(value, AcqRel);
            }
            _ => {
                counter.fetch_add(value, AcqRel);
            }
        }
    }

    /// Merges `value` into `event` with a plain load and store. Exact only while the caller is
    /// the bucket's one writer (readers may read at the same time).
    #[inline(always)]
    pub(crate) fn merge_exclusive(&self, event: MetricEvent, value: u64) {
        let counter = &self.counts[event.index()];
        let held = counter.load(Relaxed);
        let next = match event {
            MetricEvent::MinRt => held.min(value),
            // Wrapping, as `merge_shared`'s `fetch_add`: a bucket's count of one 100 ms period
            // never nears 2^64.
            _ => held.wrapping_add(value),
        };
        counter.store(next, Release);
    }

    /// Empties the counters for `period`, handing each old value to `displaced(old_period,
    /// event, value)`. Only [`Ring::restart`](super::ring::Ring) calls this, holding the ring's
    /// restart lock.
    pub(crate) fn restart(&self, period: u64, mut displaced: impl FnMut(u64, MetricEvent, u64)) {
        let old = self.period.load(Acquire);
        for event in MetricEvent::ALL {
            let value = self.counts[event.index()].swap(event.empty(), AcqRel);
            if old != NEVER && value != event.empty() {
                displaced(old, event, value);
            }
        }
        self.period.store(period, Release);
    }
}
