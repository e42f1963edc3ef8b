//! A reload is seen in order by a thread: once one of its calls was checked against the new
//! rules, its exit reports to them too (until the next reload), also when the rules before the
//! reload were one lone QPS rule (its gate pinned, nothing to report to: the node's
//! `reports_exits` byte 0).
//!
//! The QPS rule stays; the breaker rules flip between none and one that opens at the first
//! error. An observer reads the node's circuit states (a read of the chain) until the breaker
//! is in force, then makes one failing call and one more: the failing call was checked against
//! the breaker, so its exit reports the error to it and the next call is blocked (the next
//! reload, which removes the breaker, waits for the observer).

use crate::reload_rounds;

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, BlockKind};

/// At most this many rounds; the first stale call ends the test.
const ROUNDS: usize = 50_000;

const R: &str = "reports-order";

#[test]
fn a_call_checked_against_a_new_breaker_reports_its_exit_to_it() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 1e9)]).unwrap();
    // The node's circuit states are a read of its chain.
    let node = entry(R)
        .expect("a lone QPS rule that admits everything")
        .node();
    let shut = || {
        vec![CircuitBreakerRule::error_count(R, 1)
            .min_requests(1)
            .window(Duration::from_secs(1), 10)
            .recovery(Duration::from_secs(3_600))]
    };
    let stale_in = reload_rounds::first_stale_round(
        ROUNDS,
        || rules::load_circuit_breaker_rules(vec![]).unwrap(),
        || rules::load_circuit_breaker_rules(shut()).unwrap(),
        move || {
            // Until a read of the chain finds the breaker.
            while node.circuit_states().is_empty() {
                std::thread::yield_now();
            }
            // Checked against the breaker, and failing: the breaker opens at its exit.
            match entry(R) {
                Ok(e) => e.set_error(),
                Err(e) => panic!("the breaker admits the first call: {e}"),
            }
            // The breaker is still in force (the reloader removes it after the answer).
            match entry(R) {
                Ok(_) => true,
                Err(e) => {
                    assert_eq!(e.kind(), BlockKind::CircuitBreaker, "{e}");
                    false
                }
            }
        },
    );
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        stale_in, None,
        "a call checked against a new breaker failed, and its exit was not reported to it"
    );
}
