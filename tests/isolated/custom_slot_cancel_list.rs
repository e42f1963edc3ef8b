//! A call's cancellation gives back to the custom slots that admitted it, and only to them: a
//! slot registered while the call waited for its throttling turn never checked it, so its
//! `cancel` ("a later check blocked a call this slot admitted") must not run for it.
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

const RESOURCE: &str = "slot-cancel-list";

static CHECKS: AtomicU32 = AtomicU32::new(0);
static CANCELS: AtomicU32 = AtomicU32::new(0);

/// Counts its checks and cancellations of `RESOURCE`.
struct Counting;

impl CheckSlot for Counting {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource() == RESOURCE {
            CHECKS.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    fn cancel(&self, ctx: &SlotContext<'_>) {
        if ctx.resource() == RESOURCE {
            CANCELS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_slot_registered_while_a_call_waits_is_not_asked_to_cancel_it() {
    crate::own_process::assert_alone();
    let _clock = MockClock::install();
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

    register_check_slot(0, Counting);
    // Dropped while it waits: its reservation is cancelled.
    drop(waiting);
    drop(first);
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        (
            CHECKS.load(Ordering::SeqCst),
            CANCELS.load(Ordering::SeqCst)
        ),
        (0, 0),
        "the slot never checked a call, yet was asked to cancel one"
    );
}
