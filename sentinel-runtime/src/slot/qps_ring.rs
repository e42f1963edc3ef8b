//! [`QpsRing`]: exact admission of at most `limit` passes per sliding window, lock-free on the
//! common path and correct for any batch size, any idle gap and any clock reading.
//!
//! # Protocol
//!
//! The ring has `len >= N + 1` buckets (a power of two), each a word `tag(32) | count(32)`. The
//! *head* is the newest period any caller has reached, as a full `u64`; `prev` caches the passes
//! of the `span` buckets before it (`N - 1`, or `N` in strict mode); `seq` is even while the head
//! is stable and odd while one caller moves it.
//!
//! * **Reserve** at period `p`: read `seq` (even), `head`, `prev`. If `p > head`, move the head
//!   first (below). If `p < head` (a stale clock reading), the call counts at the head's period:
//!   the admitted period is returned so that statistics record the pass where admission counted
//!   it. Then a CAS adds `count` to the head's bucket only if `prev + held + count <= limit`, so
//!   a bucket never holds more than the limit (`< 2^31`): the count cannot carry into the tag. If
//!   `seq` moved meanwhile, the add is rolled back and the call retries: a late add can never
//!   slip past a cached `prev`.
//! * **Move the head** to `p`: the caller that turns `seq` odd (one CAS) retags every bucket of
//!   a period entering the ring, `(max(head, p - len), p]`, to that period with a zero count,
//!   sums `prev`, publishes `head = p`, and turns `seq` even. Others wait for it (a few stores
//!   and `span` loads; `spin_wait` yields the core). After every move, each bucket is tagged with
//!   exactly its period within `(head - len, head]`, so 32-bit tags compared within that range
//!   cannot alias, whatever the idle gap: tags never wrap into a false match.
//! * **Roll back** (a later check blocked the call, or its future was dropped): subtract the
//!   count if the bucket still carries the period's tag. A rollback only ever lowers a count that
//!   another caller may have seen higher, so every error is on the side of blocking.

use std::sync::atomic::Ordering::SeqCst;

use crossbeam_utils::CachePadded;

use crate::stat::word::{pack, tag, tag_of, value};
use crate::stat::FastDiv;
use crate::sync::AtomicWord;

/// The largest count a bucket can hold: thresholds are validated below it.
pub(crate) const MAX_COUNT: u64 = (1 << 31) - 1;

#[derive(Debug)]
struct Head<A> {
    seq: A,
    head: A,
    /// The end of the head's bucket (`(head + 1) * bucket_nanos`, saturating): a reading before
    /// it counts at the head, with no division.
    head_end: A,
    prev: A,
}

/// The end of the bucket of `period`: `(period + 1) * bucket_nanos`, saturating.
fn end_of(period: u64, bucket_nanos: u64) -> u64 {
    period.saturating_add(1).saturating_mul(bucket_nanos)
}

/// The ring of one QPS gate (see the module docs).
#[derive(Debug)]
pub(crate) struct QpsRing<A: AtomicWord> {
    head: CachePadded<Head<A>>,
    ring: Box<[A]>,
    /// Divides by the bucket length.
    bucket: FastDiv,
    /// The ring's length is a power of two (at least `N + 1`): index = period & mask.
    mask: u64,
    len: u64,
    /// Earlier buckets counted with the current one: `N - 1`, or `N` when strict.
    span: u64,
}

impl<A: AtomicWord> QpsRing<A> {
    /// An empty ring of `sample_count` buckets of `bucket_nanos` (both at least 1), whose head
    /// is the period of `now`.
    pub(crate) fn new(bucket_nanos: u64, sample_count: u32, strict: bool, now: u64) -> Self {
        let n = u64::from(sample_count.max(1));
        let len = (n + 1).next_power_of_two();
        let bucket = FastDiv::new(bucket_nanos.max(1));
        let head = bucket.div(now);
        let ring: Box<[A]> = (0..len).map(|_| A::new(0)).collect();
        for back in 0..len {
            let q = head.wrapping_sub(back);
            ring[(q & (len - 1)) as usize].store(pack(tag_of(q), 0), SeqCst);
        }
        QpsRing {
            head: CachePadded::new(Head {
                seq: A::new(0),
                head: A::new(head),
                head_end: A::new(end_of(head, bucket.divisor())),
                prev: A::new(0),
            }),
            ring,
            bucket,
            mask: len - 1,
            len,
            span: if strict { n } else { n - 1 },
        }
    }

    #[inline(always)]
    fn slot(&self, period: u64) -> &A {
        &self.ring[(period & self.mask) as usize]
    }

