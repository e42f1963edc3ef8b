//! Sentinel's `DefaultController.canPass` for a thread-count rule, ported: a call that acquires
//! `n` passes is blocked when the calls inside plus `n` exceed the limit, and an admitted one
//! holds `n` places while it is inside (alibaba/Sentinel,
//! `slots/block/flow/controller/DefaultControllerTest.java`, `testCanPassForThreadCount`).
//!
//! Our choice for a batch of 0 (`acquire(0)`): it is taken as 1, as for every other rule
//! ([`EntryBuilder::acquire`]), so it holds one place; Sentinel passes it without a check.

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::{BlockKind, Entry, EntryBuilder};

fn enter(resource: &str, n: u32) -> Result<Entry, BlockKind> {
    EntryBuilder::new(resource)
        .acquire(n)
        .enter()
        .map_err(|e| e.kind())
}

fn limit(resource: &str, n: u32) {
    rules::load_flow_rules(vec![FlowRule::concurrency(resource, n)]).expect("rule loads");
}

#[test]
fn default_controller_test_can_pass_for_thread_count_with_a_batch() {
    let _clock = MockClock::install();
    let r = "parity-acquire-batch";
    limit(r, 10);
    assert_eq!(
        enter(r, u32::MAX).err(),
        Some(BlockKind::Concurrency),
        "u32::MAX > 10"
    );
    assert_eq!(enter(r, 11).err(), Some(BlockKind::Concurrency), "11 > 10");
    let inside: Vec<Entry> = (0..9).map(|_| enter(r, 1).expect("9 of 10")).collect();
    assert_eq!(
        enter(r, 2).err(),
        Some(BlockKind::Concurrency),
        "9 inside + 2 > 10"
    );
    let last = enter(r, 1).expect("9 inside + 1 = 10");
    drop(last);
    drop(inside);
    rules::load_flow_rules(vec![]).expect("rules clear");
}

#[test]
fn a_batch_holds_its_places_until_it_exits() {
    let _clock = MockClock::install();
    let r = "parity-acquire-holds";
    limit(r, 10);
    let seven = enter(r, 7).expect("7 of 10");
    assert_eq!(
        enter(r, 4).err(),
        Some(BlockKind::Concurrency),
        "7 + 4 > 10"
    );
    let three = enter(r, 3).expect("7 + 3 = 10");
    assert_eq!(enter(r, 1).err(), Some(BlockKind::Concurrency), "full");
    drop(seven);
    let again = enter(r, 7).expect("the batch of 7 gave its 7 places back");
    assert_eq!(
        enter(r, 1).err(),
        Some(BlockKind::Concurrency),
        "full again"
    );
    drop((three, again));
    let whole = enter(r, 10).expect("all 10 given back");
    drop(whole);
    rules::load_flow_rules(vec![]).expect("rules clear");
}

#[test]
fn a_batch_of_zero_holds_one_place() {
    let _clock = MockClock::install();
    let r = "parity-acquire-zero";
    limit(r, 2);
    let first = enter(r, 0).expect("0 is taken as 1: one of 2");
    let second = enter(r, 0).expect("two of 2");
    assert_eq!(
        enter(r, 0).err(),
        Some(BlockKind::Concurrency),
        "full: 0 is taken as 1"
    );
    drop(first);
    let third = enter(r, 1).expect("the batch of 0 gave back its one place");
    drop((second, third));
    rules::load_flow_rules(vec![]).expect("rules clear");
}

#[test]
fn a_batch_blocked_by_a_later_check_gives_its_places_back() {
    let _clock = MockClock::install();
    let r = "parity-acquire-release";
    rules::load_flow_rules(vec![FlowRule::concurrency(r, 10)]).expect("rules load");
    rules::load_hotspot_rules(vec![HotspotRule::qps(r, 0, 5.0)]).expect("rules load");
    let call = |n: u32, user: &str| {
        EntryBuilder::new(r)
            .acquire(n)
            .param(user)
            .enter()
            .map_err(|e| e.kind())
    };
    let a = call(5, "a").expect("5 of 10 places, 5 of a's 5");
    // The concurrency check takes 4 more places, then a's hotspot limit refuses the call.
    assert_eq!(call(4, "a").err(), Some(BlockKind::HotParam));
    let b = call(5, "b").expect("the refused batch gave its 4 places back");
    drop((a, b));
    rules::load_flow_rules(vec![]).expect("rules clear");
    rules::load_hotspot_rules(vec![]).expect("rules clear");
}
