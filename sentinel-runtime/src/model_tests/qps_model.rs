//! Property tests of [`QpsRing`] (single-threaded, monotonic time) against a reference model of
//! the sliding window.
//!
//! # The model
//!
//! Admitted passes per period. A reservation of `count` at period `p` against `limit`
//! (clamped to [`MAX_COUNT`], as `reserve` documents) is admitted iff `count <= limit` and the
//! passes of the window plus `count` are at most `limit`; the window is `(p - N, p]`, or
//! `(p - N - 1, p]` when strict. A rollback removes the reservation's passes; seeds count
//! passes admitted before the ring existed (each period's total clamped to [`MAX_COUNT`]).
//!
//! One documented refinement: the ring caches the passes of the window's earlier periods when
//! its head moves, so a rollback of a pass in an *earlier* period frees its room only from the
//! next move of the head on ("every error is on the side of blocking", module docs of
//! `slot::qps_ring`). The model keeps that cache too (`prev`), and checks both:
//!
//! * every decision equals the model's, and `held()` equals the model's cache plus its head's
//!   passes;
//! * every admission also fits the exact window (rolled-back passes removed at once): the ring
//!   never admits more than `limit` passes in any window.
//!
//! Schedules mix reservations (random batch sizes: small, a fraction of the limit, around it,
//! and far above it, up to 2^40), rollbacks of the last admitted reservation or of an older
//! one, and monotonic gaps (see [`super::ring_model::gap`]: up to 2^33 buckets, and 2^32
//! buckets plus or minus a few, where the ring's 32-bit tags repeat), over random shapes
//! (buckets of 1 ms..=1 s, 1..=100 of them, strict or not), limits up to and beyond
//! [`MAX_COUNT`], and seeds at construction.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::ring_model::{advance, gap, Gap};
use crate::slot::qps_ring::{QpsRing, MAX_COUNT};

const MS: u64 = 1_000_000;

/// Whether the property test rolls back reservations whose period lies `2^32` or more buckets
/// behind the head (the case of
/// [`a_rollback_after_2_pow_32_buckets_leaves_a_later_period_alone`]).
const ROLLBACK_ACROSS_A_TAG_WRAP: bool = true;

struct Model {
    span: u64,
    head: u64,
    /// Admitted passes per period (rollbacks removed).
    passes: BTreeMap<u64, u64>,
    /// The passes of the `span` periods before `head`, as of the head's last move.
    prev: u64,
}

impl Model {
    fn new(head: u64, n: u64, strict: bool) -> Model {
        Model {
            span: if strict { n } else { n - 1 },
            head,
            passes: BTreeMap::new(),
            prev: 0,
        }
    }

    fn at(&self, period: u64) -> u64 {
        self.passes.get(&period).copied().unwrap_or(0)
    }

    /// Passes in the periods `[from, to]`.
    fn sum(&self, from: u64, to: u64) -> u64 {
        if from > to {
            return 0;
        }
        self.passes.range(from..=to).map(|(_, c)| c).sum()
    }

    /// Passes of the `span` periods before `head`.
    fn before_head(&self) -> u64 {
        if self.head == 0 {
            return 0;
        }
        self.sum(self.head.saturating_sub(self.span), self.head - 1)
    }

    fn seed(&mut self, period: u64, passes: u64) {
        let period = period.min(self.head);
        // Periods already out of the window never count again (time only moves on).
        if self.head - period > self.span {
            return;
        }
        let c = self.passes.entry(period).or_insert(0);
        *c = c.saturating_add(passes).min(MAX_COUNT);
        self.prev = self.before_head();
    }

    /// The model's decision: `(admitted, fits the exact window)`.
    fn reserve(&mut self, period: u64, count: u64, limit: u64) -> (Option<u64>, bool) {
        let limit = limit.min(MAX_COUNT);
        if count > limit {
            return (None, false);
        }
        if period > self.head {
            self.head = period;
            self.prev = self.before_head();
        }
        let head = self.head;
        let exact = self.before_head() + self.at(head) + count <= limit;
        if self.prev + self.at(head) + count <= limit {
            *self.passes.entry(head).or_insert(0) += count;
            (Some(head), exact)
        } else {
            (None, exact)
        }
    }

    fn rollback(&mut self, period: u64, count: u64) {
        let c = self.passes.get_mut(&period).expect("an admitted period");
        *c -= count;
    }

    fn held(&self) -> u64 {
        self.prev + self.at(self.head)
    }
}

