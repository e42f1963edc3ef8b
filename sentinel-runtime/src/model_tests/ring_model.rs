//! Property tests of the sliding windows against a plain reference model: the public
//! [`LeapArray`] (shared adds) and a [`Ring`] written with exclusive adds, driven by the same
//! random schedule.
//!
//! The model is a map from period to the counters of that period. A schedule mixes adds of
//! every [`MetricEvent`] (values up to 2^40, around `u32::MAX` among them), reads (`sum` of each
//! event, `sum_from` with a floor, `min_rt`) at the current time or later, and monotonic clock
//! gaps: within a bucket, a few buckets, whole multiples of the ring (the same bucket again),
//! 2^31..=2^33 buckets, and 2^32 or 2^33 buckets plus or minus a few (where a 32-bit period tag
//! would alias). Shapes are random: buckets of 1 ms..=1 s (any nanosecond count), 1..=100 of
//! them. Every read must equal the model exactly, and every bucket a restart displaces must be
//! handed over with exactly the model's counters of its period.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::stat::ring::Ring;
use crate::stat::{LeapArray, MetricEvent};

const MS: u64 = 1_000_000;

/// How far the clock moves before an operation, in buckets (resolved against the ring's length).
#[derive(Clone, Debug)]
pub(super) enum Gap {
    /// Whole buckets.
    Buckets(u64),
    /// `k` times the ring's length: the same bucket again.
    Rings(u64),
    /// `k * 2^32 + d` buckets (`d` may be negative).
    Tag(u64, i64),
}

impl Gap {
    pub(super) fn buckets(&self, len: u64) -> u64 {
        match *self {
            Gap::Buckets(b) => b,
            Gap::Rings(k) => k * len,
            Gap::Tag(k, d) => (k << 32).saturating_add_signed(d),
        }
    }
}

/// Gaps: mostly short, sometimes idle for a long time.
pub(super) fn gap() -> impl Strategy<Value = Gap> {
    prop_oneof![
        6 => (0u64..=1).prop_map(Gap::Buckets),
        4 => (2u64..=12).prop_map(Gap::Buckets),
        2 => (13u64..=300).prop_map(Gap::Buckets),
        2 => (1u64..=3).prop_map(Gap::Rings),
        1 => ((1u64 << 31)..=(1u64 << 33)).prop_map(Gap::Buckets),
        1 => ((1u64..=2), (-3i64..=3)).prop_map(|(k, d)| Gap::Tag(k, d)),
    ]
}

/// The clock after `gap` buckets plus `frac` (a fraction of a bucket, in 1/2^16), or `None` if
/// that passes the end of the `u64` nanosecond clock.
pub(super) fn advance(now: u64, gap: &Gap, frac: u16, bucket: u64, len: u64) -> Option<u64> {
    let within = ((u128::from(bucket) * u128::from(frac)) >> 16) as u64;
    gap.buckets(len)
        .checked_mul(bucket)?
        .checked_add(within)?
        .checked_add(now)
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..=10,
        2 => 0u64..=1_000_000,
        2 => (u64::from(u32::MAX) - 2)..=(u64::from(u32::MAX) + 2),
        2 => 0u64..=(1 << 40),
    ]
}

#[derive(Clone, Debug)]
enum Action {
    Add {
        event: usize,
        value: u64,
    },
    /// Reads at `now + ahead` buckets (a read never moves the clock), with `sum_from` counting
    /// from `floor_back` periods before the read's own.
    Read {
        ahead: Gap,
        floor_back: u64,
    },
}

#[derive(Clone, Debug)]
struct Op {
    gap: Gap,
    frac: u16,
    action: Action,
}

fn op() -> impl Strategy<Value = Op> {
    let action = prop_oneof![
        3 => (0..MetricEvent::ALL.len(), value())
            .prop_map(|(event, value)| Action::Add { event, value }),
        1 => (gap(), 0u64..=120).prop_map(|(ahead, floor_back)| Action::Read { ahead, floor_back }),
    ];
    (gap(), any::<u16>(), action).prop_map(|(gap, frac, action)| Op { gap, frac, action })
}

/// The model: each period's counters, and the newest period added at each ring index.
struct Model {
    len: u64,
    periods: BTreeMap<u64, [u64; 6]>,
    newest_at: BTreeMap<u64, u64>,
}

impl Model {
    fn new(len: u64) -> Model {
        Model {
            len,
            periods: BTreeMap::new(),
            newest_at: BTreeMap::new(),
        }
    }

    /// Adds at `period` (never older than any period added before); returns what a ring must
    /// hand over: the counters (in event order, empty ones left out) of the period its bucket
    /// held, if older.
    fn add(&mut self, period: u64, event: MetricEvent, value: u64) -> Vec<(u64, MetricEvent, u64)> {
        let index = period % self.len;
        let mut displaced = Vec::new();
        if let Some(&held) = self.newest_at.get(&index) {
            assert!(held <= period, "the schedule's clock is monotonic");
            if held < period {
                let counts = self
                    .periods
                    .remove(&held)
                    .expect("held period has counters");
                for e in MetricEvent::ALL {
                    if counts[e.index()] != e.empty() {
                        displaced.push((held, e, counts[e.index()]));
                    }
                }
            }
        }
        self.newest_at.insert(index, period);
        let counts = self
            .periods
            .entry(period)
            .or_insert_with(|| MetricEvent::ALL.map(MetricEvent::empty));
        let c = &mut counts[event.index()];
        *c = match event {
            MetricEvent::MinRt => (*c).min(value),
            _ => c.checked_add(value).expect("sums stay far below 2^64"),
        };
        displaced
    }

