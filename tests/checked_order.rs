//! A reload is seen in order by a thread: once one of its calls was checked against the new
//! rules, its later calls are too (until the next reload), also when the rules before the
//! reload were none (the node's chain empty: an entry then reads the node's `checked` byte and
//! skips the chain).
//!
//! The rules flip between none and one QPS rule that blocks everything. A system rule that
//! never blocks is in force, so an inbound call reads the chain whatever the node's `checked`
//! byte says, while an outbound call first reads that byte. An observer calls inbound while the
//! rules shut; once such a call is blocked, it calls outbound: that call must be blocked too
//! (the next reload, which opens again, waits for the observer).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule, SystemRule};
use sentinel_runtime::{entry, BlockKind, EntryBuilder};

/// At most this many rounds; the first stale call ends the test.
const ROUNDS: usize = 5_000;
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
fn after_a_call_saw_the_new_rules_a_later_call_of_its_thread_is_checked_too() {
    let _clock = MockClock::install();
    let r = "checked-order";
    let open = Vec::new;
    let shut = || vec![FlowRule::qps(r, 0.0)];
    rules::load_system_rules(vec![SystemRule::new().concurrency(1_000_000)]).unwrap();

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
                // Until an inbound call (it reads the chain) meets the shut rules.
                loop {
                    match EntryBuilder::new(r).inbound().enter() {
                        Ok(e) => drop(e),
                        Err(e) => {
                            assert_eq!(e.kind(), BlockKind::Flow, "{e}");
                            break;
                        }
                    }
                }
                // The rules are still shut: the reloader opens them again after the answer.
                let state = match entry(r) {
                    Ok(_) => STALE,
                    Err(_) => DONE,
                };
                answer.store(round << 2 | state, Ordering::Release);
                round += 1;
            }
        })
    };
    let mut stale_in = None;
    for round in 1..=ROUNDS {
        rules::load_flow_rules(open()).unwrap();
        started.store(round, Ordering::Release);
        // The observer calls while the rules shut.
        wait_for(&answer, round, 0, &observer);
        rules::load_flow_rules(shut()).unwrap();
        if wait_for(&answer, round, RUNNING, &observer) == STALE {
            stale_in = Some(round);
            break;
        }
    }
    started.store(0, Ordering::Release);
    observer.join().expect("the observer");
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(
        stale_in, None,
        "a call admitted unchecked after a call of the same thread was blocked by the rules \
         that replaced no rules"
    );
}