    /// How many buckets the ring holds (its memory: a word each).
    pub(crate) fn buckets(&self) -> u64 {
        self.len
    }

    /// The bucket length in nanoseconds.
    pub(crate) fn bucket_nanos(&self) -> u64 {
        self.bucket.divisor()
    }

    /// The period of time `now`.
    #[inline]
    pub(crate) fn period(&self, now: u64) -> u64 {
        self.bucket.div(now)
    }

    /// Reserves `count` passes at `now` against `limit`: the period the passes were counted in
    /// (the period of `now`, or a later one if the ring has reached it), or `None` if they do
    /// not fit.
    #[inline(always)]
    pub(crate) fn reserve(&self, now: u64, count: u64, limit: u64) -> Option<u64> {
        self.reserve_within(now, count, limit.min(MAX_COUNT))
    }

    /// [`reserve`](Self::reserve) for a `limit` at most [`MAX_COUNT`] (the caller's to ensure).
    #[inline(always)]
    pub(crate) fn reserve_within(&self, now: u64, count: u64, limit: u64) -> Option<u64> {
        debug_assert!(limit <= MAX_COUNT, "a limit over the ring's largest count");
        if count > limit {
            return None;
        }
        // The common call, inline: the head stable and holding `now`, the bucket tagged with
        // it, one CAS. Anything else (a move of the head to make or to wait for, a bucket
        // retagged, a lost CAS, a move meanwhile) goes round the full loop below, out of line.
        let seq = self.head.seq.load(SeqCst);
        if seq & 1 == 0 {
            let head = self.head.head.load(SeqCst);
            if now < self.head.head_end.load(SeqCst) {
                let prev = self.head.prev.load(SeqCst);
                let slot = self.slot(head);
                let word = slot.load(SeqCst);
                if tag(word) == tag_of(head) {
                    let fits = prev + value(word) + count <= limit;
                    if fits
                        && slot
                            .compare_exchange(word, word + count, SeqCst, SeqCst)
                            .is_ok()
                    {
                        if self.head.seq.load(SeqCst) == seq {
                            return Some(head);
                        }
                        self.rollback(head, count);
                    } else if !fits && self.head.seq.load(SeqCst) == seq {
                        return None;
                    }
                }
            }
        }
        self.reserve_again(now, count, limit)
    }

    /// [`reserve`](Self::reserve)'s full loop (`limit` already clamped, `count` within it).
    #[cold]
    #[inline(never)]
    fn reserve_again(&self, now: u64, count: u64, limit: u64) -> Option<u64> {
        loop {
            let seq = self.head.seq.load(SeqCst);
            if seq & 1 == 1 {
                A::spin_wait();
                continue;
            }
            let head = self.head.head.load(SeqCst);
            // A reading within (or before: a stale reading) the head's bucket counts at the head.
            let period = if now < self.head.head_end.load(SeqCst) {
                head
            } else {
                self.bucket.div(now)
            };
            if period > head {
                self.advance(seq, head, period);
                continue;
            }
            let period = head; // (a stale reading counts at the head)
            let prev = self.head.prev.load(SeqCst);
            let slot = self.slot(period);
            let mut word = slot.load(SeqCst);
            let fits = loop {
                if tag(word) != tag_of(period) {
                    break None; // retagged by a move of the head: `seq` has moved
                }
                if prev + value(word) + count > limit {
                    break Some(false);
                }
                match slot.compare_exchange_weak(word, word + count, SeqCst, SeqCst) {
                    Ok(_) => break Some(true),
                    Err(seen) => word = seen,
                }
            };
            let settled = self.head.seq.load(SeqCst) == seq;
            match fits {
                Some(true) if settled => return Some(period),
                Some(true) => self.rollback(period, count),
                Some(false) if settled => return None,
                _ => {}
            }
        }
    }

    /// Moves the head from `head` to `period` if `seq` is still `seq` (else another caller is
    /// moving it, or has).
    #[cold]
    #[inline(never)]
    fn advance(&self, seq: u64, head: u64, period: u64) {
        if self
            .head
            .seq
            .compare_exchange(seq, seq + 1, SeqCst, SeqCst)
            .is_err()
        {
            return;
        }
        // Only the holder of an odd `seq` moves the head: `head` is still `head`.
        let first = head
            .saturating_add(1)
            .max(period.saturating_sub(self.len - 1));
        for q in first..=period {
            self.slot(q).store(pack(tag_of(q), 0), SeqCst);
        }
        let prev = self.sum_before(period);
        self.head.prev.store(prev, SeqCst);
        self.head.head.store(period, SeqCst);
        self.head
            .head_end
            .store(end_of(period, self.bucket.divisor()), SeqCst);
        self.head.seq.store(seq + 2, SeqCst);
    }