    /// The periods `(period - periods, period]`.
    fn window(&self, period: u64, periods: u64) -> impl Iterator<Item = &[u64; 6]> {
        let first = (period + 1).saturating_sub(periods);
        self.periods.range(first..=period).map(|(_, c)| c)
    }

    fn sum(&self, period: u64, periods: u64, event: MetricEvent) -> u64 {
        self.window(period, periods).map(|c| c[event.index()]).sum()
    }

    fn min_rt(&self, period: u64, periods: u64) -> Option<u64> {
        self.window(period, periods)
            .map(|c| c[MetricEvent::MinRt.index()])
            .filter(|&m| m != MetricEvent::MinRt.empty())
            .min()
    }
}

fn shape() -> impl Strategy<Value = (u64, u32)> {
    (
        prop_oneof![
            Just(MS),
            Just(10 * MS),
            Just(100 * MS),
            Just(1_000 * MS),
            MS..=1_000 * MS,
        ],
        prop_oneof![Just(1u32), Just(2), Just(10), Just(100), 1u32..=100],
    )
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
    fn leap_array_and_exclusive_ring_match_the_model(
        (bucket, len) in shape(),
        start in prop_oneof![0u64..=1_000, 0u64..=(1 << 50)],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let window = LeapArray::new(Duration::from_nanos(bucket * u64::from(len)), len)
            .expect("a valid shape");
        let ring: Ring<AtomicU64> = Ring::new(bucket, len);
        let n = u64::from(len);
        let mut model = Model::new(n);
        let mut now = start;
        for (step, op) in ops.iter().enumerate() {
            // A gap past the end of the clock is left out (the clock stays put).
            now = advance(now, &op.gap, op.frac, bucket, n).unwrap_or(now);
            let period = now / bucket;
            match op.action {
                Action::Add { event, value } => {
                    let event = MetricEvent::ALL[event];
                    let expected = model.add(period, event, value);
                    window.add(now, event, value);
                    let mut displaced = Vec::new();
                    ring.add_at(ring.position(now), event, value, true, |p, e, v| {
                        displaced.push((p, e, v))
                    });
                    prop_assert_eq!(
                        &displaced, &expected,
                        "step {}: add {:?} {} at t={} (period {}): displaced", step, event,
                        value, now, period
                    );
                }
                Action::Read { ref ahead, floor_back } => {
                    let at = advance(now, ahead, op.frac, bucket, n).unwrap_or(now);
                    let p = at / bucket;
                    for event in MetricEvent::ALL {
                        if event == MetricEvent::MinRt {
                            continue;
                        }
                        let expected = model.sum(p, n, event);
                        prop_assert_eq!(
                            window.sum(at, event), expected,
                            "step {}: LeapArray sum {:?} at t={} (period {}, now {})",
                            step, event, at, p, now
                        );
                        prop_assert_eq!(
                            ring.sum_within(at, event, n), expected,
                            "step {}: exclusive ring sum {:?} at t={}", step, event, at
                        );
                        let floor = p.saturating_sub(floor_back);
                        let from = model.sum(p, n.min(p - floor + 1), event);
                        prop_assert_eq!(
                            window.sum_from(at, event, floor), from,
                            "step {}: sum_from {:?} at t={} floor {}", step, event, at, floor
                        );
                    }
                    let expected = model.min_rt(p, n);
                    prop_assert_eq!(
                        window.min_rt(at), expected,
                        "step {}: LeapArray min_rt at t={}", step, at
                    );
                    prop_assert_eq!(
                        ring.min_within(at, n), expected,
                        "step {}: exclusive ring min at t={}", step, at
                    );
                }
            }
        }
    }
}

/// Deterministic corner cases of the same model: an idle gap of exactly `2^32` buckets (where
/// a 32-bit tag would alias), and a floor above the read's period.
#[test]
fn tag_alias_gaps_and_floors() {
    for (bucket, len) in [(MS, 1u32), (MS, 16), (1_000 * MS, 100)] {
        let w = LeapArray::new(Duration::from_nanos(bucket * u64::from(len)), len).unwrap();
        let t0 = 5 * bucket;
        w.add(t0, MetricEvent::Pass, 3);
        for gap in [1u64 << 32, (1 << 32) + u64::from(len), 1 << 33] {
            let t = t0 + gap * bucket;
            assert_eq!(
                w.sum(t, MetricEvent::Pass),
                0,
                "gap {gap} buckets of {bucket}"
            );
            assert_eq!(w.min_rt(t), None);
        }
        assert_eq!(w.sum_from(t0, MetricEvent::Pass, t0 / bucket + 1), 0);
        assert_eq!(w.sum_from(t0, MetricEvent::Pass, 0), 3);
    }
}
