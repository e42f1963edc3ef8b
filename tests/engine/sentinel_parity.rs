//! Expectations of Alibaba Sentinel's and sentinel-golang's own test suites, ported to this
//! library's API with time from the MockClock. Each test names the test it ports: repository,
//! path and test name (for Sentinel Java, the path under
//! `sentinel-core/src/test/java/com/alibaba/csp/sentinel/` or the extension's own `src/test`).
//!
//! Where a Sentinel test reads its rule from JSON, so does the port: a rule file written for
//! Sentinel must do here what it does there ([`rules::files`](sentinel_runtime::rules::files)
//! lists every field whose value is converted to keep that meaning).
//!
//! # Intended differences
//!
//! These are kept on purpose; the ports assert our behaviour, and say so:
//!
//! * **Exact admission.** Sentinel checks the window and adds the pass later, so concurrent
//!   callers over-admit; ours reserves atomically. Where a Sentinel test tolerates a delta under
//!   threads, the port asserts the exact count.
//! * **GCRA per hotspot value** (`paramFlow` with `controlBehavior` 0): from idle
//!   `count + burstCount` at once, then `count` per `durationInSec` evenly spaced, where
//!   Sentinel refills a bucket once per duration. The ports whose calls all come at one instant,
//!   or a full duration apart, hold unchanged.
//! * **Breakers on our own API open at their threshold** ("at least"); Sentinel's open above it.
//!   A rule read from Sentinel's JSON is converted so that it opens where Sentinel's does.
//! * **Warm-up admits at least one call a second** (for a threshold of at least 1), where
//!   Sentinel's cold rate below one call a second (`count < coldFactor`) admits nothing, and so
//!   never warms up; and a second without passes always cools the curve.
//! * **A batch of 0 is taken as 1** (`EntryBuilder::acquire`); Sentinel passes it without a
//!   check (`ThrottlingControllerTest.testThrottlingControllerZeroThreshold`).
//! * **Nanoseconds.** Throttling and the param rate limiter space calls exactly; Sentinel rounds
//!   the spacing to whole milliseconds.
//!
//! Every test installs the MockClock first, which also serialises the tests of this binary.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use sentinel_runtime::breaker::CircuitState;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, RuleSet};
use sentinel_runtime::{entry, metrics, BlockKind, EntryBuilder};

const SECOND: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn load_json(json: &str) {
    rules::load(RuleSet::from_json(json).expect("Sentinel's JSON reads")).expect("rules load");
}

fn clear() {
    rules::load(RuleSet::new()).expect("an empty set loads");
}

/// Calls `resource` `offered` times at the start of each of `seconds` seconds: the passes of
/// each second.
fn per_second(resource: &str, clock: &MockClock, offered: u32, seconds: usize) -> Vec<u64> {
    (0..seconds)
        .map(|_| {
            let n = (0..offered).filter(|_| entry(resource).is_ok()).count() as u64;
            clock.advance(SECOND);
            n
        })
        .collect()
}

/// Sentinel Java's `WarmUpController` (alibaba/Sentinel,
/// `sentinel-core/src/main/java/com/alibaba/csp/sentinel/slots/block/flow/controller/WarmUpController.java`),
/// transcribed: `construct`, `syncToken`, `coolDownTokens` and `canPass` with `long` tokens and
/// `int` arithmetic. The calls it admits in each second under full load, from its first call.
fn sentinel_warm_up(count: f64, period_s: i64, cold_factor: i64, seconds: usize) -> Vec<u64> {
    let warning_token = (period_s as f64 * count) as i64 / (cold_factor - 1);
    let max_token =
        warning_token + (2.0 * period_s as f64 * count / (1.0 + cold_factor as f64)) as i64;
    let slope = (cold_factor as f64 - 1.0) / count / (max_token - warning_token) as f64;
    let (mut stored, mut last_filled, mut previous) = (0_i64, 0_i64, 0_i64);
    (0..seconds)
        .map(|s| {
            let current = 1_000_000 + s as i64 * 1_000;
            if current > last_filled {
                let refill = |old: i64| {
                    (old as f64 + (current - last_filled) as f64 * count / 1000.0) as i64
                };
                let old = stored;
                let new = if old < warning_token
                    || (old > warning_token && previous < count as i64 / cold_factor)
                {
                    refill(old)
                } else {
                    old
                };
                stored = (new.min(max_token) - previous).max(0);
                last_filled = current;
            }
            let n = if stored >= warning_token {
                let above = (stored - warning_token) as f64;
                (1.0 / (above * slope + 1.0 / count)).next_up().floor()
            } else {
                count.floor()
            };
            let n = if n.is_nan() { 0 } else { n as u64 };
            previous = n as i64;
            n
        })
        .collect()
}

