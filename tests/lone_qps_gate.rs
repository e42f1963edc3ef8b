//! A resource whose only rule is one exact QPS rule: its entries ask that gate directly (no stage
//! runner), and must behave exactly as through the runner: the same admissions, the same block
//! error with its retry hint, the same counts, and the calls inside counted once a concurrency
//! rule has ever been in force on the resource.
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules.

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind, EntryBuilder};

#[test]
fn a_lone_qps_rule_admits_blocks_and_counts_as_the_chain_does() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("lone-counts", 3.0)]).unwrap();
    let admitted: Vec<_> = (0..3).map(|_| entry("lone-counts").unwrap()).collect();
    let blocked = entry("lone-counts").unwrap_err();
    assert_eq!(blocked.kind(), BlockKind::Flow);
    assert_eq!(blocked.resource(), "lone-counts");
    // The window's three passes leave it one second after they were counted.
    assert_eq!(blocked.retry_after(), Some(Duration::from_secs(1)));
    // A batch counts its size.
    let batch = EntryBuilder::new("lone-counts").acquire(2).enter();
    assert_eq!(batch.unwrap_err().kind(), BlockKind::Flow);
    let stats = metrics::snapshot("lone-counts").unwrap();
    assert_eq!(
        (stats.pass_total, stats.block_total, stats.concurrency),
        (3, 3, 3)
    );
    assert_eq!(stats.block_total_by_rule.flow, 3);
    drop(admitted);
    clock.advance(Duration::from_millis(1_000));
    let batch = EntryBuilder::new("lone-counts").acquire(3).enter().unwrap();
    assert!(entry("lone-counts").is_err(), "the batch took the window");
    drop(batch);
    let stats = metrics::snapshot("lone-counts").unwrap();
    assert_eq!((stats.pass_total, stats.complete_total), (6, 6));
    assert_eq!(stats.concurrency, 0);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn calls_inside_stay_counted_after_a_concurrency_rule_gave_way_to_a_qps_rule() {
    let _clock = MockClock::install();
    // A concurrency rule starts the resource's count of calls inside...
    rules::load_flow_rules(vec![FlowRule::concurrency("lone-inside", 5)]).unwrap();
    drop(entry("lone-inside").unwrap());
    // ... and a lone QPS rule replaces it: the calls entered now must still take the count.
    rules::load_flow_rules(vec![FlowRule::qps("lone-inside", 100.0)]).unwrap();
    let inside: Vec<_> = (0..3).map(|_| entry("lone-inside").unwrap()).collect();
    // With the concurrency rule back, the three calls inside count against it.
    rules::load_flow_rules(vec![FlowRule::concurrency("lone-inside", 3)]).unwrap();
    let fourth = entry("lone-inside");
    assert_eq!(
        fourth.map(drop).unwrap_err().kind(),
        BlockKind::Concurrency,
        "three calls are inside a limit of three"
    );
    drop(inside);
    let after = entry("lone-inside");
    assert!(after.is_ok(), "the three left: a place is free");
    drop(after);
    rules::load_flow_rules(vec![]).unwrap();
}
