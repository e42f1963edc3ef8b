//! `hotspot(...)` and `params = [...]` of the attribute: per-value limits written on the function,
//! and arguments passed as parameters for hotspot rules loaded at run time. Time from the
//! MockClock (installing it also serialises these tests).

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::{sentinel, BlockError, BlockKind};

#[sentinel(
    resource = "attr-hot-per-user",
    hotspot(param = user_id, qps = 10, burst = 5, window = "1s", capacity = 50000)
)]
fn per_user(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

#[test]
fn each_user_gets_threshold_plus_burst_then_threshold_per_window() {
    let clock = MockClock::install();
    for user in 0..50u64 {
        let passed = (0..40).filter(|_| per_user(user).is_ok()).count();
        assert_eq!(passed, 15, "user {user}: qps 10 + burst 5 from idle");
    }
    let err = per_user(7).unwrap_err();
    assert_eq!(err.kind(), BlockKind::HotParam);
    // A second later each user has 10 more (evenly spaced: the burst is spent).
    clock.advance(Duration::from_secs(1));
    for user in 0..50u64 {
        let passed = (0..40).filter(|_| per_user(user).is_ok()).count();
        assert_eq!(passed, 10, "user {user}: one window later");
    }
    // A new user is limited on its own.
    assert_eq!((0..40).filter(|_| per_user(1_000).is_ok()).count(), 15);
}

#[sentinel(resource = "attr-hot-nested", hotspot(param = tenant, concurrency = 2), fallback = nested_busy)]
fn nested(tenant: &str, depth: u32) -> u32 {
    // Each level stays inside while the next one enters.
    if depth == 0 {
        0
    } else {
        1 + nested(tenant, depth - 1)
    }
}

fn nested_busy(_tenant: &str, _depth: u32, e: BlockError) -> u32 {
    assert_eq!(e.kind(), BlockKind::HotParam);
    0
}

#[test]
fn concurrency_is_per_value() {
    let _clock = MockClock::install();
    // Depth 5 asks for 6 calls inside at once: the third is blocked, so two levels count.
    assert_eq!(nested("acme", 5), 2);
    assert_eq!(nested("other", 5), 2);
    // Nothing leaked: each tenant has its two places back.
    assert_eq!(nested("acme", 1), 1);
}

#[sentinel(resource = "attr-hot-params", params = [user_id, region])]
fn lookup(user_id: u64, region: &str) -> Result<(), BlockError> {
    let _ = (user_id, region);
    Ok(())
}

#[test]
fn params_without_a_default_rule_are_there_for_loaded_rules() {
    let clock = MockClock::install();
    // No rule yet: no limit.
    assert!((0..100).all(|_| lookup(1, "eu").is_ok()));
    // Region is index 1 (`params = [user_id, region]`); "vip" is an exception, hashed as a string.
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("attr-hot-params", 1, 3.0).exception("vip", 6.0)
    ])
    .unwrap();
    clock.advance(Duration::from_secs(1));
    let passed = |region: &str| (0..20).filter(|_| lookup(9, region).is_ok()).count();
    assert_eq!(passed("eu"), 3);
    assert_eq!(passed("us"), 3);
    assert_eq!(passed("vip"), 6);
    // Different users in one region share the region's limit.
    assert_eq!(lookup(10, "eu").unwrap_err().kind(), BlockKind::HotParam);
    rules::load_hotspot_rules(vec![]).unwrap();
    assert!((0..100).all(|_| lookup(1, "eu").is_ok()));
}

#[sentinel(
    resource = "attr-hot-mixed",
    params = [region],
    hotspot(param = user_id, qps = 2),
    hotspot(param = region, concurrency = 100)
)]
async fn mixed(user_id: String, region: &'static str) -> Result<usize, BlockError> {
    Ok(user_id.len() + region.len())
}

#[tokio::test]
async fn async_functions_and_indexes_by_first_mention() {
    let _clock = MockClock::install();
    // `region` is index 0 (first in `params`), `user_id` index 1.
    assert_eq!(mixed("ann".into(), "eu").await, Ok(5));
    assert!(mixed("ann".into(), "us").await.is_ok());
    assert_eq!(
        mixed("ann".into(), "eu").await.unwrap_err().kind(),
        BlockKind::HotParam
    );
    assert!(mixed("bob".into(), "eu").await.is_ok());
    // A loaded rule on index 1 is on `user_id` and replaces the attribute's hotspot limits.
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("attr-hot-mixed", 1, 0.0).exception(&String::from("carol"), 1.0)
    ])
    .unwrap();
    assert!(mixed("bob".into(), "eu").await.is_err());
    assert!(mixed("carol".into(), "eu").await.is_ok());
    rules::load_hotspot_rules(vec![]).unwrap();
}