// ----- warm-up ------------------------------------------------------------------------------

/// Ports alibaba/Sentinel `slots/block/flow/controller/WarmUpControllerTest.java`,
/// `testWarmUp`: `WarmUpController(10, 10, 3)` cold blocks a call after 8 passes but admits one
/// after 1; warm (after ten seconds at 10 a second) admits one after 8 and blocks one after 10.
#[test]
fn warm_up_controller_test_test_warm_up() {
    let clock = MockClock::install();
    load_json(r#"{"flow": [{"resource": "p-warm", "count": 10, "controlBehavior": 1}]}"#);
    let cold = per_second("p-warm", &clock, 20, 1)[0];
    assert!(
        (2..9).contains(&cold),
        "cold: {cold} passes in the first second"
    );
    let warming = per_second("p-warm", &clock, 20, 20);
    assert_eq!(
        warming[19], 10,
        "warm: after 8 passes one more passes, after 10 none: {warming:?}"
    );
    clear();
}

/// Ports the same `WarmUpController` under full load, second by second: `count` 10,
/// `warmUpPeriodSec` 10, cold factor 3 admits 3,3,3,3,3,4,4,4,5,5,6,7 and 10 from second 12 on
/// (the controller's own formula, as `testWarmUp` drives it).
#[test]
fn warm_up_controller_reaches_the_threshold_second_by_second() {
    let clock = MockClock::install();
    load_json(r#"{"flow": [{"resource": "p-warm-steps", "count": 10, "controlBehavior": 1}]}"#);
    let seen = per_second("p-warm-steps", &clock, 20, 16);
    assert_eq!(
        seen,
        [3, 3, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 10, 10, 10, 10],
        "passes per second, 20 offered at each second's start"
    );
    clear();
}

/// Ports `WarmUpControllerTest.testWarmUp`'s premise, that steady traffic warms the rule, under
/// the two loads seen to stay cold for good: 20 calls at the start of every second, and one
/// call every 10 ms, for 600 s each. The last minute admits the threshold, 10 a second.
#[test]
fn a_small_warm_up_rule_under_steady_load_warms_up_for_good() {
    let clock = MockClock::install();
    for (i, spread) in [false, true].into_iter().enumerate() {
        let resource = format!("p-warm-steady-{i}");
        rules::load_flow_rules(vec![
            FlowRule::qps(&resource, 10.0).warm_up(10 * SECOND, 3.0)
        ])
        .unwrap();
        let mut last_minute = 0;
        for second in 0..600 {
            let passed = if spread {
                (0..100)
                    .filter(|_| {
                        let ok = entry(&resource).is_ok();
                        clock.advance(10 * MS);
                        ok
                    })
                    .count()
            } else {
                let n = (0..20).filter(|_| entry(&resource).is_ok()).count();
                clock.advance(SECOND);
                n
            };
            if second >= 540 {
                last_minute += passed;
            }
        }
        assert_eq!(
            last_minute,
            600,
            "qps 10, warm-up 10 s, cold factor 3, {}: passes in the last of 10 minutes",
            if spread {
                "a call every 10 ms"
            } else {
                "20 calls each second"
            }
        );
    }
    clear();
}

/// Ports `WarmUpController` (above) as a property over a table: every threshold 1..=60 and
/// cold factor 2..=5 (warm-up 3 s) admits second by second what Sentinel's controller admits,
/// wherever Sentinel admits anything (`count >= coldFactor`), and every one of them admits the
/// threshold from second 6 on. (The runtime's own unit tests run thresholds up to 200 and
/// periods up to 20 s on the curve.)
#[test]
fn warm_up_admits_what_sentinel_admits_for_a_table_of_thresholds() {
    let clock = MockClock::install();
    for cold in 2..=5_u32 {
        for threshold in 1..=60_u32 {
            let resource = format!("p-warm-table-{threshold}-{cold}");
            let t = f64::from(threshold);
            rules::load_flow_rules(vec![
                FlowRule::qps(&resource, t).warm_up(3 * SECOND, f64::from(cold))
            ])
            .unwrap();
            let ours = per_second(&resource, &clock, threshold + 1, 10);
            let case = format!("qps {threshold}, warm-up 3 s, cold factor {cold}");
            if threshold >= cold {
                let theirs = sentinel_warm_up(t, 3, i64::from(cold), 10);
                assert_eq!(ours, theirs, "{case}: ours, then Sentinel's");
            }
            assert!(
                ours[6..].iter().all(|&n| n == u64::from(threshold)),
                "{case}: warm from second 6: {ours:?}"
            );
        }
    }
    clear();
}

// ----- throttling (rate limiter) ------------------------------------------------------------

/// Ports alibaba/Sentinel `slots/block/flow/controller/ThrottlingControllerTest.java`,
/// `testThrottlingControllerNormal`: `ThrottlingController(500, 10)`, six calls in a row all
/// pass, and take more than 400 ms (a sync caller's wait moves the mock clock).
#[test]
fn throttling_controller_test_normal() {
    let clock = MockClock::install();
    load_json(
        r#"{"flow": [{"resource": "p-pace", "count": 10, "controlBehavior": 2,
                      "maxQueueingTimeMs": 500}]}"#,
    );
    let start = clock.elapsed();
    for i in 0..6 {
        assert!(entry("p-pace").is_ok(), "call {i}");
    }
    let took = clock.elapsed() - start;
    assert!(took > 400 * MS, "six calls at 10 a second took {took:?}");
    assert_eq!(took, 500 * MS, "exactly five spacings");
    clear();
}

