//! A check slot registered while the process makes its very first resources (the registry and
//! the shared node beyond the cap not made yet, so the registry installs its node marker while
//! the slot is being registered) runs on every entry that starts after the registration
//! returned. Own test binary: it must run before anything else in the process touches the
//! registry.

use crate::block_prefix;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use block_prefix::{blocked, BlockPrefix};
use sentinel_runtime::registry;
use sentinel_runtime::slot::{register_check_slot, FLOW_SLOT_ORDER};

const THREADS: usize = 4;
const NAMES_PER_THREAD: usize = 200;

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_slot_registered_while_the_registry_is_first_made_runs_on_every_later_entry() {
    crate::own_process::assert_alone();
    // Beyond 40 names, new names share the overflow node, made lazily by the first of them.
    registry::set_max_resources(40);
    let start = Arc::new(Barrier::new(THREADS + 1));
    let registered = Arc::new(AtomicBool::new(false));
    let makers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (start, registered) = (start.clone(), registered.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut missed = Vec::new();
                for i in 0..NAMES_PER_THREAD {
                    let name = format!("first-{t}-{i}");
                    let after = registered.load(Ordering::SeqCst);
                    if !blocked(&name) && after {
                        missed.push(name.clone());
                    }
                    // An existing node (maybe the overflow), entered again.
                    let again = format!("first-{t}-0");
                    let after = registered.load(Ordering::SeqCst);
                    if !blocked(&again) && after {
                        missed.push(again);
                    }
                }
                missed
            })
        })
        .collect();
    start.wait();
    register_check_slot(FLOW_SLOT_ORDER, BlockPrefix("first-"));
    registered.store(true, Ordering::SeqCst);
    let mut missed = Vec::new();
    for maker in makers {
        missed.extend(maker.join().expect("a maker thread"));
    }
    assert!(
        missed.is_empty(),
        "entered after the registration, not checked: {missed:?}"
    );
    for t in 0..THREADS {
        for i in 0..NAMES_PER_THREAD {
            let name = format!("first-{t}-{i}");
            assert!(blocked(&name), "{name}");
        }
    }
    assert!(blocked("first-after"));
    registry::set_max_resources(usize::MAX);
    assert!(!blocked("other"), "the slot passes other resources");
}
