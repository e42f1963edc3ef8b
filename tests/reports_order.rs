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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, BlockKind};

/// At most this many rounds; the first stale call ends the test.
const ROUNDS: usize = 50_000;
/// The observer's answer to the last round: it is running the round.
const RUNNING: usize = 1;
/// It is done with the round, and found no stale call.
const DONE: usize = 2;
/// It is done with the round, and found a stale call.
const STALE: usize = 3;

/// Waits until `word` holds `round` (in its high bits) and a state other than `not` (in its
/// two low bits); returns that state. Fails if `observer` ended (it failed) instead.
fn wait_for(word: &AtomicUsize, round: usize, not: usize, observer: &JoinHandle<()>) -> usize {
    loop {
        let now = word.load(Ordering::Acquire);
        if now >> 2 == round && now & 3 != not {
            return now & 3;
        }
        assert!(
            !observer.is_finished(),
            "the observer stopped in round {round}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_call_checked_against_a_new_breaker_reports_its_exit_to_it() {
    let _clock = MockClock::install();
    let r = "reports-order";
    rules::load_flow_rules(vec![FlowRule::qps(r, 1e9)]).unwrap();
    // The node's circuit states are a read of its chain.
    let node = entry(r)
        .expect("a lone QPS rule that admits everything")
        .node();
    let open = Vec::new;
    let shut = || {
        vec![CircuitBreakerRule::error_count(r, 1)
            .min_requests(1)
            .window(Duration::from_secs(1), 10)
            .recovery(Duration::from_secs(3_600))]
    };

    // The round the reloader started (0: stop), and the observer's answer: round << 2 | state.
    let started = Arc::new(AtomicUsize::new(usize::MAX));
    let answer = Arc::new(AtomicUsize::new(0));
    let observer = {
        let (started, answer) = (started.clone(), answer.clone());
        std::thread::spawn(move || {
            let mut round = 1;
            loop {
                let now = loop {
                    match started.load(Ordering::Acquire) {
                        now if now == round || now == 0 => break now,
                        _ => std::thread::yield_now(),
                    }
                };
                if now == 0 {
                    return;
                }
                answer.store(round << 2 | RUNNING, Ordering::Release);
                // Until a read of the chain finds the breaker.
                while node.circuit_states().is_empty() {
                    std::thread::yield_now();
                }
                // Checked against the breaker, and failing: the breaker opens at its exit.
                match entry(r) {
                    Ok(e) => e.set_error(),
                    Err(e) => panic!("the breaker admits the first call: {e}"),
                }
                // The breaker is still in force: the reloader removes it after the answer.
                let state = match entry(r) {
                    Ok(_) => STALE,
                    Err(e) => {
                        assert_eq!(e.kind(), BlockKind::CircuitBreaker, "{e}");
                        DONE
                    }
                };
                answer.store(round << 2 | state, Ordering::Release);
                round += 1;
            }
        })
    };
    let mut stale_in = None;
    for round in 1..=ROUNDS {
        rules::load_circuit_breaker_rules(open()).unwrap();
        started.store(round, Ordering::Release);
        // The observer calls while the rules shut.
        wait_for(&answer, round, 0, &observer);
        rules::load_circuit_breaker_rules(shut()).unwrap();
        if wait_for(&answer, round, RUNNING, &observer) == STALE {
            stale_in = Some(round);
            break;
        }
    }
    started.store(0, Ordering::Release);
    observer.join().expect("the observer");
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        stale_in, None,
        "a call checked against a new breaker failed, and its exit was not reported to it"
    );
}
