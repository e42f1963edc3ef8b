//! Every exit is counted once, on whatever thread it runs: more threads than the statistics
//! have per-thread shards (64), entries dropped by a thread whose first call that is, and
//! entries dropped by thread-local destructors as their threads end.

use std::cell::RefCell;
use std::sync::{Arc, Barrier};

use sentinel_runtime::{metrics, Entry, EntryBuilder};

const R: &str = "exit-threads";
const THREADS: usize = 80;
const ROUNDS: usize = 50;

thread_local! {
    /// Entries dropped when the thread's locals are torn down.
    static LATE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

#[test]
fn every_exit_is_counted_once_on_any_thread() {
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut moved = Vec::new();
                for _ in 0..ROUNDS {
                    let inbound = EntryBuilder::new(R).inbound().enter().expect("no rule");
                    if i % 2 == 0 {
                        moved.push(inbound);
                    } else {
                        drop(inbound);
                    }
                    drop(sentinel_runtime::entry(R).expect("no rule"));
                }
                LATE.with(|late| {
                    late.borrow_mut()
                        .push(sentinel_runtime::entry(R).expect("no rule"))
                });
                // All threads alive at once (more than the per-thread shards), then half hand
                // their entries to a new thread whose first call is their exits.
                barrier.wait();
                std::thread::spawn(move || drop(moved))
                    .join()
                    .expect("the exits' thread");
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a calling thread");
    }
    let stats = metrics::snapshot(R).expect("the resource exists");
    let calls = (THREADS * (2 * ROUNDS + 1)) as u64;
    assert_eq!(stats.pass_total, calls);
    assert_eq!(stats.complete_total, calls, "every exit counted once");
    assert_eq!(stats.concurrency, 0, "nothing left inside");
}
