//! Rounds of a reloader against an observer thread, for tests that a reload is seen in order by
//! a thread (`checked_order`, `lone_pinned_order`, `reports_order`).
//!
//! Each round, the reloader puts the "open" rules in force and starts the round; the observer
//! says it is running; the reloader puts the "shut" rules in force while the observer runs its
//! observation (which waits until one of its calls met the shut rules, then looks whether a
//! later call of its own still saw the open ones); the next round waits for its answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use sentinel_runtime::{entry, BlockKind, EntryBuilder};

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

/// Runs at most `rounds` rounds of `open`, then `shut` while the observer runs `stale` (true:
/// a call saw the open rules after one of the same thread met the shut ones); returns the
/// first round whose observation was stale. The rules are left shut.
pub fn first_stale_round(
    rounds: usize,
    open: impl Fn(),
    shut: impl Fn(),
    stale: impl Fn() -> bool + Send + 'static,
) -> Option<usize> {
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
                let state = if stale() { STALE } else { DONE };
                answer.store(round << 2 | state, Ordering::Release);
                round += 1;
            }
        })
    };
    let mut stale_in = None;
    for round in 1..=rounds {
        open();
        started.store(round, Ordering::Release);
        // The observer calls while the rules shut.
        wait_for(&answer, round, 0, &observer);
        shut();
        if wait_for(&answer, round, RUNNING, &observer) == STALE {
            stale_in = Some(round);
            break;
        }
    }
    started.store(0, Ordering::Release);
    observer.join().expect("the observer");
    stale_in
}

/// An observation for flow rules that shut `resource`: inbound calls (an inbound call reads the
/// chain, while a system rule is in force) until one is blocked, then whether an outbound call
/// of the same thread still passes (stale).
#[allow(dead_code)] // Not every test that includes this module observes flow rules.
pub fn outbound_passes_after_inbound_blocked(resource: &str) -> bool {
    loop {
        match EntryBuilder::new(resource).inbound().enter() {
            Ok(e) => drop(e),
            Err(e) => {
                assert_eq!(e.kind(), BlockKind::Flow, "{e}");
                break;
            }
        }
    }
    // The rules are still shut (the reloader opens them again after the answer).
    entry(resource).is_ok()
}
