//! The QPS window against a plain reference model, on random schedules (packed counters need
//! proofs, not hopes).
//!
//! Each case loads one QPS rule of a random shape (buckets of 1 ms to 1 s, 1 to 60 of them,
//! default or strict mode, threshold 1 to 1000, whole or fractional) on a fresh resource, then
//! runs up to 200 steps of: advance the mock clock by a gap, call `acquire(n)` (the entry is dropped at
//! once), read the statistics. Gaps mix a few buckets, a few windows, minutes, and huge gaps of
//! 2^31 to 2^33 buckets (where a 32-bit period tag wraps); batch sizes mix `1..=threshold`,
//! just over it, and up to `u32::MAX`.
//!
//! The reference model, with `p = t / bucket_nanos` on the mock clock, `N = sample_count` and
//! `L = floor(threshold)`: a call of `n` at period `p` passes iff `n <= L` and the passes admitted
//! in the periods `(p - N, p]` (default mode) or `(p - N - 1, p]` (strict mode), plus `n`, are at
//! most `L`. Time only moves forward and one thread calls, so every decision must match.
//!
//! The statistics must match too: `metrics::snapshot` covers the 100 ms buckets
//! `(P - 10, P]` with `P = now / 100 ms` (passes, blocks and completes, in passes: a batch of `n`
//! counts `n`), and `metrics::last_minute` the seconds `now / 1 s - 59 ..= now / 1 s`, one entry
//! per second with traffic.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{metrics, BlockKind, EntryBuilder};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const STAT_BUCKET: u64 = 100 * MS;
const STEPS: usize = 200;
/// Mock time one case may use up. The mock clock is process-wide and never goes back, so the
/// cases of this binary (shrinking included) share the u64 of nanoseconds: 2^54 ns (208 days)
/// each leaves room for the 128 cases and 256 shrinking steps.
const CASE_BUDGET: u64 = 1 << 54;
/// Past this reading no gap is taken at all, whatever the budget says.
const CLOCK_END: u64 = 15_000_000_000_000_000_000;

static CASE: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Debug)]
struct Shape {
    bucket_ms: u64,
    sample_count: u32,
    strict: bool,
    threshold: f64,
}

impl Shape {
    fn bucket_nanos(&self) -> u64 {
        self.bucket_ms * MS
    }

    fn limit(&self) -> u64 {
        self.threshold.floor() as u64
    }

    fn rule(&self, resource: &str) -> FlowRule {
        let window = Duration::from_millis(self.bucket_ms * u64::from(self.sample_count));
        FlowRule::qps(resource, self.threshold)
            .window(window, self.sample_count)
            .strict(self.strict)
    }
}

#[derive(Clone, Debug)]
struct Step {
    gap_nanos: u64,
    batch: u32,
}

fn shape() -> impl Strategy<Value = Shape> {
    let bucket_ms = prop_oneof![
        3 => Just(1u64),
        2 => 2u64..=16,
        2 => 17u64..=1_000,
        1 => Just(100u64),
    ];
    let sample_count = prop_oneof![3 => 1u32..=12, 1 => 13u32..=60];
    let threshold = prop_oneof![
        2 => (1u32..=20).prop_map(f64::from),
        2 => (1u32..=1_000).prop_map(f64::from),
        1 => 1.0f64..1_000.0,
    ];
    (bucket_ms, sample_count, any::<bool>(), threshold).prop_map(
        |(bucket_ms, sample_count, strict, threshold)| Shape {
            bucket_ms,
            sample_count,
            strict,
            threshold,
        },
    )
}

fn steps(shape: &Shape) -> impl Strategy<Value = Vec<Step>> {
    let b = shape.bucket_nanos();
    let window = b * u64::from(shape.sample_count);
    let gap = prop_oneof![
        12 => 0..=3 * b,
        4 => 3 * b..=3 * b + 2 * window,
        1 => 0..=180 * SECOND,
        1 => ((1u64 << 31)..=(1u64 << 33), 0..b).prop_map(move |(k, rest)| k * b + rest),
    ];
    let limit = u32::try_from(shape.limit()).expect("threshold <= 1000");
    let batch = prop_oneof![
        6 => 1..=limit.min(3),
        6 => 1..=limit,
        2 => limit + 1..=2 * limit + 1,
        1 => limit + 1..=u32::MAX,
        1 => Just(u32::MAX),
    ];
    proptest::collection::vec(
        (gap, batch).prop_map(|(gap_nanos, batch)| Step { gap_nanos, batch }),
        1..=STEPS,
    )
}

/// The reference model of the rule and of the statistics.
struct Model {
    bucket: u64,
    /// Periods counted: N, or N + 1 when strict.
    span: u64,
    limit: u64,
    /// Passes admitted per rule period (only the recent ones are kept).
    admitted: BTreeMap<u64, u64>,
    /// (time, passes, blocked passes) of every call of the last minute or so.
    calls: Vec<(u64, u64, u64)>,
}

