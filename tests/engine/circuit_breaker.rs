//! Circuit breaking through the public API and the attribute, with time from the MockClock.
//!
//! Every test installs the MockClock first, which also serialises the tests of this binary.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Barrier, Mutex, Once};
use std::task::{Context, Waker};
use std::thread;
use std::time::Duration;

use sentinel_runtime::breaker::{on_state_change, CircuitState, StateChange};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule};
use sentinel_runtime::{entry, metrics, sentinel, BlockError, BlockKind};

use CircuitState::{Closed, HalfOpen, Open};

static CHANGES: Mutex<Vec<StateChange>> = Mutex::new(Vec::new());

/// Transitions seen by the listener for `resource`, in order.
fn transitions(resource: &str) -> Vec<(CircuitState, CircuitState)> {
    static LISTEN: Once = Once::new();
    LISTEN.call_once(|| on_state_change(|c| CHANGES.lock().unwrap().push(c.clone())));
    CHANGES
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.resource == resource)
        .map(|c| (c.from, c.to))
        .collect()
}

fn state(resource: &str) -> Option<CircuitState> {
    metrics::snapshot(resource).and_then(|s| s.circuit)
}

/// One call through a manual entry, failing or not.
fn call(resource: &str, fail: bool) -> Result<(), BlockError> {
    let e = entry(resource)?;
    if fail {
        e.set_error();
    }
    Ok(())
}

fn load(rules: Vec<CircuitBreakerRule>) {
    rules::load_circuit_breaker_rules(rules).expect("valid rules");
}

const RECOVERY: Duration = Duration::from_secs(5);

#[test]
fn error_ratio_opens_exactly_at_the_threshold_and_never_below_min_requests() {
    let clock = MockClock::install();
    transitions("cb-ratio");
    load(vec![CircuitBreakerRule::error_ratio("cb-ratio", 0.5)
        .min_requests(6)
        .recovery(RECOVERY)]);
    for _ in 0..5 {
        call("cb-ratio", true).unwrap();
    }
    assert_eq!(
        state("cb-ratio"),
        Some(Closed),
        "5 failures, but 5 < min_requests = 6"
    );
    call("cb-ratio", false).unwrap(); // 5 of 6 failed
    assert_eq!(state("cb-ratio"), Some(Open), "t={:?}", clock.elapsed());
    let blocked = entry("cb-ratio").unwrap_err();
    assert_eq!(blocked.kind(), BlockKind::CircuitBreaker);
    assert_eq!(
        blocked.to_string(),
        "resource `cb-ratio` blocked by circuit breaker (open)"
    );
    load(vec![]);
}

#[test]
fn error_ratio_opens_exactly_at_the_ratio_and_stays_closed_below_it() {
    let _clock = MockClock::install();
    load(vec![CircuitBreakerRule::error_ratio("cb-below", 0.5)
        .min_requests(4)
        .recovery(RECOVERY)]);
    for fail in [true, false, false] {
        call("cb-below", fail).unwrap(); // fewer than 4 calls: no decision
    }
    assert_eq!(state("cb-below"), Some(Closed));
    call("cb-below", true).unwrap(); // 2 of 4 = 0.5: reached exactly
    assert_eq!(state("cb-below"), Some(Open), "2 of 4 reached 0.5");
    load(vec![CircuitBreakerRule::error_ratio("cb-below2", 0.5)
        .min_requests(4)
        .recovery(RECOVERY)]);
    for fail in [true, false, false, false, true, false] {
        call("cb-below2", fail).unwrap(); // 1/4, 2/5, 2/6: always below 0.5
    }
    assert_eq!(state("cb-below2"), Some(Closed));
    load(vec![]);
}

#[test]
fn error_count_opens_at_the_count_within_the_window_only() {
    let clock = MockClock::install();
    load(vec![CircuitBreakerRule::error_count("cb-count", 3)
        .min_requests(1)
        .window(Duration::from_secs(1), 10)
        .recovery(RECOVERY)]);
    call("cb-count", true).unwrap();
    call("cb-count", true).unwrap();
    clock.advance(Duration::from_millis(1_100)); // both errors leave the 1 s window
    call("cb-count", true).unwrap();
    call("cb-count", true).unwrap();
    assert_eq!(
        state("cb-count"),
        Some(Closed),
        "only 2 errors in the window"
    );
    call("cb-count", true).unwrap();
    assert_eq!(state("cb-count"), Some(Open));
    load(vec![]);
}