    /// Passes in the `span` buckets before `period`.
    fn sum_before(&self, period: u64) -> u64 {
        (1..=self.span)
            .map(|back| {
                let q = period.wrapping_sub(back);
                let word = self.slot(q).load(SeqCst);
                if tag(word) == tag_of(q) {
                    value(word)
                } else {
                    0
                }
            })
            .sum()
    }

    /// How long after `now` `count` passes would fit under `limit`: the time until enough of the
    /// oldest counted buckets have left the window, or `None` if they never fit (`count` over
    /// the limit). Read without the protocol's care (for a blocked call's hint only): the counts
    /// may move meanwhile.
    #[cold]
    pub(crate) fn fits_again_in(&self, now: u64, count: u64, limit: u64) -> Option<u64> {
        let limit = limit.min(MAX_COUNT);
        if count > limit {
            return None;
        }
        let head = self.head.head.load(SeqCst).max(self.period(now));
        let held = |q: u64| {
            let word = self.slot(q).load(SeqCst);
            if tag(word) == tag_of(q) && q <= self.head.head.load(SeqCst) {
                value(word)
            } else {
                0
            }
        };
        let oldest = head.saturating_sub(self.span);
        let total: u64 = (oldest..=head).map(held).sum();
        let mut over = (total + count).saturating_sub(limit);
        for q in oldest..=head {
            if over == 0 {
                // Fits at once (the counts moved since the block).
                return Some(0);
            }
            over = over.saturating_sub(held(q));
            if over == 0 {
                // Bucket `q` leaves the window when the head reaches `q + span + 1`.
                let leaves = end_of(q.saturating_add(self.span), self.bucket.divisor());
                return Some(leaves.saturating_sub(now));
            }
        }
        None
    }

    /// The passes counted in the window at `now` (the bucket of `now`, or the head if later,
    /// and the `span` before it), and when the oldest of them leave it (`None`: the window holds
    /// none). Read without the protocol's care, as [`fits_again_in`](Self::fits_again_in): for
    /// the RateLimit header of a call just checked. While the head holds `now` (the check just
    /// moved it there), the count is what the check read (the head's bucket and the cached sum
    /// of those before it), and the scan for the oldest stops at the first bucket holding any.
    #[cfg(any(feature = "tower", test))]
    pub(crate) fn window_at(&self, now: u64) -> (u64, Option<u64>) {
        let head = self.head.head.load(SeqCst);
        let newest = head.max(self.period(now));
        let held = |q: u64| {
            let word = self.slot(q).load(SeqCst);
            if q <= head && tag(word) == tag_of(q) {
                value(word)
            } else {
                0
            }
        };
        let oldest = newest.saturating_sub(self.span);
        let total = if newest == head {
            self.head.prev.load(SeqCst) + held(head)
        } else {
            (oldest..=newest).map(held).sum()
        };
        let leaves = (oldest..=newest)
            .find(|&q| held(q) > 0)
            .map(|q| end_of(q.saturating_add(self.span), self.bucket.divisor()));
        (total, leaves)
    }

