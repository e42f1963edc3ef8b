//! Outlier rules through the public API: per-endpoint errors, ejection, the probe, the share
//! bound, the bound on endpoints, the balancer's questions and rule files.

use std::cell::Cell;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, OutlierRule, MAX_ENDPOINTS};
use sentinel_runtime::{metrics, outlier, BlockKind, EntryBuilder};

/// Calls `resource` at `endpoint`: the downstream (counted in `reached`) fails when `fails`.
/// `Err(kind)` when blocked.
fn call(resource: &str, endpoint: &str, fails: bool, reached: &Cell<u32>) -> Result<(), BlockKind> {
    let entry = (EntryBuilder::new(resource).endpoint(endpoint).enter()).map_err(|e| e.kind())?;
    reached.set(reached.get() + 1);
    if fails {
        entry.set_error();
    }
    Ok(())
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn consecutive_errors_eject_an_endpoint_whose_calls_are_then_blocked_without_reaching_it() {
    let clock = MockClock::install();
    const R: &str = "outlier-consecutive";
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(R, 3).recovery(secs(10))
    ])
    .unwrap();
    let reached = Cell::new(0);
    for e in ["b", "c"] {
        call(R, e, false, &reached).unwrap();
    }
    for _ in 0..3 {
        call(R, "a", true, &reached).unwrap();
    }
    assert_eq!(reached.get(), 5);
    for _ in 0..10 {
        assert_eq!(call(R, "a", false, &reached), Err(BlockKind::Outlier));
    }
    assert_eq!(reached.get(), 5, "blocked calls never reach the endpoint");
    assert!(
        call(R, "b", false, &reached).is_ok(),
        "other endpoints pass"
    );
    assert!(
        EntryBuilder::new(R).enter().is_ok(),
        "a call without an endpoint is not checked"
    );
    let err = EntryBuilder::new(R).endpoint("a").enter().unwrap_err();
    assert!(err.to_string().contains("endpoint `a` ejected"), "{err}");
    assert_eq!(err.retry_after(), Some(secs(10)));
    let stats = metrics::snapshot(R).unwrap();
    assert_eq!(stats.block_total_by_rule.outlier, 11);
    assert_eq!(outlier::ejected(R), ["a"]);
    assert!(metrics::outlier_ejections().contains(&(R, 1, 0)));
    let text = metrics::prometheus::encode_text();
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(
        has(&format!(
            "sentinel_block_total{{resource=\"{R}\",rule=\"outlier\"}} 11"
        )),
        "{text}"
    );
    assert!(
        has(&format!(
            "sentinel_outlier_ejections_total{{resource=\"{R}\"}} 1"
        )),
        "{text}"
    );
    // A panic counts as an error too.
    clock.advance(secs(100));
    for _ in 0..3 {
        let _ = std::panic::catch_unwind(|| {
            let _entry = EntryBuilder::new(R).endpoint("b").enter().unwrap();
            panic!("the downstream call panicked");
        });
    }
    assert_eq!(outlier::ejected(R), ["b"]);
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn the_error_ratio_needs_min_requests() {
    let _clock = MockClock::install();
    const R: &str = "outlier-ratio";
    rules::load_outlier_rules(vec![OutlierRule::error_ratio(R, 0.5).min_requests(6)]).unwrap();
    let reached = Cell::new(0);
    call(R, "other", false, &reached).unwrap();
    for fails in [true, true, true, false, false] {
        call(R, "a", fails, &reached).unwrap();
    }
    assert!(
        outlier::ejected(R).is_empty(),
        "5 calls are below min_requests"
    );
    call(R, "a", false, &reached).unwrap();
    assert_eq!(outlier::ejected(R), ["a"], "3 of 6 failed");
    assert_eq!(call(R, "a", false, &reached), Err(BlockKind::Outlier));
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn at_most_the_share_of_endpoints_is_ejected_but_always_one() {
    let _clock = MockClock::install();
    const R: &str = "outlier-share";
    const LONE: &str = "outlier-share-lone";
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(R, 1).max_ejection_percent(0.5),
        OutlierRule::consecutive_errors(LONE, 1).max_ejection_percent(0.5),
    ])
    .unwrap();
    let reached = Cell::new(0);
    for e in ["a", "b", "c"] {
        call(R, e, false, &reached).unwrap();
    }
    for _ in 0..3 {
        for e in ["a", "b", "c"] {
            let _ = call(R, e, true, &reached);
        }
    }
    assert_eq!(
        outlier::ejected(R).len(),
        1,
        "3 endpoints at 0.5: one at a time"
    );
    call(LONE, "only", true, &reached).unwrap();
    assert_eq!(
        outlier::ejected(LONE),
        ["only"],
        "a lone endpoint may be ejected"
    );
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn one_probe_after_the_recovery_brings_the_endpoint_back_or_ejects_it_longer() {
    let clock = MockClock::install();
    const R: &str = "outlier-probe";
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(R, 1).recovery(secs(10))
    ])
    .unwrap();
    let reached = Cell::new(0);
    call(R, "a", true, &reached).unwrap();
    clock.advance(secs(9));
    assert_eq!(call(R, "a", false, &reached), Err(BlockKind::Outlier));
    clock.advance(secs(1));
    // One probe goes through; while it is out, the others are blocked.
    let probe = EntryBuilder::new(R).endpoint("a").enter().unwrap();
    assert_eq!(call(R, "a", false, &reached), Err(BlockKind::Outlier));
    probe.set_error();
    drop(probe);
    // Failed: ejected for twice as long.
    clock.advance(secs(19));
    assert_eq!(call(R, "a", false, &reached), Err(BlockKind::Outlier));
    clock.advance(secs(1));
    assert_eq!(
        outlier::healthy(R, &["a"]),
        ["a"],
        "its ejection is over: probe it"
    );
    call(R, "a", false, &reached).unwrap();
    assert!(outlier::ejected(R).is_empty());
    for _ in 0..5 {
        call(R, "a", false, &reached).unwrap();
    }
    assert!(metrics::outlier_ejections().contains(&(R, 2, 1)));
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn a_flood_of_endpoint_names_keeps_the_table_bounded() {
    let _clock = MockClock::install();
    const R: &str = "outlier-flood";
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(R, 1).max_ejection_percent(1.0)
    ])
    .unwrap();
    let reached = Cell::new(0);
    call(R, "bad", true, &reached).unwrap();
    for i in 0..100_000 {
        call(
            R,
            &format!("10.{}.{}.{}:80", i >> 16, (i >> 8) & 255, i & 255),
            false,
            &reached,
        )
        .unwrap();
    }
    assert_eq!(outlier::tracked_endpoints(R), MAX_ENDPOINTS);
    assert_eq!(
        outlier::ejected(R),
        ["bad"],
        "the flood did not free the ejected endpoint"
    );
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn healthy_filters_the_ejected_and_a_reload_keeps_them() {
    let _clock = MockClock::install();
    const R: &str = "outlier-healthy";
    rules::load_outlier_rules(vec![OutlierRule::consecutive_errors(R, 1)]).unwrap();
    let reached = Cell::new(0);
    for e in ["a", "b", "c", "d"] {
        call(R, e, false, &reached).unwrap();
    }
    call(R, "b", true, &reached).unwrap();
    call(R, "d", true, &reached).unwrap();
    assert_eq!(
        outlier::healthy(R, &["a", "b", "c", "d", "new"]),
        ["a", "c", "new"]
    );
    rules::load_outlier_rules(vec![OutlierRule::consecutive_errors(R, 2)]).unwrap();
    assert_eq!(
        outlier::ejected(R),
        ["b", "d"],
        "a reload keeps the endpoints"
    );
    rules::load_outlier_rules(vec![]).unwrap();
    assert!(outlier::ejected(R).is_empty());
    assert_eq!(outlier::healthy("outlier-never-entered", &["x"]), ["x"]);
}

