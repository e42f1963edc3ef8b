//! The first call of a process that already runs several threads (as every server does) pays
//! no one-time set-up: the process's `membarrier` registration once took 10 ms there (the
//! kernel waits for every thread of a process that registers), and the first call made it.
//!
//! This file holds one test, so that its first call is the process's first. It checks that the
//! registration is done before that call (it runs before `main`), not how long the call takes:
//! a bound on the time (2 ms, against about 10 ms for the defect) failed on a busy machine, where
//! a first call took 6 ms for other reasons. The times themselves come from
//! `cargo run -p sentinel-integration --release --example cold_start` (BENCHMARKS.md); this test prints them.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use sentinel_runtime::{__private, sentinel, BlockError};

#[sentinel(resource = "cold_start_first_call", qps = 1_000_000_000)]
fn guarded(x: u64) -> Result<u64, BlockError> {
    Ok(x + 1)
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn the_first_call_of_a_process_with_threads_pays_no_one_time_set_up() {
    crate::own_process::assert_alone();
    // Four idle threads first, as a server's runtime has before its first request.
    let ready = Arc::new(Barrier::new(5));
    let mut parked = Vec::new();
    for _ in 0..4 {
        let ready = ready.clone();
        parked.push(std::thread::spawn(move || {
            ready.wait();
            std::thread::park();
        }));
    }
    ready.wait();

    // Done before the first call, so the call cannot be the one that does it.
    #[cfg(target_os = "linux")]
    assert!(
        __private::one_time_set_up_done(),
        "the membarrier registration is left to the first call"
    );
    let start = Instant::now();
    let first = guarded(1);
    let first_call = start.elapsed();
    assert_eq!(first, Ok(2));
    assert!(
        __private::one_time_set_up_done(),
        "done after the first call"
    );

    let on_new_thread = std::thread::spawn(|| {
        let start = Instant::now();
        let result = guarded(2);
        (result, start.elapsed())
    })
    .join()
    .expect("the thread ran");
    assert_eq!(on_new_thread.0, Ok(3));
    eprintln!(
        "the process's first guarded call took {first_call:?}; the first on a new thread {:?}",
        on_new_thread.1
    );

    for thread in &parked {
        thread.thread().unpark();
    }
    for thread in parked {
        let _ = thread.join();
    }
}