/// A batch size, resolved against the (clamped) limit.
#[derive(Clone, Debug)]
enum Count {
    Small(u64),
    /// `limit * f / 2^16`.
    Fraction(u16),
    /// `limit + d`.
    AroundLimit(i64),
    Exactly(u64),
}

impl Count {
    fn resolve(&self, limit: u64) -> u64 {
        let limit = limit.min(MAX_COUNT);
        match *self {
            Count::Small(c) => c,
            Count::Fraction(f) => ((u128::from(limit) * u128::from(f)) >> 16) as u64,
            Count::AroundLimit(d) => limit.saturating_add_signed(d),
            Count::Exactly(c) => c,
        }
    }
}

fn count() -> impl Strategy<Value = Count> {
    prop_oneof![
        4 => (0u64..=3).prop_map(Count::Small),
        4 => any::<u16>().prop_map(Count::Fraction),
        2 => (-2i64..=2).prop_map(Count::AroundLimit),
        1 => prop_oneof![
            Just(MAX_COUNT),
            Just(MAX_COUNT + 1),
            Just(u64::from(u32::MAX)),
            Just(1u64 << 32),
            Just((1u64 << 32) + 1),
            Just(1u64 << 40),
        ]
        .prop_map(Count::Exactly),
    ]
}

fn limit() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..=3,
        3 => 1u64..=1_000,
        2 => (MAX_COUNT - 3)..=(MAX_COUNT + 3),
        1 => Just(u64::MAX),
        1 => 0u64..=(1 << 40),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Reserve {
        gap: Gap,
        frac: u16,
        count: Count,
    },
    /// Rolls back the last admitted reservation (if not rolled back yet).
    RollbackLast,
    /// Rolls back the `i % len`-th of the admitted reservations not rolled back yet.
    RollbackOlder(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (gap(), any::<u16>(), count())
            .prop_map(|(gap, frac, count)| Op::Reserve { gap, frac, count }),
        2 => Just(Op::RollbackLast),
        1 => any::<usize>().prop_map(Op::RollbackOlder),
    ]
}

/// A seed: `back` periods before the head (negative: after it), `passes`.
fn seeds() -> impl Strategy<Value = Vec<(i64, u64)>> {
    let passes = prop_oneof![
        0u64..=5,
        0u64..=1_000,
        (MAX_COUNT - 2)..=(MAX_COUNT + 2),
        0u64..=(1 << 40),
    ];
    prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec((-3i64..=110, passes), 1..6),
    ]
}

fn config() -> Config {
    Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn qps_ring_matches_the_window_model(
        bucket in prop_oneof![Just(MS), Just(100 * MS), Just(1_000 * MS), MS..=1_000 * MS],
        n in prop_oneof![Just(1u32), Just(2), Just(10), 1u32..=100],
        strict in any::<bool>(),
        limit in limit(),
        start in prop_oneof![0u64..=1_000, 0u64..=(1 << 50)],
        seeds in seeds(),
        ops in prop::collection::vec(op(), 1..100),
    ) {
        let mut ring: QpsRing<AtomicU64> = QpsRing::new(bucket, n, strict, start);
        let len = (u64::from(n) + 1).next_power_of_two();
        let head = start / bucket;
        let mut model = Model::new(head, u64::from(n), strict);
        for &(back, passes) in &seeds {
            let period = match u64::try_from(back) {
                Ok(back) => head.saturating_sub(back),
                Err(_) => head + back.unsigned_abs(),
            };
            ring.seed(period, passes);
            model.seed(period, passes);
        }
        prop_assert_eq!(ring.held(), model.held(), "after the seeds {:?}", seeds);
        let mut now = start;
        // Admitted reservations not rolled back: (period, count).
        let mut live: Vec<(u64, u64)> = Vec::new();
        for (step, op) in ops.iter().enumerate() {
            match op {
                Op::Reserve { gap, frac, count } => {
                    now = advance(now, gap, *frac, bucket, len).unwrap_or(now);
                    let count = count.resolve(limit);
                    let period = now / bucket;
                    let (expected, exact) = model.reserve(period, count, limit);
                    let got = ring.reserve(now, count, limit);
                    prop_assert_eq!(
                        got, expected,
                        "step {}: reserve {} at t={} (period {}) against {}: held {} (model \
                         prev {} + head {})",
                        step, count, now, period, limit, ring.held(), model.prev,
                        model.at(model.head)
                    );
                    if let Some(p) = got {
                        prop_assert!(exact, "step {}: admitted past the exact window", step);
                        live.push((p, count));
                    }
                }
                Op::RollbackLast | Op::RollbackOlder(_) => {
                    let Some(i) = (match op {
                        Op::RollbackOlder(i) if !live.is_empty() => Some(i % live.len()),
                        _ => live.len().checked_sub(1),
                    }) else {
                        continue;
                    };
                    let (p, c) = live[i];
                    if !ROLLBACK_ACROSS_A_TAG_WRAP && model.head - p >= 1 << 32 {
                        continue;
                    }
                    live.remove(i);
                    ring.rollback(p, c);
                    model.rollback(p, c);
                }
            }
            prop_assert_eq!(
                ring.held(), model.held(),
                "step {}: after {:?} at t={}", step, op, now
            );
        }
    }
}

