//! What a QPS hotspot rule admits in any interval, in its default (token-bucket) mode and its
//! strict mode, through the public API, the attribute and rule files. Time from the MockClock
//! (installing it also serialises these tests).

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule, RuleSet};
use sentinel_runtime::{sentinel, BlockError, BlockKind, EntryBuilder};

/// A client that tries one value 20 times every 10 ms for `ms` milliseconds: the times (ms from
/// the start) of the calls that passed.
fn hammer(call: impl Fn() -> bool, clock: &MockClock, ms: u64) -> Vec<u64> {
    let mut passed = Vec::new();
    for tick in 0..ms / 10 {
        for _ in 0..20 {
            if call() {
                passed.push(tick * 10);
            }
        }
        clock.advance(Duration::from_millis(10));
    }
    passed
}

/// The most passes in any half-open interval `[t, t + len_ms)`: a reference that counts every
/// such interval (the busiest one starts at a pass).
fn busiest(passed: &[u64], len_ms: u64) -> usize {
    passed
        .iter()
        .map(|&start| {
            passed
                .iter()
                .filter(|&&t| t >= start && t - start < len_ms)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn the_default_mode_admits_19_in_0_9_s_and_the_strict_one_10_in_any_second() {
    let clock = MockClock::install();
    let profiles = |resource: &'static str| {
        move || EntryBuilder::new(resource).param("user-1").enter().is_ok()
    };
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("hot-strict-default", 0, 10.0),
        HotspotRule::qps("hot-strict-on", 0, 10.0).strict(true),
    ])
    .unwrap();
    // Default: 10 at once from idle, then one every 100 ms: 19 in [0, 900 ms], as documented
    // (N + burst + floor(L / T) = 10 + 0 + 9).
    let default = hammer(profiles("hot-strict-default"), &clock, 3_000);
    let in_0_9_s = default.iter().filter(|&&t| t <= 900).count();
    assert_eq!(in_0_9_s, 19, "default mode: {default:?}");
    assert_eq!(busiest(&default, 1_000), 19, "{default:?}");

    let t0 = clock.elapsed();
    let strict = hammer(profiles("hot-strict-on"), &clock, 3_000);
    assert_eq!(
        busiest(&strict, 1_000),
        10,
        "strict: at most 10 in any second (from {t0:?}): {strict:?}"
    );
    // Sustained, it is still 10 a second: one every 100 ms from the first call.
    assert_eq!(strict.len(), 30, "{strict:?}");
    assert_eq!(
        strict,
        (0..30).map(|i| i * 100).collect::<Vec<_>>(),
        "evenly spaced"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn a_strict_burst_passes_at_once_and_trades_the_sustained_rate() {
    let clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-strict-burst", 0, 10.0)
        .burst(4)
        .strict(true)])
    .unwrap();
    let call = || {
        EntryBuilder::new("hot-strict-burst")
            .param(&7u64)
            .enter()
            .is_ok()
    };
    let passed = hammer(call, &clock, 5_000);
    assert_eq!(
        passed.iter().filter(|&&t| t == 0).count(),
        5,
        "1 + burst at once: {passed:?}"
    );
    assert!(busiest(&passed, 1_000) <= 10, "{passed:?}");
    // Then 10 - 4 = 6 a second.
    let last_second = passed.iter().filter(|&&t| t >= 4_000).count();
    assert!((5..=7).contains(&last_second), "{last_second}: {passed:?}");
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn strict_limits_are_checked_by_field() {
    let _clock = MockClock::install();
    let refused = |rule: HotspotRule| rules::load_hotspot_rules(vec![rule]).unwrap_err();
    assert_eq!(
        refused(
            HotspotRule::qps("hot-strict-bad", 0, 5.0)
                .burst(5)
                .strict(true)
        )
        .field(),
        "burst",
        "1 + burst at once must fit in the threshold"
    );
    assert_eq!(
        refused(
            HotspotRule::qps("hot-strict-bad", 0, 5.0)
                .burst(2)
                .strict(true)
                .exception("slow", 2.0)
        )
        .field(),
        "exceptions"
    );
    assert_eq!(
        refused(HotspotRule::concurrency("hot-strict-bad", 0, 2).strict(true)).field(),
        "strict"
    );
    assert_eq!(
        refused(
            HotspotRule::qps("hot-strict-bad", 0, 5.0)
                .strict(true)
                .throttle(Duration::from_millis(10))
        )
        .field(),
        "max_wait",
        "calls are admitted or refused at once"
    );
    HotspotRule::qps("hot-strict-ok", 0, 0.5)
        .strict(true)
        .validate()
        .expect("a threshold below 1: one call per window / threshold");
    HotspotRule::qps("hot-strict-ok", 0, 5.0)
        .burst(4)
        .strict(true)
        .exception("blocked", 0.0)
        .validate()
        .expect("a threshold of 0 blocks the value, whatever the burst");
}

#[test]
fn rule_files_take_strict_on_hotspot_rules() {
    let clock = MockClock::install();
    let set = RuleSet::from_yaml(
        "hotspot:\n  - resource: hot-strict-file\n    param_index: 0\n    threshold: 3\n    \
         strict: true\n  - resource: hot-strict-file-default\n    param_index: 0\n    \
         threshold: 3\n",
    )
    .unwrap();
    assert_eq!(
        set.hotspot,
        vec![
            HotspotRule::qps("hot-strict-file", 0, 3.0).strict(true),
            HotspotRule::qps("hot-strict-file-default", 0, 3.0),
        ]
    );
    let json = set.to_json().unwrap();
    assert_eq!(json.matches("\"strict\": true").count(), 1, "{json}");
    assert_eq!(RuleSet::from_json(&json).unwrap().hotspot, set.hotspot);
    let err = RuleSet::from_yaml(
        "hotspot:\n  - { resource: r, param_index: 0, threshold: 3, burst: 3, strict: true }\n",
    )
    .unwrap_err();
    assert_eq!(err.entries()[0].field.as_deref(), Some("burst"), "{err}");
    let err = RuleSet::from_yaml(
        "hotspot:\n  - { resource: r, param_index: 0, threshold: 3, strict: yes please }\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("strict"), "{err}");

    rules::load(set).unwrap();
    let call = || {
        EntryBuilder::new("hot-strict-file")
            .param("v")
            .enter()
            .is_ok()
    };
    let passed = hammer(call, &clock, 3_000);
    assert_eq!(busiest(&passed, 1_000), 3, "{passed:?}");
    rules::load(RuleSet::default()).unwrap();
}

#[sentinel(
    resource = "attr-hot-strict",
    hotspot(param = user, qps = 4, burst = 1, strict = true)
)]
fn strict_per_user(user: &str) -> Result<(), BlockError> {
    let _ = user;
    Ok(())
}

#[test]
fn the_attribute_takes_strict() {
    let clock = MockClock::install();
    let call = || match strict_per_user("ann") {
        Ok(()) => true,
        Err(e) => {
            assert_eq!(e.kind(), BlockKind::HotParam);
            false
        }
    };
    let passed = hammer(call, &clock, 4_000);
    assert_eq!(
        passed.iter().filter(|&&t| t == 0).count(),
        2,
        "1 + burst: {passed:?}"
    );
    assert_eq!(busiest(&passed, 1_000), 4, "{passed:?}");
}
