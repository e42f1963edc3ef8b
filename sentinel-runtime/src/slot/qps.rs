//! Exact admission over a sliding window of passes (reject and warm-up behaviours).

use std::sync::atomic::{AtomicU64, Ordering::*};

use crossbeam_utils::CachePadded;

use super::gate::Threshold;
use super::warm_up::WarmUpCurve;
use crate::rules::FlowRule;
use crate::stat::word::{self, Landing};
use crate::stat::FastDiv;

/// The period word: `tag` (32 bits) | sum of the earlier buckets (31 bits) | ready (1 bit).
const READY: u64 = 1;
const PREV_MAX: u64 = (1 << 31) - 1;

fn period_word(tag: u32, prev: Option<u64>) -> u64 {
    match prev {
        Some(sum) => (u64::from(tag) << 32) | (sum.min(PREV_MAX) << 1) | READY,
        None => u64::from(tag) << 32,
    }
}

/// Exact admission over a sliding window of passes.
///
/// The ring has at least `N + 1` buckets (a power of two, so indexing is a mask) so that both
/// window modes fit. `period` names the newest period
/// any caller has reached, with the (cached) sum of the earlier buckets in the window; a caller
/// adds into the current bucket, then checks that `period` has not moved meanwhile. The thread
/// that moves `period` first publishes the move (not yet ready) and only then sums the earlier
/// buckets, so an add into an earlier bucket is either in that sum or sees the move and is
/// rolled back and retried: a late add can never slip past the cached sum.
#[derive(Debug)]
pub(crate) struct QpsGate {
    period: CachePadded<AtomicU64>,
    /// With warm-up, the limit per window follows the curve instead of the threshold.
    warm: Option<WarmUpCurve>,
    ring: Box<[AtomicU64]>,
    /// Divides by the bucket length.
    bucket: FastDiv,
    /// The ring's length is a power of two (at least `N + 1`): index = period & mask.
    mask: u64,
    /// Earlier buckets counted with the current one: `N - 1`, or `N` when strict.
    span: u64,
    pub(super) threshold: Threshold,
    pub(super) window_ms: u64,
}

impl QpsGate {
    pub(super) fn new(rule: &FlowRule, now: u64) -> QpsGate {
        // Validated rules have n >= 1 dividing the window; stay panic-free even so.
        let n = u64::from(rule.sample_count.max(1));
        let bucket_nanos = (rule.window_ms() * 1_000_000 / n).max(1);
        let len = (n + 1).next_power_of_two();
        let stale = word::tag_of((now / bucket_nanos).wrapping_sub(len));
        QpsGate {
            period: CachePadded::new(AtomicU64::new(period_word(stale, None))),
            ring: (0..len)
                .map(|_| AtomicU64::new(word::pack(stale, 0)))
                .collect(),
            bucket: FastDiv::new(bucket_nanos),
            mask: len - 1,
            warm: rule.warm_up.map(|w| WarmUpCurve::new(rule.threshold, w)),
            span: if rule.strict { n } else { n - 1 },
            threshold: Threshold::new(rule.threshold),
            window_ms: rule.window_ms(),
        }
    }

    #[inline]
    fn slot(&self, period: u64) -> &AtomicU64 {
        &self.ring[(period & self.mask) as usize]
    }

    /// The passes allowed per window now.
    #[inline]
    fn limit(&self, now: u64) -> u64 {
        match &self.warm {
            None => self.threshold.limit(),
            Some(curve) => {
                curve.sync(now);
                curve.rate().floor() as u64
            }
        }
    }

    /// Tries to reserve `count` passes at `now`.
    #[inline]
    pub(super) fn try_acquire(&self, now: u64, count: u32) -> bool {
        let admitted = self.reserve(now, count);
        if admitted {
            if let Some(curve) = &self.warm {
                curve.record_pass(now, count);
            }
        }
        admitted
    }

    #[inline]
    fn reserve(&self, now: u64, count: u32) -> bool {
        let limit = self.limit(now);
        let count64 = u64::from(count);
        if count64 > limit {
            return false;
        }
        let mut period = self.bucket.div(now);
        loop {
            let pw = self.period.load(SeqCst);
            let tag = word::tag_of(period);
            let age = word::age(tag, word::tag(pw));
            if age > 0 {
                self.advance(pw, period);
                continue;
            }
            if age < 0 {
                // The gate has reached a later period than this (slightly stale) reading.
                period = period.wrapping_add(age.unsigned_abs() as u64);
                continue;
            }
            let prev = if pw & READY != 0 {
                (pw >> 1) & PREV_MAX
            } else {
                self.sum_earlier(period)
            };
            let slot = self.slot(period);
            let old = slot.fetch_add(count64, SeqCst);
            let held = if word::tag(old) == tag {
                u64::from(word::value(old)) + count64
            } else if word::landing(tag, word::tag(old)) == Landing::Restart {
                match restart(slot, tag, count) {
                    Some(held) => held,
                    None => continue,
                }
            } else {
                rollback(slot, word::tag(old), count);
                continue;
            };
            if word::tag(self.period.load(SeqCst)) != tag {
                rollback(slot, tag, count);
                continue;
            }
            if prev + held > limit {
                rollback(slot, tag, count);
                return false;
            }
            return true;
        }
    }

    /// Undoes a reservation made at `now` (a later check blocked the call).
    pub(super) fn cancel(&self, now: u64, count: u32) {
        let period = self.bucket.div(now);
        rollback(self.slot(period), word::tag_of(period), count);
    }

    #[cold]
    fn advance(&self, seen: u64, period: u64) {
        let tag = word::tag_of(period);
        let pending = period_word(tag, None);
        if self
            .period
            .compare_exchange(seen, pending, SeqCst, SeqCst)
            .is_ok()
        {
            let sum = self.sum_earlier(period);
            // Fails harmlessly if another caller moved on meanwhile.
            let _ =
                self.period
                    .compare_exchange(pending, period_word(tag, Some(sum)), SeqCst, SeqCst);
        }
    }

    /// Passes in the `span` buckets before `period`.
    fn sum_earlier(&self, period: u64) -> u64 {
        (1..=self.span)
            .map(|back| {
                let p = period.wrapping_sub(back);
                let w = self.slot(p).load(SeqCst);
                if word::tag(w) == word::tag_of(p) {
                    u64::from(word::value(w))
                } else {
                    0
                }
            })
            .sum()
    }
}

/// Our `fetch_add` landed on a stale word: restart it at `tag` holding our `count`. Returns
/// `None` when another caller restarted it first (our add went with the old value: add again).
#[cold]
fn restart(slot: &AtomicU64, tag: u32, count: u32) -> Option<u64> {
    let mut current = slot.load(SeqCst);
    loop {
        if word::landing(tag, word::tag(current)) == Landing::Merge {
            return None;
        }
        match slot.compare_exchange(current, word::pack(tag, count), SeqCst, SeqCst) {
            Ok(_) => return Some(u64::from(count)),
            Err(seen) => current = seen,
        }
    }
}

/// Takes `count` back out of the word if it still belongs to `tag` (a restart already dropped it
/// otherwise).
fn rollback(slot: &AtomicU64, tag: u32, count: u32) {
    let mut current = slot.load(SeqCst);
    while word::tag(current) == tag && word::value(current) >= count {
        let next = word::pack(tag, word::value(current) - count);
        match slot.compare_exchange_weak(current, next, SeqCst, SeqCst) {
            Ok(_) => return,
            Err(seen) => current = seen,
        }
    }
}