#[test]
fn slow_ratio_counts_calls_slower_than_max_rt() {
    let clock = MockClock::install();
    load(vec![CircuitBreakerRule::slow_request_ratio(
        "cb-slow",
        Duration::from_millis(100),
        0.5,
    )
    .min_requests(4)
    .window(Duration::from_secs(10), 10)
    .recovery(RECOVERY)]);
    let timed = |ms: u64| {
        let e = entry("cb-slow").unwrap();
        clock.advance(Duration::from_millis(ms));
        drop(e);
    };
    timed(150);
    timed(20);
    timed(100); // exactly max_rt is not slow
    assert_eq!(state("cb-slow"), Some(Closed));
    timed(30); // 1 slow of 4
    assert_eq!(state("cb-slow"), Some(Closed));
    timed(101); // 2 of 5
    assert_eq!(state("cb-slow"), Some(Closed));
    timed(900); // 3 of 6 = 0.5
    assert_eq!(state("cb-slow"), Some(Open));
    load(vec![]);
}

#[test]
fn open_blocks_until_recovery_then_probes_decide_and_listeners_see_every_transition() {
    let clock = MockClock::install();
    // The listener is registered by the first `transitions` call: before any transition here,
    // whichever test runs first.
    transitions("cb-cycle");
    load(vec![CircuitBreakerRule::error_count("cb-cycle", 1)
        .min_requests(1)
        .recovery(RECOVERY)
        .probes(2)]);
    call("cb-cycle", true).unwrap();
    assert_eq!(state("cb-cycle"), Some(Open));
    clock.advance(RECOVERY - Duration::from_millis(1));
    assert!(
        entry("cb-cycle").is_err(),
        "still open 1 ms before recovery"
    );
    clock.advance(Duration::from_millis(1));

    // Half-open: exactly two probes; one failure reopens.
    let p1 = entry("cb-cycle").expect("probe 1");
    let p2 = entry("cb-cycle").expect("probe 2");
    assert_eq!(state("cb-cycle"), Some(HalfOpen));
    assert!(entry("cb-cycle").is_err(), "a third call is not a probe");
    drop(p1);
    p2.set_error();
    drop(p2);
    assert_eq!(state("cb-cycle"), Some(Open));

    // Recovery again; both probes succeed: closed.
    clock.advance(RECOVERY);
    drop(entry("cb-cycle").unwrap());
    assert_eq!(state("cb-cycle"), Some(HalfOpen));
    drop(entry("cb-cycle").unwrap());
    assert_eq!(state("cb-cycle"), Some(Closed));
    assert_eq!(
        transitions("cb-cycle"),
        vec![
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed)
        ]
    );
    let figures: Vec<f64> = CHANGES
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.resource == "cb-cycle")
        .map(|c| c.figure)
        .collect();
    assert_eq!(figures[0], 1.0, "opened by an error count of 1");
    assert_eq!(figures[1], 5_000.0, "open for 5000 ms");
    assert_eq!(figures[4], 2.0, "closed by 2 successful probes");
    load(vec![]);
}

#[test]
fn exactly_the_configured_probes_pass_under_eight_threads() {
    const PROBES: u32 = 3;
    let clock = MockClock::install();
    load(vec![CircuitBreakerRule::error_count("cb-race", 1)
        .min_requests(1)
        .recovery(RECOVERY)
        .probes(PROBES)]);
    call("cb-race", true).unwrap();
    clock.advance(RECOVERY);
    let passed = AtomicU32::new(0);
    let barrier = Barrier::new(8);
    let held = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..50 {
                    if let Ok(probe) = entry("cb-race") {
                        passed.fetch_add(1, Ordering::SeqCst);
                        held.lock().unwrap().push(probe); // still running: no verdict yet
                    }
                }
            });
        }
    });
    assert_eq!(
        passed.into_inner(),
        PROBES,
        "half-open admits exactly `probes` calls"
    );
    drop(held.into_inner().unwrap());
    assert_eq!(state("cb-race"), Some(Closed), "all probes succeeded");
    load(vec![]);
}

#[test]
fn a_panicking_probe_reopens_and_a_dropped_probe_gives_its_place_back() {
    let clock = MockClock::install();
    let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
    trip_guarded(&clock);
    // A panicking probe is a failed probe.
    let panicked = catch_unwind(AssertUnwindSafe(|| guarded(Step::Panic)));
    assert!(panicked.is_err());
    assert_eq!(state("cb-guarded"), Some(Open));

    // A probe future dropped half-way decides nothing and frees the probe.
    clock.advance(RECOVERY);
    let mut probe = Box::pin(guarded_async(rx));
    assert!(probe
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert_eq!(state("cb-guarded-async"), Some(HalfOpen));
    drop(probe);
    assert_eq!(
        state("cb-guarded-async"),
        Some(HalfOpen),
        "no verdict from a dropped probe"
    );
    let (tx2, rx2) = tokio::sync::oneshot::channel::<()>();
    tx2.send(()).unwrap();
    let done = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(guarded_async(rx2));
    assert_eq!(done, Ok(1), "the freed place admitted a new probe");
    assert_eq!(state("cb-guarded-async"), Some(Closed));
    load(vec![]);
}

#[derive(Debug)]
enum Step {
    Fail,
    Panic,
}

#[derive(Debug, PartialEq)]
enum Down {
    Failed,
    GateDropped,
    Busy,
}

impl From<BlockError> for Down {
    fn from(_: BlockError) -> Self {
        Down::Busy
    }
}

#[sentinel(
    resource = "cb-guarded",
    breaker(error_count = 1, min_requests = 1, recovery = "5s")
)]
fn guarded(step: Step) -> Result<u8, Down> {
    match step {
        Step::Fail => Err(Down::Failed),
        Step::Panic => panic!("probe panicked"),
    }
}