/// A rollback of a period that left the ring is a no-op, also once the head is `2^32 * k + d`
/// periods past the reservation (`d` < the ring's length): the bucket of the reservation's
/// period then holds a *later* period with the same 32-bit tag, and a rollback that compared
/// only the tag would take the passes out of that later period, an over-admission (here 2
/// passes in a window with a limit of 1). The module docs promise the no-op ("subtract the
/// count if the bucket still carries the period's tag ... a move of the head already dropped
/// it otherwise"; "tags compared within that range cannot alias").
///
/// Timeline (1 ms buckets, N = 10, limit 1): a call is admitted at period p and held (a
/// throttled or slow call whose later check has not decided yet); 2^32 buckets later (about
/// 49.7 days) another call is admitted at p + 2^32; the first call is now cancelled (a later
/// check blocks it, or its future is dropped), which rolls back period p: the pass of
/// p + 2^32 disappears, and a third call is admitted in the same window.
///
/// Expected: the rollback is a no-op (period p left the ring long ago), the third call is
/// blocked, held() stays 1. A rollback by the 32-bit tag alone would drop held() to 0 and admit
/// the third call.
#[test]
fn a_rollback_after_2_pow_32_buckets_leaves_a_later_period_alone() {
    let bucket = MS;
    let t0 = 1_000 * bucket;
    let r: QpsRing<AtomicU64> = QpsRing::new(bucket, 10, false, t0);
    let p = t0 / bucket;
    assert_eq!(r.reserve(t0, 1, 1), Some(p));
    let later = t0 + (1 << 32) * bucket;
    assert_eq!(r.reserve(later, 1, 1), Some(p + (1 << 32)));
    assert_eq!(r.held(), 1);
    r.rollback(p, 1); // the call admitted 2^32 buckets ago is cancelled
    assert_eq!(
        r.held(),
        1,
        "BUG: a rollback of period {p} took the pass of period {} (same 32-bit tag)",
        p + (1 << 32)
    );
    assert_eq!(
        r.reserve(later, 1, 1),
        None,
        "BUG: a second pass admitted in one window with a limit of 1"
    );
}

/// The rollback of a period that left the ring less than 2^32 periods ago is a no-op, and one
/// of a period in the window frees its room at once if it is the head's, and from the next
/// move of the head on if it is earlier (the documented cache).
#[test]
fn rollback_effects() {
    let bucket = MS;
    let t0 = 1_000 * bucket;
    let r: QpsRing<AtomicU64> = QpsRing::new(bucket, 4, false, t0);
    let p = t0 / bucket;
    assert_eq!(r.reserve(t0, 2, 3), Some(p));
    assert_eq!(r.reserve(t0 + bucket, 1, 3), Some(p + 1));
    assert_eq!(r.reserve(t0 + bucket, 1, 3), None, "window {{p, p+1}} full");
    r.rollback(p, 2);
    assert_eq!(
        r.reserve(t0 + bucket, 1, 3),
        None,
        "p's rollback waits for a move"
    );
    assert_eq!(
        r.reserve(t0 + 2 * bucket, 2, 3),
        Some(p + 2),
        "and then counts"
    );
    r.rollback(p + 2, 2);
    assert_eq!(
        r.reserve(t0 + 2 * bucket, 2, 3),
        Some(p + 2),
        "the head's is at once"
    );
    // 2^31 periods on (the ring is 8 buckets): rolling back p + 2 touches nothing.
    let later = t0 + (1 << 31) * bucket;
    assert_eq!(r.reserve(later, 3, 3), Some(p + (1 << 31)));
    r.rollback(p + 2, 2);
    assert_eq!(r.held(), 3);
    assert_eq!(r.reserve(later, 1, 3), None);
}