impl Model {
    fn new(shape: &Shape) -> Model {
        Model {
            bucket: shape.bucket_nanos(),
            span: u64::from(shape.sample_count) + u64::from(shape.strict),
            limit: shape.limit(),
            admitted: BTreeMap::new(),
            calls: Vec::new(),
        }
    }

    /// Whether a call of `n` at `t` passes; records it. Also returns the passes the window held.
    fn call(&mut self, t: u64, n: u32) -> (bool, u64) {
        let n = u64::from(n);
        let p = t / self.bucket;
        let first = p.saturating_sub(self.span - 1);
        self.admitted = self.admitted.split_off(&first);
        let held: u64 = self.admitted.values().sum();
        let pass = n <= self.limit && held + n <= self.limit;
        if pass {
            *self.admitted.entry(p).or_default() += n;
        }
        self.calls
            .retain(|&(at, _, _)| at / SECOND + 61 > t / SECOND);
        self.calls
            .push((t, if pass { n } else { 0 }, if pass { 0 } else { n }));
        (pass, held)
    }

    /// (pass, block, complete) over the 100 ms buckets `(P - 10, P]`.
    fn snapshot(&self, now: u64) -> (f64, f64, f64) {
        let p = now / STAT_BUCKET;
        let (pass, block) = self
            .calls
            .iter()
            .filter(|&&(at, _, _)| at / STAT_BUCKET + 10 > p)
            .fold((0, 0), |(p, b), &(_, pass, block)| (p + pass, b + block));
        (pass as f64, block as f64, pass as f64)
    }

    /// (second, pass, block, complete) for the seconds `S - 59 ..= S` with traffic.
    fn last_minute(&self, now: u64) -> Vec<(u64, u64, u64, u64)> {
        let s = now / SECOND;
        let mut seconds: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for &(at, pass, block) in &self.calls {
            if at / SECOND + 60 > s {
                let e = seconds.entry(at / SECOND).or_default();
                e.0 += pass;
                e.1 += block;
            }
        }
        seconds
            .into_iter()
            .map(|(second, (pass, block))| (second, pass, block, pass))
            .collect()
    }
}

fn run_case(shape: &Shape, steps: &[Step]) -> Result<(), TestCaseError> {
    let resource = format!("window-model-{}", CASE.fetch_add(1, Ordering::Relaxed));
    let clock = MockClock::install();
    let start = clock::now_nanos();
    rules::load_flow_rules(vec![shape.rule(&resource)]).expect("a valid rule");
    let result = run_steps(&clock, &resource, shape, steps, start);
    rules::load_flow_rules(vec![]).expect("unload");
    result
}

fn run_steps(
    clock: &MockClock,
    resource: &str,
    shape: &Shape,
    steps: &[Step],
    start: u64,
) -> Result<(), TestCaseError> {
    let mut model = Model::new(shape);
    let mut budget = CASE_BUDGET;
    for (i, step) in steps.iter().enumerate() {
        let gap = step
            .gap_nanos
            .min(budget)
            .min(CLOCK_END.saturating_sub(clock::now_nanos()));
        budget -= gap;
        clock.advance(Duration::from_nanos(gap));
        let t = clock::now_nanos();
        let at = format!(
            "step {i} at t=+{} ns (absolute {t} ns, rule period {}, after a gap of {gap} ns = \
             {:.3} buckets), acquire({}), {shape:?}",
            t - start,
            t / model.bucket,
            gap as f64 / model.bucket as f64,
            step.batch
        );

        let got = EntryBuilder::new(resource).acquire(step.batch).enter();
        let (want, held) = model.call(t, step.batch);
        if let Err(block) = &got {
            prop_assert_eq!(block.kind(), BlockKind::Flow, "{}", at);
        }
        prop_assert_eq!(
            got.is_ok(),
            want,
            "{}: the model's window held {} of {} passes",
            at,
            held,
            model.limit
        );
        drop(got);

        let s = metrics::snapshot(resource).expect("resource has a node");
        prop_assert_eq!(
            (s.pass_qps, s.block_qps, s.complete_qps),
            model.snapshot(t),
            "{}: snapshot (pass, block, complete) over the last 10 buckets of 100 ms",
            at
        );
        let minute: Vec<(u64, u64, u64, u64)> = metrics::last_minute(resource)
            .expect("resource has a node")
            .iter()
            .map(|s| (s.second, s.pass, s.block, s.complete))
            .collect();
        prop_assert_eq!(
            minute,
            model.last_minute(t),
            "{}: last_minute (second, pass, block, complete)",
            at
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config {
        cases: 128,
        max_shrink_iters: 256,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn qps_window_matches_the_reference_model(
        (shape, steps) in shape().prop_flat_map(|s| {
            let steps = steps(&s);
            (Just(s), steps)
        })
    ) {
        run_case(&shape, &steps)?;
    }
}
