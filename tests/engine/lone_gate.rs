//! A resource whose only rule is one exact QPS rule, or one hotspot rule limiting a rate: its
//! entries ask that gate directly (no stage runner), and must behave exactly as through the
//! runner: the same admissions, the same block error with its retry hint, the same counts, and
//! the calls inside counted once a concurrency rule has ever been in force on the resource.
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules.

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule, SystemRule};
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

#[test]
fn a_lone_hotspot_rule_admits_blocks_and_counts_as_the_chain_does() {
    let clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("lone-hot", 0, 2.0)]).unwrap();
    let call = |user: &str| EntryBuilder::new("lone-hot").param(user).enter();
    let admitted = [
        call("alice").unwrap(),
        call("alice").unwrap(),
        call("bob").unwrap(),
    ];
    let blocked = call("alice").unwrap_err();
    assert_eq!(blocked.kind(), BlockKind::HotParam);
    assert_eq!(blocked.resource(), "lone-hot");
    assert!(blocked.retry_after().is_some(), "a rate block says when");
    // A batch larger than the threshold never passes: no hint.
    let batch = EntryBuilder::new("lone-hot")
        .param("carol")
        .acquire(3)
        .enter();
    assert_eq!(batch.unwrap_err().retry_after(), None);
    // An entry without the parameter is not limited by the rule.
    drop(entry("lone-hot").unwrap());
    let stats = metrics::snapshot("lone-hot").unwrap();
    assert_eq!(
        (stats.pass_total, stats.block_total),
        (4, 4),
        "a batch counts its size"
    );
    assert_eq!(stats.block_total_by_rule.hotspot, 4);
    assert_eq!(stats.concurrency, 3);
    drop(admitted);
    clock.advance(Duration::from_millis(500));
    assert!(
        call("alice").is_ok(),
        "half a window: one of alice's two is back"
    );
    assert!(call("alice").is_err());
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn calls_inside_stay_counted_after_a_concurrency_rule_gave_way_to_a_hotspot_rule() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::concurrency("lone-hot-inside", 5)]).unwrap();
    drop(entry("lone-hot-inside").unwrap());
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![HotspotRule::qps("lone-hot-inside", 0, 100.0)]).unwrap();
    let call = || EntryBuilder::new("lone-hot-inside").param("alice").enter();
    let inside: Vec<_> = (0..3).map(|_| call().unwrap()).collect();
    rules::load_flow_rules(vec![FlowRule::concurrency("lone-hot-inside", 3)]).unwrap();
    assert_eq!(
        call().map(drop).unwrap_err().kind(),
        BlockKind::Concurrency,
        "three calls are inside a limit of three"
    );
    drop(inside);
    assert!(call().is_ok(), "the three left: a place is free");
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn a_lone_hotspot_rule_with_a_wait_still_waits() {
    let clock = MockClock::install();
    let rule = HotspotRule::qps("lone-hot-wait", 0, 10.0).throttle(Duration::from_millis(500));
    rules::load_hotspot_rules(vec![rule]).unwrap();
    let start = clock.now_nanos();
    let call = || EntryBuilder::new("lone-hot-wait").param("alice").enter();
    for _ in 0..10 {
        drop(call().unwrap());
    }
    // The 11th waits its turn (the mock clock moves to it) instead of being blocked.
    drop(call().unwrap());
    assert!(clock.now_nanos() > start, "the 11th call waited");
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn an_inbound_entry_counts_in_the_inbound_statistics_and_meets_system_rules() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("lone-inbound", 2.0)]).unwrap();
    let inbound = || EntryBuilder::new("lone-inbound").inbound().enter();
    let before = metrics::inbound();
    // No system rule: the lone gate alone decides, and the inbound statistics count.
    let admitted = [inbound().unwrap(), inbound().unwrap()];
    assert_eq!(inbound().unwrap_err().kind(), BlockKind::Flow);
    let during = metrics::inbound();
    assert_eq!(during.pass_total - before.pass_total, 2);
    assert_eq!(during.block_total - before.block_total, 1);
    assert_eq!(during.concurrency, before.concurrency + 2);
    drop(admitted);
    let after = metrics::inbound();
    assert_eq!(after.complete_total - before.complete_total, 2);
    assert_eq!(after.concurrency, before.concurrency);
    // With a system rule in force, inbound entries meet it first.
    rules::load_system_rules(vec![SystemRule::new().concurrency(0)]).unwrap();
    assert_eq!(inbound().unwrap_err().kind(), BlockKind::System);
    drop(entry("lone-inbound").unwrap_err()); // not inbound: the window is still full
    rules::load_system_rules(vec![]).unwrap();
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn an_async_entry_through_a_lone_hotspot_rule_reserves_as_the_chain_does() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("lone-hot-async", 0, 2.0)]).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let call = |user: &'static str| {
        EntryBuilder::new("lone-hot-async")
            .param(user)
            .enter_async()
    };
    runtime.block_on(async {
        let admitted = [call("alice").await.unwrap(), call("alice").await.unwrap()];
        assert_eq!(call("alice").await.unwrap_err().kind(), BlockKind::HotParam);
        let bob = call("bob").await.unwrap();
        let stats = metrics::snapshot("lone-hot-async").unwrap();
        assert_eq!((stats.pass_total, stats.block_total), (3, 1));
        assert_eq!(stats.concurrency, 3);
        drop((admitted, bob));
    });
    let stats = metrics::snapshot("lone-hot-async").unwrap();
    assert_eq!((stats.complete_total, stats.concurrency), (3, 0));
    rules::load_hotspot_rules(vec![]).unwrap();
}
