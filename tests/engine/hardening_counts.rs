//! Hardening: counters neither overflow nor saturate.
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules and registry. Each test uses its own resource
//! names and unloads the rules it loaded.

use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind, Entry, EntryBuilder};

const THREADS: usize = 8;
/// How long a piece of work may take before the test calls it stuck.
const DEADLINE: Duration = Duration::from_secs(20);
const SECOND: u64 = 1_000_000_000;

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("resource has a node")
}

/// Runs `work` on its own thread and waits at most [`DEADLINE`] for it, so that callers
/// spinning forever fail the test instead of hanging the suite. A panic in `work` is passed on.
fn bounded<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        let _ = tx.send(work());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!(
            "{what} did not finish within {DEADLINE:?} (mock time frozen at {} ns): callers are \
             stuck",
            clock::now_nanos()
        ),
        Err(RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => resume_unwind(panic),
            Ok(()) => unreachable!("the worker ended without sending its result"),
        },
    }
}

/// `THREADS` threads released together each make `calls` entries of `batch` passes on
/// `resource`, dropping each entry at once. Returns (admitted, blocked) calls; every block must
/// be a flow block.
fn hammer(resource: &'static str, batch: u32, calls: u64) -> (u64, u64) {
    let what = format!("{THREADS} threads x {calls} calls of acquire({batch}) on `{resource}`");
    bounded(&what, move || {
        let passed = AtomicU64::new(0);
        let blocked = AtomicU64::new(0);
        let barrier = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..calls {
                        match EntryBuilder::new(resource).acquire(batch).enter() {
                            Ok(entry) => {
                                drop(entry);
                                passed.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                assert_eq!(e.kind(), BlockKind::Flow, "{e}");
                                blocked.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        (passed.into_inner(), blocked.into_inner())
    })
}

/// Batches of `MAX_THRESHOLD` passes against a `MAX_THRESHOLD` rule: a bucket never holds more
/// than the threshold, so its count cannot carry into its period tag (which after some 32k
/// calls would leave every caller spinning forever inside the QPS gate).
#[test]
fn max_threshold_batches_from_eight_threads_finish_and_never_overshoot() {
    const R: &str = "hc-overflow-batches";
    const BATCH: u32 = 2_147_483_647; // == MAX_THRESHOLD: one call fills the window
    const CALLS: u64 = 40_000;
    assert_eq!(f64::from(BATCH), rules::MAX_THRESHOLD);
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![FlowRule::qps(R, rules::MAX_THRESHOLD)]).unwrap();

    // The clock stays frozen: one window.
    let (passed, blocked) = hammer(R, BATCH, CALLS);
    // passes * BATCH <= MAX_THRESHOLD allows one call; the first call of a fresh window fits.
    assert_eq!(
        passed,
        1,
        "at t=+{} ns: {passed} calls of {BATCH} passes admitted in one window of a {} rule \
         ({blocked} blocked)",
        clock::now_nanos() - t0,
        rules::MAX_THRESHOLD
    );
    assert_eq!(passed + blocked, THREADS as u64 * CALLS);
    assert_eq!(
        stats(R).pass_qps,
        f64::from(BATCH),
        "at t=+{} ns: the statistics count the admitted batch",
        clock::now_nanos() - t0
    );

    // One second later the window has slid past: exactly one batch again.
    clock.advance(Duration::from_secs(1));
    let (passed, blocked) = hammer(R, BATCH, 1_000);
    assert_eq!(
        passed,
        1,
        "at t=+{} ns (a new window): {passed} calls of {BATCH} admitted ({blocked} blocked)",
        clock::now_nanos() - t0
    );
    rules::load_flow_rules(vec![]).unwrap();
}

/// A request for more than the threshold is blocked at once.
#[test]
fn a_batch_larger_than_the_threshold_is_blocked_at_once() {
    const R: &str = "hc-batch-too-big";
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 10.0)]).unwrap();
    let t = bounded("acquire(u32::MAX) on a qps = 10 rule", || {
        EntryBuilder::new(R).acquire(u32::MAX).enter().map(drop)
    });
    let err = t.expect_err("u32::MAX passes through a qps = 10 rule");
    assert_eq!(err.kind(), BlockKind::Flow, "{err}");
    // The budget is untouched: the full threshold still passes.
    let ok = EntryBuilder::new(R).acquire(10).enter();
    assert!(
        ok.is_ok(),
        "at t={} ns: a batch of 10 after the refused one: {ok:?}",
        clock::now_nanos()
    );
    drop(ok);
    rules::load_flow_rules(vec![]).unwrap();
}

/// 1000 calls of exactly 10 s each, all finishing in one 100 ms bucket: the response time sum
/// (10^10 us) does not saturate at u32::MAX us.
#[test]
fn average_response_time_of_a_thousand_ten_second_calls_is_ten_seconds() {
    const R: &str = "hc-avg-rt";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    let entries: Vec<Entry> = (0..1_000)
        .map(|i| entry(R).unwrap_or_else(|e| panic!("call {i} has no rule to block it: {e}")))
        .collect();
    clock.advance(Duration::from_secs(10));
    drop(entries);
    let s = stats(R);
    assert_eq!(
        s.complete_qps,
        1_000.0,
        "at t=+{} ns: {s:?}",
        clock::now_nanos() - t0
    );
    assert_eq!(
        s.avg_rt_ms,
        10_000.0,
        "at t=+{} ns: 1000 calls held 10 s each: {s:?}",
        clock::now_nanos() - t0
    );
    assert_eq!(s.concurrency, 0, "{s:?}");
}

/// One call of two hours: its response time (7.2e9 us) does not fit 32 bits of microseconds,
/// and is still reported, as the minimum and the average of its second.
#[test]
fn a_two_hour_call_reports_its_response_time_in_the_last_minute() {
    const R: &str = "hc-two-hours";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    let call = entry(R).expect("no rule to block it");
    clock.advance(Duration::from_secs(2 * 3_600));
    drop(call);
    let now = clock::now_nanos();
    let minute = metrics::last_minute(R).expect("resource has a node");
    let second = minute
        .iter()
        .find(|s| s.second == now / SECOND)
        .unwrap_or_else(|| {
            panic!(
                "at t=+{} ns: no entry for the exit's second {} in {minute:?}",
                now - t0,
                now / SECOND
            )
        });
    assert_eq!(
        (second.complete, second.min_rt_ms, second.avg_rt_ms),
        (1, 7_200_000.0, 7_200_000.0),
        "at t=+{} ns: (complete, min_rt_ms, avg_rt_ms) of the second of a 2 h call: {second:?}",
        now - t0
    );
}

/// Two batches of u32::MAX passes on a resource without rules: the pass count of one bucket
/// does not saturate at u32::MAX.
#[test]
fn two_batches_of_u32_max_passes_count_twice() {
    const R: &str = "hc-u32-max-passes";
    let _clock = MockClock::install();
    let t0 = clock::now_nanos();
    for i in 0..2 {
        let e = EntryBuilder::new(R)
            .acquire(u32::MAX)
            .enter()
            .unwrap_or_else(|e| panic!("batch {i} has no rule to block it: {e}"));
        drop(e);
    }
    let s = stats(R);
    assert_eq!(
        s.pass_qps,
        2.0 * f64::from(u32::MAX),
        "at t=+{} ns: two batches of u32::MAX admitted: {s:?}",
        clock::now_nanos() - t0
    );
    assert_eq!(s.complete_qps, 2.0 * f64::from(u32::MAX), "{s:?}");
}
