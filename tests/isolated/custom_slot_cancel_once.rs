//! A call admitted by custom slots and then given up is cancelled exactly once, at exactly the
//! slots that admitted it: blocked by a later built-in stage or a later slot, a later slot
//! panicking, or its wait for a throttling turn dropped. A call that waits for its turn and
//! enters is cancelled nowhere.
//!
//! Own test binary: a registered slot stays for the process's life. One test: the slots are
//! registered once, and each case has its own resource.

use crate::throttled;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::task::{Context, Waker};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::slot::{register_check_slot, CheckSlot, SlotContext, FLOW_SLOT_ORDER};
use sentinel_runtime::{entry, BlockError, BlockKind, EntryBuilder};

/// The case being run: its resource. The slots count only calls of it.
static CASE: Mutex<&str> = Mutex::new("");

/// Checks and cancellations by slot: 0 before the flow stage, 1 after it, 2 last (it blocks
/// or panics on the cases that ask for it).
static CHECKS: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];
static CANCELS: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];

const LATER_BLOCK: &str = "slot-once-later-block";
const LATER_PANIC: &str = "slot-once-later-panic";
const FLOW_BLOCK: &str = "slot-once-flow-block";
const SYNC_WAIT: &str = "slot-once-sync-wait";
const ASYNC_WAIT: &str = "slot-once-async-wait";

struct Counting(usize);

impl CheckSlot for Counting {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        let case = *CASE.lock().unwrap_or_else(|e| e.into_inner());
        if ctx.resource() != case {
            return Ok(());
        }
        CHECKS[self.0].fetch_add(1, Ordering::SeqCst);
        match (self.0, case) {
            (2, LATER_BLOCK) => Err(BlockError::custom(case, "the last slot blocks", 0.0)),
            (2, LATER_PANIC) => panic!("the last slot panics"),
            _ => Ok(()),
        }
    }

    fn cancel(&self, ctx: &SlotContext<'_>) {
        if ctx.resource() == *CASE.lock().unwrap_or_else(|e| e.into_inner()) {
            CANCELS[self.0].fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Starts a case: its resource, the counts zeroed.
fn start(case: &'static str) {
    *CASE.lock().unwrap_or_else(|e| e.into_inner()) = case;
    for c in CHECKS.iter().chain(&CANCELS) {
        c.store(0, Ordering::SeqCst);
    }
}

fn counts(of: &[AtomicU32; 3]) -> [u32; 3] {
    [0, 1, 2].map(|i| of[i].load(Ordering::SeqCst))
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_call_given_up_is_cancelled_once_at_the_slots_that_admitted_it() {
    crate::own_process::assert_alone();
    let clock = MockClock::install();
    register_check_slot(FLOW_SLOT_ORDER - 1, Counting(0));
    register_check_slot(FLOW_SLOT_ORDER + 1, Counting(1));
    register_check_slot(i32::MAX, Counting(2));

    // A later slot blocks: the two before it cancel once, it does not (it did not admit).
    start(LATER_BLOCK);
    rules::load_flow_rules(vec![FlowRule::qps(LATER_BLOCK, 1.0)]).unwrap();
    assert_eq!(entry(LATER_BLOCK).unwrap_err().kind(), BlockKind::Custom);
    assert_eq!(counts(&CHECKS), [1, 1, 1]);
    assert_eq!(counts(&CANCELS), [1, 1, 0], "a later slot's block");
    start("");
    drop(entry(LATER_BLOCK).expect("the flow stage's pass was given back"));

    // A later slot panics: the same, and the flow stage's pass is given back too.
    start(LATER_PANIC);
    rules::load_flow_rules(vec![FlowRule::qps(LATER_PANIC, 1.0)]).unwrap();
    let panicked = catch_unwind(AssertUnwindSafe(|| entry(LATER_PANIC).map(drop)));
    assert!(panicked.is_err(), "the slot's panic reaches the caller");
    assert_eq!(counts(&CHECKS), [1, 1, 1]);
    assert_eq!(counts(&CANCELS), [1, 1, 0], "a later slot's panic");
    start("");
    drop(entry(LATER_PANIC).expect("the flow stage's pass was given back"));

    // The flow stage blocks: the slot before it cancels once, those after never saw the call.
    start(FLOW_BLOCK);
    rules::load_flow_rules(vec![FlowRule::qps(FLOW_BLOCK, 0.0)]).unwrap();
    assert_eq!(entry(FLOW_BLOCK).unwrap_err().kind(), BlockKind::Flow);
    assert_eq!(counts(&CHECKS), [1, 0, 0]);
    assert_eq!(counts(&CANCELS), [1, 0, 0], "a later stage's block");

    // A sync call that waits for its turn and enters: nothing cancelled.
    start(SYNC_WAIT);
    rules::load_flow_rules(vec![
        FlowRule::qps(SYNC_WAIT, 10.0).throttle(Duration::from_secs(1))
    ])
    .unwrap();
    drop(entry(SYNC_WAIT).expect("the first call's turn is now"));
    drop(entry(SYNC_WAIT).expect("the second call waits 100 ms, then enters"));
    assert_eq!(counts(&CHECKS), [2, 2, 2]);
    assert_eq!(
        counts(&CANCELS),
        [0, 0, 0],
        "entered calls are not cancelled"
    );

    // Async calls: one waits and enters (nothing cancelled), one is dropped while it waits
    // (cancelled once at each slot).
    start(ASYNC_WAIT);
    clock.advance(Duration::from_secs(10));
    rules::load_flow_rules(vec![
        FlowRule::qps(ASYNC_WAIT, 10.0).throttle(Duration::from_secs(1))
    ])
    .unwrap();
    let runtime = throttled::paused_runtime();
    let mut cx = Context::from_waker(Waker::noop());
    let (first, waited) = {
        let _in_runtime = runtime.enter();
        let first = throttled::enter_now(ASYNC_WAIT, &mut cx);
        (first, EntryBuilder::new(ASYNC_WAIT).enter_async())
    };
    let waited = runtime
        .block_on(waited)
        .expect("the second call enters after its turn");
    assert_eq!(
        counts(&CANCELS),
        [0, 0, 0],
        "a call that waited and entered"
    );
    let dropped = {
        let _in_runtime = runtime.enter();
        let mut dropped = Box::pin(EntryBuilder::new(ASYNC_WAIT).enter_async());
        assert!(
            dropped.as_mut().poll(&mut cx).is_pending(),
            "a turn to wait for"
        );
        dropped
    };
    assert_eq!(counts(&CHECKS), [3, 3, 3]);
    drop(dropped);
    let cancels = counts(&CANCELS);
    drop((first, waited));
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(cancels, [1, 1, 1], "a dropped wait");
}