/// One poll of each of `n` async entries at one instant: (passed now, waiting for a turn,
/// blocked). The pending ones are dropped afterwards.
fn at_one_instant(n: usize, entry: impl Fn() -> EntryBuilder<'static>) -> (usize, usize, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut cx = Context::from_waker(Waker::noop());
        let mut futures: Vec<_> = (0..n).map(|_| Box::pin(entry().enter_async())).collect();
        let (mut now, mut waiting, mut blocked) = (0, 0, 0);
        for f in &mut futures {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(Ok(_)) => now += 1,
                Poll::Ready(Err(e)) => {
                    assert_eq!(e.kind(), BlockKind::Flow);
                    blocked += 1;
                }
                Poll::Pending => waiting += 1,
            }
        }
        (now, waiting, blocked)
    })
}

/// Ports `ThrottlingControllerTest.testThrottlingControllerQueueTimeout`: ten callers at once
/// through `ThrottlingController(500, 10)`, and some are blocked. Exactly: turns at 0, 100, ...,
/// 500 ms fit within the 500 ms queue, the other four are blocked.
#[test]
fn throttling_controller_test_queue_timeout() {
    let _clock = MockClock::install();
    load_json(
        r#"{"flow": [{"resource": "p-pace-queue", "count": 10, "controlBehavior": 2,
                      "maxQueueingTimeMs": 500}]}"#,
    );
    let (now, waiting, blocked) = at_one_instant(10, || EntryBuilder::new("p-pace-queue"));
    assert_eq!((now, waiting, blocked), (1, 5, 4));
    clear();
}

/// Ports alibaba/sentinel-golang `core/flow/tc_throttling_test.go`,
/// `TestThrottlingChecker_DoCheckNoQueueingSingleThread`: threshold 50 per 10 s, no queueing.
/// A batch of 51 is blocked; a batch of 50 passes; the next ten single calls are blocked; after
/// 10 x 200 ms + 10 ms one passes and the next is blocked.
#[test]
fn throttling_checker_no_queueing_single_thread() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("p-golang-pace", 50.0)
        .window(10 * SECOND, 10)
        .throttle(Duration::ZERO)])
    .unwrap();
    let batch = |n| EntryBuilder::new("p-golang-pace").acquire(n).enter();
    let blocked = batch(51).expect_err("a batch of 51 through a threshold of 50");
    assert_eq!(blocked.kind(), BlockKind::Flow);
    assert!(batch(50).is_ok(), "the first request passes");
    for i in 0..10 {
        assert!(batch(1).is_err(), "call {i} right after the batch");
    }
    clock.advance(2_010 * MS);
    assert!(batch(1).is_ok());
    assert!(batch(1).is_err());
    clear();
}

