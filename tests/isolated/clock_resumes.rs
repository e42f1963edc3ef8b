//! The real clock moves again after a mock clock pushed to the end of its range is dropped.
//!
//! One test in its own binary (its own process): pushing the clock far ahead is felt by every
//! later reading of the process, so nothing else may run beside it.

use std::time::{Duration, Instant};

use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::entry;
use sentinel_runtime::rules::{self, FlowRule};

/// Reads the runtime clock until it moves past `after`, for at most 5 s of real time (the coarse
/// clock ticks every 1-4 ms): the first reading past it, or `None` if it never moved.
fn next_reading(after: u64) -> Option<u64> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let now = clock::now_nanos();
        if now > after {
            return Some(now);
        }
        std::thread::yield_now();
    }
    None
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn time_moves_again_after_a_mock_advanced_by_duration_max_is_dropped() {
    crate::own_process::assert_alone();
    let mock = MockClock::install();
    let start = clock::now_nanos();
    mock.advance(Duration::MAX);
    let far = clock::now_nanos();
    assert!(
        far > start,
        "advance(Duration::MAX) did not move: {start} -> {far}"
    );
    // Advancing again never goes backwards (and never panics).
    mock.advance(Duration::MAX);
    mock.advance(Duration::from_secs(1));
    assert!(clock::now_nanos() >= far);
    drop(mock);

    let resumed = clock::now_nanos();
    assert!(
        resumed >= far,
        "the real clock went backwards: {far} -> {resumed}"
    );
    let later = next_reading(resumed)
        .unwrap_or_else(|| panic!("the real clock stays frozen at {resumed} ns after the mock"));
    assert!(later > resumed);

    // A rule works on the resumed clock.
    rules::load_flow_rules(vec![FlowRule::qps("clock-resumes", 5.0)]).unwrap();
    let passed = (0..10).filter(|_| entry("clock-resumes").is_ok()).count();
    assert!(
        (1..=5).contains(&passed),
        "{passed} of 10 passed a qps 5 rule at {} ns",
        clock::now_nanos()
    );

    // A later mock installs and advances exactly.
    let mock = MockClock::install();
    let t0 = clock::now_nanos();
    mock.advance(Duration::from_secs(3));
    assert_eq!(clock::now_nanos() - t0, 3_000_000_000, "at {t0} ns");
    drop(mock);
    assert!(next_reading(clock::now_nanos()).is_some(), "frozen again");
    rules::load_flow_rules(vec![]).unwrap();
}
