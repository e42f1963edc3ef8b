//! Entries of checked resources on more threads than there are hazard words for reading a
//! resource's checks (64 threads hold one each; the others read through a shared count of such
//! readers): each way in admits exactly its limit, released together by a barrier, with every
//! thread alive at once. Time from the MockClock (frozen: one window).

use std::sync::{Arc, Barrier};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind};

const THREADS: usize = 80;
const CALLS: usize = 5;
const LIMIT: usize = 150;

#[sentinel(resource = "threads-qps", qps = 150)]
fn qps() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "threads-hot", hotspot(param = key, qps = 150))]
fn hot(key: u64) -> Result<(), BlockError> {
    let _ = key;
    Ok(())
}

#[sentinel(resource = "threads-runner", qps = 150, concurrency = 1000)]
fn runner() -> Result<(), BlockError> {
    Ok(())
}

#[test]
fn every_thread_is_checked_and_each_limit_admits_exactly() {
    let _clock = MockClock::install();
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                // Caught, so that a failing call cannot leave the others at the barrier.
                let outcomes = std::panic::catch_unwind(|| {
                    (0..CALLS)
                        .map(|_| [qps(), hot(7), runner()])
                        .collect::<Vec<_>>()
                });
                // Every thread alive until all have called: more threads than hazard words.
                barrier.wait();
                outcomes.expect("no call panics")
            })
        })
        .collect();
    let mut admitted = [0; 3];
    for handle in handles {
        for outcome in handle.join().expect("a calling thread") {
            for (i, result) in outcome.iter().enumerate() {
                match result {
                    Ok(()) => admitted[i] += 1,
                    Err(block) => assert!(
                        matches!(block.kind(), BlockKind::Flow | BlockKind::HotParam),
                        "{block:?}"
                    ),
                }
            }
        }
    }
    assert_eq!(admitted, [LIMIT; 3], "QPS, hotspot, stage runner");
    for name in ["threads-qps", "threads-hot", "threads-runner"] {
        let stats = metrics::snapshot(name).expect("called");
        assert_eq!(stats.pass_total, LIMIT as u64, "{name}");
        assert_eq!(
            stats.complete_total, LIMIT as u64,
            "{name}: every exit counted"
        );
        assert_eq!(
            stats.block_total,
            (THREADS * CALLS - LIMIT) as u64,
            "{name}"
        );
        assert_eq!(stats.concurrency, 0, "{name}: nothing inside");
    }
}