#[sentinel(
    resource = "cb-guarded-async",
    breaker(error_count = 1, min_requests = 1, recovery = "5s")
)]
async fn guarded_async(gate: tokio::sync::oneshot::Receiver<()>) -> Result<u8, Down> {
    gate.await.map_err(|_| Down::GateDropped)?;
    Ok(1)
}

/// Opens both attribute-guarded breakers, then waits out their recovery.
fn trip_guarded(clock: &MockClock) {
    assert_eq!(guarded(Step::Fail), Err(Down::Failed));
    assert_eq!(state("cb-guarded"), Some(Open));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    drop(tx);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(guarded_async(rx)), Err(Down::GateDropped));
    assert_eq!(state("cb-guarded-async"), Some(Open));
    clock.advance(RECOVERY);
}

#[test]
fn a_silent_probe_does_not_keep_the_breaker_half_open_forever() {
    let clock = MockClock::install();
    load(vec![CircuitBreakerRule::error_count("cb-silent", 1)
        .min_requests(1)
        .recovery(RECOVERY)]);
    call("cb-silent", true).unwrap();
    clock.advance(RECOVERY);
    let stuck = entry("cb-silent").expect("the probe");
    clock.advance(RECOVERY - Duration::from_millis(1));
    assert!(entry("cb-silent").is_err(), "the probe is still out");
    clock.advance(Duration::from_millis(1));
    let fresh = entry("cb-silent").expect("a new round of probes after `recovery`");
    drop(fresh);
    assert_eq!(state("cb-silent"), Some(Closed));
    stuck.set_error();
    drop(stuck); // its late failure belongs to a finished round
    assert_eq!(state("cb-silent"), Some(Closed));
    load(vec![]);
}

#[derive(Debug, PartialEq)]
enum FetchError {
    NotFound,
    Timeout,
    Busy,
}

impl From<BlockError> for FetchError {
    fn from(_: BlockError) -> Self {
        FetchError::Busy
    }
}

fn counts_as_error(e: &FetchError) -> bool {
    *e == FetchError::Timeout
}

#[sentinel(
    resource = "cb-is-error",
    is_error = counts_as_error,
    breaker(error_count = 2, min_requests = 1, recovery = "1s")
)]
fn fetch(outcome: Result<u8, FetchError>) -> Result<u8, FetchError> {
    outcome
}

#[test]
fn is_error_decides_which_err_values_count() {
    let _clock = MockClock::install();
    for _ in 0..5 {
        assert_eq!(fetch(Err(FetchError::NotFound)), Err(FetchError::NotFound));
    }
    assert_eq!(
        state("cb-is-error"),
        Some(Closed),
        "NotFound is not an error here"
    );
    assert_eq!(metrics::snapshot("cb-is-error").unwrap().error_qps, 0.0);
    fetch(Err(FetchError::Timeout)).unwrap_err();
    fetch(Err(FetchError::Timeout)).unwrap_err();
    assert_eq!(state("cb-is-error"), Some(Open));
    assert_eq!(fetch(Ok(1)), Err(FetchError::Busy));
}

#[test]
fn loaded_breakers_override_defaults_and_bad_rules_are_refused_by_field() {
    let _clock = MockClock::install();
    let good = CircuitBreakerRule::error_count("cb-loaded", 2)
        .min_requests(1)
        .recovery(RECOVERY);
    load(vec![good.clone()]);
    for (bad, field) in [
        (good.clone().probes(0), "probes"),
        (good.clone().recovery(Duration::ZERO), "recovery"),
        (good.clone().min_requests(0), "min_requests"),
        (
            CircuitBreakerRule::error_ratio("cb-loaded", 1.01).recovery(RECOVERY),
            "threshold",
        ),
        (
            CircuitBreakerRule::error_ratio("cb-loaded", f64::NAN).recovery(RECOVERY),
            "threshold",
        ),
    ] {
        let err = rules::load_circuit_breaker_rules(vec![bad]).unwrap_err();
        assert_eq!(err.field(), field, "{err}");
        assert_eq!(
            rules::circuit_breaker_rules(),
            vec![good.clone()],
            "old rules stay"
        );
    }
    call("cb-loaded", true).unwrap();
    assert_eq!(state("cb-loaded"), Some(Closed));
    call("cb-loaded", true).unwrap();
    assert_eq!(state("cb-loaded"), Some(Open));
    load(vec![]);
    assert_eq!(
        state("cb-loaded"),
        None,
        "unloaded: no breaker, no defaults"
    );
    assert!(call("cb-loaded", false).is_ok());
}