/// Ports `tc_throttling_test.go`, `TestThrottlingChecker_DoCheckSingleThread`: threshold 50 per
/// 10 s, 2 s queue. A batch of 51 is blocked; a batch of 50 passes; of 20 calls at once after
/// it, 2000 / 200 = 10 wait and the other 10 are blocked.
#[test]
fn throttling_checker_single_thread() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("p-golang-queue", 50.0)
        .window(10 * SECOND, 10)
        .throttle(2 * SECOND)])
    .unwrap();
    let blocked = EntryBuilder::new("p-golang-queue")
        .acquire(51)
        .enter()
        .expect_err("a batch of 51 through a threshold of 50, with a 2 s queue");
    assert_eq!(blocked.kind(), BlockKind::Flow);
    assert!(EntryBuilder::new("p-golang-queue")
        .acquire(50)
        .enter()
        .is_ok());
    let (now, waiting, blocked) = at_one_instant(20, || EntryBuilder::new("p-golang-queue"));
    assert_eq!((now, waiting, blocked), (0, 10, 10));
    clear();
}

/// Ports `tc_throttling_test.go`, `TestThrottlingChecker_DoCheckParallelPass`: many callers
/// released together through threshold 50 per 10 s without queueing; exactly one passes.
#[test]
fn throttling_checker_parallel_pass() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("p-golang-parallel", 50.0)
        .window(10 * SECOND, 10)
        .throttle(Duration::ZERO)])
    .unwrap();
    let threads = 16;
    let barrier = Barrier::new(threads);
    let passed = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..32 {
                    if entry("p-golang-parallel").is_ok() {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(
        passed.load(Ordering::Relaxed),
        1,
        "{threads} x 32 calls at one instant"
    );
    clear();
}

// ----- default controller -------------------------------------------------------------------

/// Ports alibaba/Sentinel `slots/block/flow/controller/DefaultControllerTest.java`,
/// `testCanPassForQps`: threshold 10, a call after 9 passes passes, one after 10 is blocked.
#[test]
fn default_controller_test_can_pass_for_qps() {
    let _clock = MockClock::install();
    load_json(r#"{"flow": [{"resource": "p-default", "count": 10, "grade": 1}]}"#);
    for i in 0..10 {
        assert!(entry("p-default").is_ok(), "call {i}");
    }
    assert_eq!(entry("p-default").unwrap_err().kind(), BlockKind::Flow);
    clear();
}

// ----- circuit breakers ---------------------------------------------------------------------

fn call(resource: &str, fail: bool) -> bool {
    match entry(resource) {
        Ok(e) => {
            if fail {
                e.set_error();
            }
            true
        }
        Err(_) => false,
    }
}

/// Sentinel's `entryAndSleepFor`: an entry that lasts `ms` on the mock clock; whether it
/// passed.
fn call_for(resource: &str, clock: &MockClock, ms: u32) -> bool {
    match entry(resource) {
        Ok(e) => {
            clock.advance(ms * MS);
            drop(e);
            true
        }
        Err(_) => false,
    }
}

/// Ports alibaba/Sentinel `slots/block/degrade/circuitbreaker/ExceptionCircuitBreakerTest.java`,
/// `testRecordErrorOrSuccess`: error ratio 0.2 over 20 s, 10 s open, at least 1 call.
#[test]
fn exception_circuit_breaker_test_record_error_or_success() {
    let clock = MockClock::install();
    load_json(
        r#"{"degrade": [{"resource": "p-cb-errors", "count": 0.2, "grade": 1,
                         "statIntervalMs": 20000, "timeWindow": 10, "minRequestAmount": 1}]}"#,
    );
    let r = "p-cb-errors";
    assert!(call_for(r, &clock, 10));
    assert!(call(r, true), "-> open");
    assert!(!call(r, true));
    assert!(!call_for(r, &clock, 100));
    clock.advance(5 * SECOND);
    assert!(!call_for(r, &clock, 100));
    clock.advance(5 * SECOND);
    assert!(call(r, true), "-> half-open -> open");
    assert!(!call_for(r, &clock, 100));
    assert!(!call_for(r, &clock, 100));
    clock.advance(10 * SECOND);
    assert!(call_for(r, &clock, 100), "-> half-open -> closed");
    for i in 0..6 {
        assert!(call_for(r, &clock, 100), "closed, call {i}");
    }
    assert!(call(r, true), "1 error in 8 calls: below 0.2");
    assert!(call_for(r, &clock, 100));
    clear();
}

