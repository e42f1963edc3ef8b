//! A call's cancellation gives back to every custom slot that admitted it: the list it was
//! checked with travels with the call while it waits for its throttling turn, so a slot
//! registered before the call is asked to cancel it, also when another slot was registered
//! during the wait (which is not asked).
//!
//! Own test binary: a registered slot stays for the process's life.

use crate::throttled;

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Waker};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::slot::{register_check_slot, CheckSlot, SlotContext};
use sentinel_runtime::{BlockError, EntryBuilder};

const RESOURCE: &str = "slot-cancel-snapshot";

/// Checks and cancellations of `RESOURCE`, by slot: 0 registered before the calls, 1 during
/// the wait.
static CHECKS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static CANCELS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// Counts its checks and cancellations of `RESOURCE` under its index.
struct Counting(usize);

impl CheckSlot for Counting {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource() == RESOURCE {
            CHECKS[self.0].fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    fn cancel(&self, ctx: &SlotContext<'_>) {
        if ctx.resource() == RESOURCE {
            CANCELS[self.0].fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn counts(of: &[AtomicU32; 2]) -> [u32; 2] {
    [of[0].load(Ordering::SeqCst), of[1].load(Ordering::SeqCst)]
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_dropped_wait_asks_the_slots_that_admitted_the_call_and_only_them() {
    crate::own_process::assert_alone();
    let _clock = MockClock::install();
    // After the flow stage: the slot admits a call the throttling gives a turn.
    register_check_slot(10_000, Counting(0));
    rules::load_flow_rules(vec![
        FlowRule::qps(RESOURCE, 10.0).throttle(Duration::from_secs(1))
    ])
    .unwrap();
    let runtime = throttled::paused_runtime();
    let _in_runtime = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    // The first call takes the turn now; the second's is 100 ms away.
    let first = throttled::enter_now(RESOURCE, &mut cx);
    let mut waiting = Box::pin(EntryBuilder::new(RESOURCE).enter_async());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(counts(&CHECKS), [2, 0], "slot 0 checked both calls");

    register_check_slot(20_000, Counting(1));
    // Dropped while it waits: its reservation is cancelled.
    drop(waiting);
    let cancels = counts(&CANCELS);
    drop(first);
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        cancels,
        [1, 0],
        "the slot that admitted the waiting call gives it back, the one registered since does not"
    );
}
