//! The first call of a process that already runs several threads (as every server does) pays
//! no one-time set-up: the process's `membarrier` registration once took 10 ms there (the
//! kernel waits for every thread of a process that registers), and the first call made it.
//!
//! This file holds one test, so that its first call is the process's first: the bound is
//! generous (2 ms, against about 10 ms for the defect and microseconds when fixed); the figures
//! themselves come from `cargo run --release --example cold_start` (BENCHMARKS.md).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use sentinel_runtime::{sentinel, BlockError};

#[sentinel(resource = "cold_start_first_call", qps = 1_000_000_000)]
fn guarded(x: u64) -> Result<u64, BlockError> {
    Ok(x + 1)
}

#[test]
fn the_first_call_of_a_process_with_threads_pays_no_one_time_set_up() {
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

    let start = Instant::now();
    let first = guarded(1);
    let first_call = start.elapsed();
    assert_eq!(first, Ok(2));
    assert!(
        first_call < Duration::from_millis(2),
        "the process's first guarded call took {first_call:?}"
    );

    let on_new_thread = std::thread::spawn(|| {
        let start = Instant::now();
        let result = guarded(2);
        (result, start.elapsed())
    })
    .join()
    .expect("the thread ran");
    assert_eq!(on_new_thread.0, Ok(3));
    assert!(
        on_new_thread.1 < Duration::from_millis(2),
        "the first guarded call on a new thread took {:?}",
        on_new_thread.1
    );

    for thread in &parked {
        thread.thread().unpark();
    }
    for thread in parked {
        let _ = thread.join();
    }
}
