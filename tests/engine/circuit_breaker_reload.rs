//! A breaker rule reloaded with changes: which changes keep the breaker's window counts and
//! state (sentinel-golang's `TestRuleIsStatReusable`: the same strategy, window and bucket
//! count), with time from the MockClock.

use std::time::Duration;

use sentinel_runtime::breaker::CircuitState;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule};
use sentinel_runtime::{entry, metrics, BlockError, BlockKind};

use CircuitState::{Closed, HalfOpen, Open};

fn state(resource: &str) -> Option<CircuitState> {
    metrics::snapshot(resource).and_then(|s| s.circuit)
}

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

/// The rule: 5 errors in a 10 s window, a minimum of 1 request, a 3 s recovery.
fn five_in_ten_seconds(resource: &str) -> CircuitBreakerRule {
    CircuitBreakerRule::error_count(resource, 5)
        .window(Duration::from_secs(10), 10)
        .min_requests(1)
        .recovery(Duration::from_secs(3))
}

/// Four failing calls, 1 s apart (all inside the 10 s window).
fn four_failures(clock: &MockClock, resource: &str) {
    for _ in 0..4 {
        call(resource, true).unwrap();
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(state(resource), Some(Closed), "4 errors of 5");
}

#[test]
fn a_reload_that_changes_only_the_recovery_keeps_the_counts() {
    let clock = MockClock::install();
    let r = "cbr-recovery";
    load(vec![five_in_ten_seconds(r)]);
    four_failures(&clock, r);
    load(vec![five_in_ten_seconds(r).recovery(Duration::from_secs(5))]);
    assert_eq!(state(r), Some(Closed), "a reload alone opens nothing");
    call(r, true).unwrap();
    assert_eq!(
        state(r),
        Some(Open),
        "the fifth error in the window opens it"
    );
    // The new recovery is in force: still open 4.999 s later, half-open at 5 s.
    clock.advance(Duration::from_millis(4_999));
    assert_eq!(
        call(r, false).unwrap_err().kind(),
        BlockKind::CircuitBreaker
    );
    clock.advance(Duration::from_millis(1));
    call(r, false).expect("the probe passes after the new 5 s recovery");
    assert_eq!(state(r), Some(Closed));
    load(vec![]);
}

#[test]
fn a_closed_breaker_stays_closed_until_the_kept_counts_reach_the_new_threshold() {
    let clock = MockClock::install();
    // A raised threshold: the 4 kept errors need 3 more to reach 7.
    let r = "cbr-raised";
    load(vec![five_in_ten_seconds(r)]);
    four_failures(&clock, r);
    load(vec![CircuitBreakerRule::error_count(r, 7)
        .window(Duration::from_secs(10), 10)
        .min_requests(1)
        .recovery(Duration::from_secs(3))]);
    call(r, true).unwrap();
    call(r, true).unwrap();
    assert_eq!(state(r), Some(Closed), "6 errors of 7");
    call(r, true).unwrap();
    assert_eq!(state(r), Some(Open), "7 errors of 7");

    // A lowered threshold the kept counts already reach: closed until the next finished call.
    let r = "cbr-lowered";
    load(vec![five_in_ten_seconds(r)]);
    four_failures(&clock, r);
    load(vec![CircuitBreakerRule::error_count(r, 3)
        .window(Duration::from_secs(10), 10)
        .min_requests(1)
        .recovery(Duration::from_secs(3))]);
    assert_eq!(state(r), Some(Closed), "a reload alone opens nothing");
    call(r, false).unwrap();
    assert_eq!(state(r), Some(Open), "4 errors in the window reach 3");
    load(vec![]);
}

#[test]
fn a_changed_window_bucket_count_or_strategy_starts_fresh_counts() {
    let clock = MockClock::install();
    let changes = [
        (
            "cbr-window",
            five_in_ten_seconds("cbr-window").window(Duration::from_secs(20), 10),
        ),
        (
            "cbr-buckets",
            five_in_ten_seconds("cbr-buckets").window(Duration::from_secs(10), 5),
        ),
        (
            "cbr-strategy",
            CircuitBreakerRule::error_ratio("cbr-strategy", 1.0)
                .window(Duration::from_secs(10), 10)
                .min_requests(5)
                .recovery(Duration::from_secs(3)),
        ),
    ];
    for (r, changed) in changes {
        load(vec![five_in_ten_seconds(r)]);
        four_failures(&clock, r);
        load(vec![changed]);
        call(r, true).unwrap();
        assert_eq!(state(r), Some(Closed), "{r}: fresh counts hold 1 error");
        for _ in 0..3 {
            call(r, true).unwrap();
        }
        assert_eq!(state(r), Some(Closed), "{r}: fresh counts hold 4 errors");
        call(r, true).unwrap();
        assert_eq!(state(r), Some(Open), "{r}: 5 fresh errors open it");
    }
    load(vec![]);
}

#[test]
fn an_open_breaker_stays_open_through_a_changed_threshold_and_its_probes_still_decide() {
    let clock = MockClock::install();
    let r = "cbr-open";
    load(vec![five_in_ten_seconds(r)]);
    four_failures(&clock, r);
    call(r, true).unwrap();
    assert_eq!(state(r), Some(Open));
    // A raised threshold and a longer recovery: still open, recovery counted from the opening.
    clock.advance(Duration::from_secs(2));
    let raised = CircuitBreakerRule::error_count(r, 50)
        .window(Duration::from_secs(10), 10)
        .min_requests(1)
        .recovery(Duration::from_secs(4))
        .probes(2);
    load(vec![raised.clone()]);
    assert_eq!(
        state(r),
        Some(Open),
        "a changed threshold does not close it"
    );
    clock.advance(Duration::from_millis(1_999));
    assert!(call(r, false).is_err(), "open until 4 s after it opened");
    clock.advance(Duration::from_millis(1));
    let probe = entry(r).expect("the first of the new rule's 2 probes");
    assert_eq!(state(r), Some(HalfOpen));
    // A half-open breaker keeps its probes out across a reload; they still decide.
    load(vec![raised.clone().min_requests(2)]);
    assert_eq!(state(r), Some(HalfOpen));
    drop(probe);
    drop(entry(r).expect("the second probe"));
    assert_eq!(state(r), Some(Closed), "two successful probes close it");
    // Closed, the window starts afresh: the new threshold of 50 needs 50 errors.
    for _ in 0..49 {
        call(r, true).unwrap();
    }
    assert_eq!(state(r), Some(Closed));
    call(r, true).unwrap();
    assert_eq!(state(r), Some(Open));
    load(vec![]);
}

#[test]
fn a_shadow_twin_added_on_a_reload_starts_fresh_beside_the_breaker_that_keeps_the_counts() {
    let clock = MockClock::install();
    let r = "cbr-twin";
    load(vec![five_in_ten_seconds(r)]);
    four_failures(&clock, r);
    // The enforced rule now needs 50 errors and keeps the 4; its shadow twin needs 5 and must
    // not count the enforced breaker's 4 (nor share its state).
    let enforced = CircuitBreakerRule::error_count(r, 50)
        .window(Duration::from_secs(10), 10)
        .min_requests(1)
        .recovery(Duration::from_secs(3));
    load(vec![enforced, five_in_ten_seconds(r).shadow(true)]);
    call(r, true).unwrap();
    call(r, false).expect("the enforced breaker holds 5 errors of 50");
    let shadow_blocks = || metrics::snapshot(r).map(|s| s.shadow_block_total);
    assert_eq!(
        shadow_blocks(),
        Some(0),
        "the shadow twin holds 1 error of 5"
    );
    for _ in 0..4 {
        call(r, true).unwrap();
    }
    call(r, false).expect("the enforced breaker holds 9 errors of 50");
    assert_eq!(
        shadow_blocks(),
        Some(1),
        "the shadow twin opened at its own 5"
    );
    assert_eq!(state(r), Some(Closed), "the enforced breaker");
    load(vec![]);
}