/// Ports `ExceptionCircuitBreaker.handleStateChangeWhenThresholdExceeded` (alibaba/Sentinel,
/// `sentinel-core/src/main/java/com/alibaba/csp/sentinel/slots/block/degrade/circuitbreaker/ExceptionCircuitBreaker.java`,
/// `curCount > threshold`, which `testRecordErrorOrSuccess` relies on) for an error-count rule
/// from `DegradeRule.json`: `"count": 5` opens at the 6th error, not the 5th.
#[test]
fn an_error_count_rule_from_sentinel_json_opens_above_its_count() {
    let _clock = MockClock::install();
    load_json(
        r#"{"degrade": [{"resource": "p-cb-count", "count": 5, "grade": 2, "timeWindow": 10,
                         "minRequestAmount": 1, "statIntervalMs": 60000}]}"#,
    );
    for i in 0..5 {
        assert!(call("p-cb-count", true), "error {i}");
    }
    assert!(call("p-cb-count", false), "5 errors: not more than count 5");
    assert!(call("p-cb-count", true), "the 6th error passes, then opens");
    assert!(!call("p-cb-count", false), "open after 6 errors");
    clear();
}

/// The same for an error-ratio rule: `"count": 0.5` stays closed at exactly half the calls
/// failed and opens above it (`curCount > threshold` on `errCount * 1.0d / totalCount`).
#[test]
fn an_error_ratio_rule_from_sentinel_json_opens_above_its_ratio() {
    let _clock = MockClock::install();
    load_json(
        r#"{"degrade": [{"resource": "p-cb-ratio", "count": 0.5, "grade": 1, "timeWindow": 10,
                         "minRequestAmount": 2, "statIntervalMs": 60000}]}"#,
    );
    assert!(call("p-cb-ratio", false));
    assert!(call("p-cb-ratio", true));
    assert!(call("p-cb-ratio", false), "1 of 2 failed: not above 0.5");
    assert!(call("p-cb-ratio", true));
    assert!(
        call("p-cb-ratio", true),
        "2 of 4 failed, then 3 of 5: opens"
    );
    assert!(!call("p-cb-ratio", false), "open at 3 of 5");
    clear();
}

/// Ports alibaba/Sentinel
/// `slots/block/degrade/circuitbreaker/ResponseTimeCircuitBreakerTest.java`,
/// `testMaxSlowRatioThreshold`: max RT 10 ms, slow ratio 1 (Sentinel opens at exactly 1),
/// at least 3 calls over 5 s, 5 s open; three 20 ms calls open it.
#[test]
fn response_time_circuit_breaker_test_max_slow_ratio_threshold() {
    let clock = MockClock::install();
    load_json(
        r#"{"degrade": [{"resource": "p-cb-slow", "count": 10, "grade": 0, "minRequestAmount": 3,
                         "slowRatioThreshold": 1, "statIntervalMs": 5000, "timeWindow": 5}]}"#,
    );
    let r = "p-cb-slow";
    for i in 0..3 {
        assert!(call_for(r, &clock, 20), "call {i}");
    }
    assert!(!call_for(r, &clock, 20), "3 of 3 slower than 10 ms");
    clock.advance(SECOND);
    assert!(!call_for(r, &clock, 20));
    clock.advance(4 * SECOND);
    assert!(call_for(r, &clock, 20), "5 s later: a probe");
    clear();
}

fn circuit(resource: &str) -> Option<CircuitState> {
    metrics::snapshot(resource).and_then(|s| s.circuit)
}

