//! A resource whose only rule is one exact QPS rule is entered through that gate without
//! reading the chain: the node keeps the gate pinned (a few of them, for its life) and points
//! its entries at it. The pointer must follow every reload: a new threshold (the same gate,
//! its counts kept), a new shape (a new gate, also beyond the ones a node keeps), another rule
//! joining (no shortcut), and entries racing the reloads must all be counted.
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind};

/// How many calls of `resource` pass in a row, each exited at once, before one is blocked by
/// a flow rule (at most 100).
fn admitted_in_a_row(resource: &str) -> u32 {
    for n in 0..100 {
        match entry(resource) {
            Ok(e) => drop(e),
            Err(e) => {
                assert_eq!(e.kind(), BlockKind::Flow, "{resource}: {e}");
                return n;
            }
        }
    }
    100
}

#[test]
fn the_shortcut_follows_every_reload_of_the_rule() {
    let clock = MockClock::install();
    let r = "pinned-reloads";
    // Past the window and the bucket its passes were counted in (a strict window counts a
    // bucket that overlaps the last second).
    let next_window = || clock.advance(Duration::from_millis(2_100));

    rules::load_flow_rules(vec![FlowRule::qps(r, 3.0)]).unwrap();
    assert_eq!(admitted_in_a_row(r), 3);

    // A new threshold, the same shape: the same gate, its window's three passes kept.
    rules::load_flow_rules(vec![FlowRule::qps(r, 5.0)]).unwrap();
    assert_eq!(admitted_in_a_row(r), 2, "three of five already taken");
    next_window();
    assert_eq!(admitted_in_a_row(r), 5);

    // A new shape on every load (sample count, strictness): a new gate each time, more of
    // them than a node keeps pinned. Each admits exactly its own threshold.
    let shapes = [
        (2, false),
        (5, true),
        (10, false),
        (4, true),
        (20, false),
        (1, true),
    ];
    for (i, &(samples, strict)) in shapes.iter().enumerate() {
        let threshold = 4 + i as u32;
        let rule = FlowRule::qps(r, f64::from(threshold))
            .window(Duration::from_secs(1), samples)
            .strict(strict);
        rules::load_flow_rules(vec![rule]).unwrap();
        next_window();
        assert_eq!(
            admitted_in_a_row(r),
            threshold,
            "shape {i}: {samples} samples, strict {strict}"
        );
    }

    // Another rule joins: no longer a lone gate, the lower limit holds.
    rules::load_flow_rules(vec![FlowRule::qps(r, 9.0), FlowRule::qps(r, 2.0)]).unwrap();
    next_window();
    assert_eq!(admitted_in_a_row(r), 2, "two rules: the lower one holds");

    // Alone again, with the first shape (its gate made anew).
    rules::load_flow_rules(vec![FlowRule::qps(r, 6.0)]).unwrap();
    next_window();
    assert_eq!(admitted_in_a_row(r), 6);

    // No rule: everything passes.
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(admitted_in_a_row(r), 100);
}

const THREADS: usize = 4;
const CALLS: u64 = 4_000;
const RELOADS: u32 = 200;

#[test]
fn entries_racing_reloads_of_the_gate_are_all_counted() {
    let clock = MockClock::install();
    let r = "pinned-race";
    // Every call passes (the limit is far above the calls): what is checked is that every
    // entry, whichever gate it read, is counted once and exits once.
    let rule = |i: u32| {
        let samples = [1, 2, 4, 5, 10, 20, 50][i as usize % 7];
        FlowRule::qps(r, 1e9 - f64::from(i)).window(Duration::from_secs(1), samples)
    };
    rules::load_flow_rules(vec![rule(0)]).unwrap();
    let start = Arc::new(Barrier::new(THREADS + 1));
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..CALLS {
                    drop(entry(r).expect("far under the limit"));
                }
            })
        })
        .collect();
    start.wait();
    // New shapes while the callers run: more gates than a node keeps pinned.
    for i in 1..=RELOADS {
        rules::load_flow_rules(vec![rule(i)]).unwrap();
    }
    for caller in callers {
        caller.join().expect("a caller");
    }
    let calls = THREADS as u64 * CALLS;
    let stats = metrics::snapshot(r).unwrap();
    assert_eq!(
        (stats.pass_total, stats.complete_total, stats.concurrency),
        (calls, calls, 0)
    );

    // After the race, the rule in force admits exactly its limit.
    rules::load_flow_rules(vec![FlowRule::qps(r, 3.0)]).unwrap();
    clock.advance(Duration::from_millis(1_100));
    assert_eq!(admitted_in_a_row(r), 3);
    rules::load_flow_rules(vec![]).unwrap();
}