#[test]
fn outlier_rules_load_from_rule_files() {
    let _clock = MockClock::install();
    let dir = std::env::temp_dir().join(format!("sentinel-outlier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rules.yaml");
    std::fs::write(
        &path,
        "outlier:\n  - resource: outlier-file\n    strategy: { type: consecutive_errors, threshold: 2 }\n    recovery: 5s\n  - resource: outlier-file\n    strategy: { type: error_ratio, threshold: 0.5 }\n    min_requests: 10\n    max_ejection_percent: 0.2\n",
    )
    .unwrap();
    rules::load_file(&path).unwrap();
    assert_eq!(
        rules::outlier_rules(),
        vec![
            OutlierRule::consecutive_errors("outlier-file", 2).recovery(secs(5)),
            OutlierRule::error_ratio("outlier-file", 0.5)
                .min_requests(10)
                .max_ejection_percent(0.2),
        ]
    );
    std::fs::write(
        &path,
        "outlier:\n  - resource: outlier-file\n    strategy: { type: error_ratio, threshold: 2 }\n",
    )
    .unwrap();
    let err = rules::load_file(&path).unwrap_err();
    assert!(err.to_string().contains("threshold"), "{err}");
    assert_eq!(rules::outlier_rules().len(), 2, "the last good set stays");
    rules::load_outlier_rules(vec![]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