/// Ports alibaba/sentinel-golang `core/circuitbreaker/circuit_breaker_test.go`,
/// `TestErrorCountCircuitBreaker_TryPass/TryPass_ProbeNum` and
/// `TestErrorCount_OnRequestComplete/OnRequestComplete_ProbeNum_Success` and
/// `.../OnRequestComplete_ProbeNum_Failed`: an error-count breaker (threshold 1, at least 10
/// calls over 10 s, 3 s open). With 10 probes, each passes and the breaker stays half-open
/// until the 10th succeeds, then closes; with 2 probes, one success leaves it half-open and a
/// failed probe opens it. (sentinel-golang, like our own API, opens at the threshold.)
#[test]
fn error_count_circuit_breaker_probe_num() {
    let clock = MockClock::install();
    let open = |r: &str| {
        for i in 0..10 {
            assert!(call(r, i == 9), "call {i}");
        }
        assert_eq!(circuit(r), Some(CircuitState::Open), "1 error in 10 calls");
        clock.advance(3 * SECOND);
    };
    let rule = |probes| {
        CircuitBreakerRule::error_count("p-golang-probes", 1)
            .min_requests(10)
            .window(10 * SECOND, 10)
            .recovery(3 * SECOND)
            .probes(probes)
    };
    rules::load_circuit_breaker_rules(vec![rule(10)]).unwrap();
    open("p-golang-probes");
    for i in 0..10 {
        assert_eq!(
            circuit("p-golang-probes"),
            Some(if i == 0 {
                CircuitState::Open
            } else {
                CircuitState::HalfOpen
            }),
            "before probe {i}"
        );
        assert!(call("p-golang-probes", false), "probe {i} passes");
    }
    assert_eq!(circuit("p-golang-probes"), Some(CircuitState::Closed));

    rules::load_circuit_breaker_rules(vec![rule(2)]).unwrap();
    open("p-golang-probes");
    assert!(call("p-golang-probes", false));
    assert_eq!(circuit("p-golang-probes"), Some(CircuitState::HalfOpen));
    assert!(call("p-golang-probes", true));
    assert_eq!(circuit("p-golang-probes"), Some(CircuitState::Open));
    clear();
}

/// Ports the rules of alibaba/Sentinel
/// `sentinel-demo/sentinel-demo-dynamic-file-rule/src/main/resources/DegradeRule.json`, read
/// as they are (`passCount` ignored): RT rules of 20 and 15 ms, slow ratio 1 (Sentinel's
/// default), 10 s open.
#[test]
fn the_demo_degrade_rule_json_reads_as_it_is() {
    let _clock = MockClock::install();
    let set = RuleSet::from_json(
        r#"{"degrade": [
  { "resource": "abc0", "count": 20.0, "grade": 0, "passCount": 0, "timeWindow": 10 },
  { "resource": "abc1", "count": 15.0, "grade": 0, "passCount": 0, "timeWindow": 10 }
]}"#,
    )
    .unwrap();
    use CircuitBreakerRule as Cb;
    assert_eq!(
        set.circuit_breaker,
        vec![
            Cb::slow_request_ratio("abc0", 20 * MS, 1.0)
                .recovery(10 * SECOND)
                .window(SECOND, 1),
            Cb::slow_request_ratio("abc1", 15 * MS, 1.0)
                .recovery(10 * SECOND)
                .window(SECOND, 1),
        ]
    );
}

// ----- param flow (hotspot) -----------------------------------------------------------------

fn with_value(resource: &'static str) -> EntryBuilder<'static> {
    EntryBuilder::new(resource).param(&"valueA")
}

/// Ports alibaba/Sentinel `sentinel-extension/sentinel-parameter-flow-control`,
/// `src/test/java/com/alibaba/csp/sentinel/slots/block/flow/param/ParamFlowDefaultCheckerTest.java`,
/// `testParamFlowDefaultCheckSingleQps`: count 5; five calls of one value pass, the sixth is
/// blocked; 3 s later five pass again and the sixth is blocked.
#[test]
fn param_flow_default_checker_test_single_qps() {
    let clock = MockClock::install();
    load_json(r#"{"paramFlow": [{"resource": "p-param", "paramIdx": 0, "count": 5}]}"#);
    for round in 0..2 {
        for i in 0..5 {
            assert!(
                with_value("p-param").enter().is_ok(),
                "round {round}, call {i}"
            );
        }
        let blocked = with_value("p-param").enter().unwrap_err();
        assert_eq!(blocked.kind(), BlockKind::HotParam, "round {round}");
        clock.advance(3 * SECOND);
    }
    clear();
}

/// Ports `ParamFlowThrottleRateLimitingCheckerTest.java` (same folder),
/// `testSingleValueThrottleCheckQps`: count 5 with the rate limiter, calls of one value for
/// 990 ms (here one each millisecond): exactly 5 pass; 3 s later, 5 again.
#[test]
fn param_flow_throttle_rate_limiting_checker_test_single_value_throttle_check_qps() {
    let clock = MockClock::install();
    load_json(
        r#"{"paramFlow": [{"resource": "p-param-pace", "paramIdx": 0, "count": 5,
                           "controlBehavior": 2}]}"#,
    );
    for round in 0..2 {
        let mut passed = 0;
        for _ in 0..990 {
            if with_value("p-param-pace").enter().is_ok() {
                passed += 1;
            }
            clock.advance(MS);
        }
        assert_eq!(passed, 5, "round {round}: passes in 990 ms at 5 a second");
        clock.advance(3 * SECOND);
    }
    clear();
}

