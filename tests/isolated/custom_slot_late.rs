//! A check slot registered after resources were first entered runs on them all: on a guarded
//! function's resource and a resource entered by name (neither has rules, so their entries
//! had skipped the chain until then), on resources made by other threads while the slot is
//! being registered, and on the shared node of the resources beyond the cap. Own test binary:
//! registering a slot and the cap are process-wide.

use crate::block_prefix;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use block_prefix::{blocked, BlockPrefix};
use sentinel_runtime::registry;
use sentinel_runtime::slot::{register_check_slot, FLOW_SLOT_ORDER};
use sentinel_runtime::BlockError;

#[sentinel_runtime::sentinel(resource = "late-static")]
fn guarded() -> Result<(), BlockError> {
    Ok(())
}

const THREADS: usize = 4;
const NAMES_PER_THREAD: usize = 300;

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_slot_registered_late_runs_on_every_resource_made_before_during_and_after() {
    crate::own_process::assert_alone();
    // Made before the registration, with no rules: their entries skip the chain.
    assert!(guarded().is_ok());
    // One resource by name within the cap, the next one beyond it: the shared node exists.
    registry::set_max_resources(1);
    assert!(!blocked("late-dynamic"));
    assert!(!blocked("late-beyond-cap-1"), "no slot yet");

    // Threads make new resources while the slot is registered; every one made after the
    // registration returned, or before it, must run the slot from then on.
    registry::set_max_resources(usize::MAX);
    let start = Arc::new(Barrier::new(THREADS + 1));
    let registered = Arc::new(AtomicBool::new(false));
    let makers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (start, registered) = (start.clone(), registered.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut late = Vec::new();
                for i in 0..NAMES_PER_THREAD {
                    let name = format!("late-race-{t}-{i}");
                    // Read before the call: a call that starts after the registration
                    // returned is blocked.
                    let after = registered.load(Ordering::SeqCst);
                    let was_blocked = blocked(&name);
                    if after {
                        assert!(was_blocked, "{name}: entered after the registration");
                    }
                    late.push(name);
                }
                late
            })
        })
        .collect();
    start.wait();
    register_check_slot(FLOW_SLOT_ORDER, BlockPrefix("late-"));
    registered.store(true, Ordering::SeqCst);
    let mut raced = Vec::new();
    for maker in makers {
        raced.extend(maker.join().expect("a maker thread"));
    }

    assert!(guarded().is_err(), "the guarded function's resource");
    assert!(blocked("late-dynamic"), "a resource entered by name before");
    for name in &raced {
        assert!(blocked(name), "{name}: made while the slot was registered");
    }
    assert!(blocked("late-new"), "a resource made after");
    assert!(!blocked("other"), "the slot passes other resources");
    registry::set_max_resources(1);
    assert!(blocked("beyond-cap-2"), "the shared node beyond the cap");
}