    /// Takes `count` back out of the bucket of `period`, if it still belongs to that period (a
    /// move of the head already dropped it otherwise).
    pub(crate) fn rollback(&self, period: u64, count: u64) {
        // A bucket whose period has left the ring holds a later period now, maybe one with the
        // same 32-bit tag (2^32 periods later): compare the full period with the head first.
        // (The head cannot move 2^32 periods between this check and the CAS below.)
        let head = self.head.head.load(SeqCst);
        if period > head || head - period >= self.len {
            return;
        }
        let slot = self.slot(period);
        let mut word = slot.load(SeqCst);
        while tag(word) == tag_of(period) && value(word) >= count {
            match slot.compare_exchange_weak(word, word - count, SeqCst, SeqCst) {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }

    /// Counts `passes` admitted before this ring existed (a rule reload) at `period`: they count
    /// against the limit until they leave the window. Called before the ring is shared.
    pub(crate) fn seed(&mut self, period: u64, passes: u64) {
        let head = self.head.head.load(SeqCst);
        let period = period.min(head);
        if head - period >= self.len {
            return;
        }
        let slot = self.slot(period);
        let word = slot.load(SeqCst);
        let held = value(word).saturating_add(passes).min(MAX_COUNT);
        slot.store(pack(tag_of(period), held as u32), SeqCst);
        let prev = self.sum_before(head);
        self.head.prev.store(prev, SeqCst);
    }

    /// The passes counted in the window ending at the head (for tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        let head = self.head.head.load(SeqCst);
        self.head.prev.load(SeqCst) + value(self.slot(head).load(SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    fn ring(n: u32, strict: bool) -> QpsRing<AtomicU64> {
        QpsRing::new(100 * MS, n, strict, T0)
    }

    #[test]
    fn admits_up_to_the_limit_and_returns_the_period() {
        let r = ring(10, false);
        let p = T0 / (100 * MS);
        assert_eq!(r.reserve(T0, 3, 5), Some(p));
        assert_eq!(r.reserve(T0, 2, 5), Some(p));
        assert_eq!(r.reserve(T0, 1, 5), None);
        assert_eq!(r.held(), 5);
    }

    #[test]
    fn a_stale_reading_counts_in_the_newest_period() {
        let r = ring(10, false);
        let later = T0 + 1_000 * MS;
        assert_eq!(r.reserve(later, 1, 5), Some(later / (100 * MS)));
        // A caller that read the clock before `later` is counted at `later`'s period.
        assert_eq!(r.reserve(T0 + 999 * MS, 1, 5), Some(later / (100 * MS)));
    }

    #[test]
    fn batches_never_carry_into_the_tag() {
        let r = ring(10, false);
        let limit = MAX_COUNT;
        assert!(r.reserve(T0, MAX_COUNT, limit).is_some());
        for _ in 0..1_000 {
            assert_eq!(r.reserve(T0, MAX_COUNT, limit), None);
        }
        assert_eq!(r.reserve(T0, u64::from(u32::MAX), u64::MAX), None);
        assert_eq!(r.held(), MAX_COUNT);
    }

    #[test]
    fn a_full_window_fits_again_when_enough_of_its_oldest_buckets_have_left() {
        // 10 buckets of 100 ms; 2 passes at 0 ms, 3 at 450 ms, limit 5.
        let r = ring(10, false);
        assert!(r.reserve(T0, 2, 5).is_some());
        assert!(r.reserve(T0 + 450 * MS, 3, 5).is_some());
        let at = T0 + 700 * MS;
        assert_eq!(r.reserve(at, 1, 5), None);
        // One more fits once the bucket at 0 ms leaves, at 1 000 ms: 300 ms later.
        assert_eq!(r.fits_again_in(at, 1, 5), Some(300 * MS));
        // Three more need the bucket at 400 ms gone too: at 1 400 ms.
        assert_eq!(r.fits_again_in(at, 3, 5), Some(700 * MS));
        assert_eq!(r.fits_again_in(at, 6, 5), None, "never fits");
        assert_eq!(r.fits_again_in(at, 1, 0), None, "a limit of 0 never admits");
        // Strict: counted one bucket longer.
        let r = ring(10, true);
        assert!(r.reserve(T0, 5, 5).is_some());
        assert_eq!(r.fits_again_in(T0 + 700 * MS, 1, 5), Some(400 * MS));
    }

    #[test]
    fn the_window_at_a_time_counts_its_passes_and_when_the_oldest_leave() {
        // 10 buckets of 100 ms; 2 passes at 0 ms, 3 at 450 ms.
        let r = ring(10, false);
        assert_eq!(r.window_at(T0), (0, None));
        assert!(r.reserve(T0, 2, 5).is_some());
        assert_eq!(r.window_at(T0), (2, Some(T0 + 1_000 * MS)));
        assert!(r.reserve(T0 + 450 * MS, 3, 5).is_some());
        assert_eq!(r.window_at(T0 + 450 * MS), (5, Some(T0 + 1_000 * MS)));
        // Later than the head (no call moved it): counted from the buckets themselves.
        assert_eq!(r.window_at(T0 + 1_000 * MS), (3, Some(T0 + 1_400 * MS)));
        assert_eq!(r.window_at(T0 + 1_400 * MS), (0, None));
    }

    #[test]
    fn rollback_and_seed() {
        let mut r = ring(10, false);
        r.seed(T0 / (100 * MS), 4);
        assert_eq!(r.reserve(T0, 1, 5), Some(T0 / (100 * MS)));
        assert_eq!(r.reserve(T0, 1, 5), None);
        r.rollback(T0 / (100 * MS), 1);
        assert!(r.reserve(T0, 1, 5).is_some());
    }
}