/// Ports `ParamFlowThrottleRateLimitingCheckerTest.testSingleValueThrottleCheckQpsMultipleThreads`
/// (its first half): 40 threads call with one value at once through count 5 with the rate
/// limiter; exactly one passes.
#[test]
fn param_flow_throttle_rate_limiting_checker_test_multiple_threads() {
    let _clock = MockClock::install();
    load_json(
        r#"{"paramFlow": [{"resource": "p-param-threads", "paramIdx": 0, "count": 5,
                           "controlBehavior": 2}]}"#,
    );
    let threads = 40;
    let barrier = Barrier::new(threads);
    let passed = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                if with_value("p-param-threads").enter().is_ok() {
                    passed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::Relaxed), 1);
    clear();
}

/// The same rate limiter with a queue: of 40 calls of one value at one instant through count 5
/// and `maxQueueingTimeMs` 1000, the first passes and the ones whose turn comes *less than*
/// 1000 ms later wait (200, 400, 600 and 800 ms): 4; the rest are blocked
/// (`expectedTime - currentTime < rule.getMaxQueueingTimeMs()` in `passThrottleLocalCheck`).
#[test]
fn param_flow_rate_limiter_queues_less_than_max_queueing_time() {
    let _clock = MockClock::install();
    load_json(
        r#"{"paramFlow": [{"resource": "p-param-queue", "paramIdx": 0, "count": 5,
                           "controlBehavior": 2, "maxQueueingTimeMs": 1000}]}"#,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (now, waiting, blocked) = runtime.block_on(async {
        let mut cx = Context::from_waker(Waker::noop());
        let mut futures: Vec<_> = (0..40)
            .map(|_| Box::pin(with_value("p-param-queue").enter_async()))
            .collect();
        let (mut now, mut waiting, mut blocked) = (0, 0, 0);
        for f in &mut futures {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(Ok(_)) => now += 1,
                Poll::Ready(Err(e)) => {
                    assert_eq!(e.kind(), BlockKind::HotParam);
                    blocked += 1;
                }
                Poll::Pending => waiting += 1,
            }
        }
        (now, waiting, blocked)
    });
    assert_eq!((now, waiting, blocked), (1, 4, 35));
    clear();
}

// ----- Sentinel-written JSON ----------------------------------------------------------------

/// Ports the rule of alibaba/Sentinel `sentinel-extension/sentinel-datasource-redis`,
/// `src/test/java/com/alibaba/csp/sentinel/datasource/redis/StandaloneRedisDataSourceTest.java`
/// (also `SentinelModeRedisDataSourceTest`, `ClusterModeRedisDataSourceTest` and
/// `sentinel-datasource-consul`'s `ConsulDataSourceTest`): `"count":"0.0"` and
/// `"controller":null` load, and the rule blocks every call (`testInitAndParseFlowRuleSuccess`
/// reads back count 0).
#[test]
fn redis_data_source_test_flow_rule_json_loads() {
    let _clock = MockClock::install();
    load_json(
        r#"{"flow": [{"resource":"test", "limitApp":"default", "grade":1, "count":"0.0",
                      "strategy":0, "refResource":null, "controlBehavior":0,
                      "warmUpPeriodSec":10, "maxQueueingTimeMs":500, "controller":null}]}"#,
    );
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("test", 0.0)]);
    assert_eq!(entry("test").unwrap_err().kind(), BlockKind::Flow);
    assert!(metrics::snapshot("test").is_some());
    clear();
}

/// Our own names stay strict: a number given as a string and Sentinel's `controller` are
/// refused by name there.
#[test]
fn our_own_format_stays_strict() {
    let _clock = MockClock::install();
    for (json, field) in [
        (
            r#"{"flow": [{"resource": "a", "threshold": "10"}]}"#,
            "threshold",
        ),
        (
            r#"{"flow": [{"resource": "a", "threshold": 10, "controller": null}]}"#,
            "controller",
        ),
    ] {
        let err = RuleSet::from_json(json).unwrap_err();
        assert_eq!(
            err.entries()[0].field.as_deref(),
            Some(field),
            "{json}: {err}"
        );
    }
}
