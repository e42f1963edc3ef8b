//! A check slot whose check enters another, new resource (which runs the slots again), while
//! other slots are being registered: nothing deadlocks. Own test binary: slots are process-wide.
//!
//! It deadlocked when a check held the read side of the list of slots while its slots ran:
//! the registration waited for the write side, and the nested entry's read waited behind that
//! waiting writer. A check now runs a snapshot of the list and holds no lock. A thread stuck
//! fails the test after 20 s (the stuck threads are left behind; the test ends).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use sentinel_runtime::slot::{register_check_slot, CheckSlot, SlotContext, FLOW_SLOT_ORDER};
use sentinel_runtime::{entry, BlockError};

static INNER: AtomicUsize = AtomicUsize::new(0);

/// On a call to `outer-...`, enters a new resource `inner-N` (the nested entry runs the slots
/// too, and passes).
struct EntersInner;

impl CheckSlot for EntersInner {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource().starts_with("outer-") {
            let n = INNER.fetch_add(1, Ordering::Relaxed);
            drop(entry(&format!("inner-{n}")).expect("the inner entry passes"));
        }
        Ok(())
    }
}

struct Nothing;

impl CheckSlot for Nothing {
    fn check(&self, _: &SlotContext<'_>) -> Result<(), BlockError> {
        Ok(())
    }
}

const THREADS: usize = 2;
const CALLS: usize = 2_000;
const REGISTRATIONS: usize = 200;

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_slot_entering_a_new_resource_while_slots_are_registered_does_not_deadlock() {
    crate::own_process::assert_alone();
    register_check_slot(FLOW_SLOT_ORDER, EntersInner);
    let (done, finished) = mpsc::channel();
    // The makers and the registrar.
    let start = Arc::new(Barrier::new(THREADS + 1));
    for t in 0..THREADS {
        let (start, done) = (start.clone(), done.clone());
        std::thread::spawn(move || {
            start.wait();
            for i in 0..CALLS {
                drop(entry(&format!("outer-{t}-{i}")).expect("passes"));
            }
            let _ = done.send(());
        });
    }
    {
        let done = done.clone();
        let start = start.clone();
        std::thread::spawn(move || {
            start.wait();
            for i in 0..REGISTRATIONS {
                register_check_slot(i as i32, Nothing);
            }
            let _ = done.send(());
        });
    }
    for _ in 0..THREADS + 1 {
        finished
            .recv_timeout(Duration::from_secs(20))
            .expect("a thread is stuck: deadlock");
    }
}
