//! Hardening: rules and statistics keep working after long idle gaps.
//!
//! A window counter whose period were kept in a 32-bit tag and compared as such would, after
//! 2^31 idle periods (25 days of 1 ms buckets, 7 years of 100 ms buckets), take a stale counter
//! for a newer one: the rule would block everything or the statistics drop the new calls. The
//! statistics keep each bucket's period in full, and the QPS ring retags every bucket that
//! enters it, so its tags are only compared within the ring's span; these tests cross those
//! gaps.
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules and registry. Each test uses its own resource
//! names and unloads the rules it loaded.

use std::time::Duration;

use sentinel_runtime::breaker::CircuitState;
use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind, Entry};

const DAY: Duration = Duration::from_secs(24 * 3_600);
const SECOND: u64 = 1_000_000_000;

fn days(n: u64) -> Duration {
    DAY * u32::try_from(n).expect("a few thousand days")
}

/// Makes `calls` entries of `resource` held at once, then drops them: which ones passed.
fn attempts(resource: &str, calls: usize) -> Vec<bool> {
    let entries: Vec<Result<Entry, _>> = (0..calls).map(|_| entry(resource)).collect();
    for e in &entries {
        if let Err(block) = e {
            assert_eq!(block.kind(), BlockKind::Flow, "{block}");
        }
    }
    entries.iter().map(Result::is_ok).collect()
}

/// `passes` trues then falls up to `calls`.
fn first_pass(passes: usize, calls: usize) -> Vec<bool> {
    (0..calls).map(|i| i < passes).collect()
}

/// 1 ms buckets, idle 30 days (2.6e9 periods, past 2^31), then 10 days more.
#[test]
fn one_ms_buckets_admit_the_threshold_after_30_and_10_idle_days() {
    const R: &str = "hi-1ms-buckets";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![
        FlowRule::qps(R, 10.0).window(Duration::from_millis(10), 10)
    ])
    .unwrap();
    let elapsed = || Duration::from_nanos(clock::now_nanos() - t0);
    assert_eq!(
        attempts(R, 11),
        first_pass(10, 11),
        "at t=+{:?}: fresh rule",
        elapsed()
    );
    for idle in [30, 10] {
        clock.advance(days(idle));
        let got = attempts(R, 11);
        assert_eq!(
            got,
            first_pass(10, 11),
            "at t=+{:?} (after {idle} idle days): {} of 11 calls passed, want the first 10",
            elapsed(),
            got.iter().filter(|p| **p).count()
        );
    }
    rules::load_flow_rules(vec![]).unwrap();
}

/// A circuit breaker with 1 ms buckets left idle 40 days still counts errors and opens.
#[test]
fn a_breaker_idle_for_40_days_still_opens_on_errors() {
    const R: &str = "hi-breaker";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(R, 3)
        .min_requests(3)
        .window(Duration::from_millis(10), 10)
        .recovery(Duration::from_secs(1))])
    .unwrap();
    for _ in 0..2 {
        drop(entry(R).expect("a closed breaker admits"));
    }
    clock.advance(days(40));
    for i in 0..3 {
        let call = entry(R).unwrap_or_else(|e| {
            panic!(
                "at t=+{} ns: error call {i} blocked before the breaker had 3 errors: {e}",
                clock::now_nanos() - t0
            )
        });
        call.set_error();
        drop(call);
    }
    let s = metrics::snapshot(R).expect("resource has a node");
    let next = entry(R).map(drop);
    assert_eq!(
        s.circuit,
        Some(CircuitState::Open),
        "at t=+{} ns (after 40 idle days): 3 errors within the 10 ms window, min_requests 3: \
         {s:?}; next call: {next:?}",
        clock::now_nanos() - t0
    );
    assert_eq!(
        next.map_err(|e| e.kind()),
        Err(BlockKind::CircuitBreaker),
        "the open breaker blocks the next call"
    );
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

/// The default window (100 ms buckets) left idle 7 years (2.2e9 periods, past 2^31).
#[test]
fn a_default_qps_rule_idle_for_7_years_admits_its_threshold() {
    const R: &str = "hi-seven-years";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![FlowRule::qps(R, 5.0)]).unwrap();
    assert_eq!(attempts(R, 6), first_pass(5, 6), "fresh rule");
    clock.advance(days(7 * 365));
    let got = attempts(R, 6);
    assert_eq!(
        got,
        first_pass(5, 6),
        "at t=+{} ns (after 7 idle years): {} of 6 calls passed, want the first 5",
        clock::now_nanos() - t0,
        got.iter().filter(|p| **p).count()
    );
    rules::load_flow_rules(vec![]).unwrap();
}

/// The statistics of a call made after 10 and after 12 idle years (3.2e9 and 3.8e9 periods of
/// 100 ms): gaps whose period count lies within 2^30 below a multiple of 2^32 (10.2 to 13.6
/// years), which a comparison of 32-bit tags would take for a step back in time, adding the
/// call to the stale counter where neither the snapshot nor the last minute shows it.
#[test]
fn statistics_count_a_call_after_10_and_12_idle_years() {
    const R10: &str = "hi-ten-years";
    const R12: &str = "hi-twelve-years";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    drop(entry(R10).expect("no rule"));
    drop(entry(R12).expect("no rule"));
    for (resource, idle) in [(R10, days(10 * 365)), (R12, days(2 * 365))] {
        clock.advance(idle);
        drop(entry(resource).expect("no rule"));
        let now = clock::now_nanos();
        let s = metrics::snapshot(resource).expect("resource has a node");
        assert_eq!(
            (s.pass_qps, s.complete_qps),
            (1.0, 1.0),
            "`{resource}` at t=+{} ns ({:.2} years after its previous call): (pass_qps, \
             complete_qps) of one call: {s:?}",
            now - t0,
            (now - t0) as f64 / (365.0 * 86_400.0 * SECOND as f64)
        );
        let minute = metrics::last_minute(resource).expect("resource has a node");
        let counted: Vec<(u64, u64, u64)> = minute
            .iter()
            .map(|s| (s.second, s.pass, s.complete))
            .collect();
        assert_eq!(
            counted,
            vec![(now / SECOND, 1, 1)],
            "`{resource}` at t=+{} ns: last_minute as (second, pass, complete): the one call of \
             this second",
            now - t0
        );
    }
}
