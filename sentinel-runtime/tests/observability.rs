//! The `tracing` events and the overflow metric, in a process of their own (the cap on resources
//! is process-wide). Every test installs the mock clock, which also runs them one at a time.
#![cfg(all(feature = "tracing", feature = "prometheus"))]

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, metrics, registry};

mod common;

use common::Recorder;

#[test]
fn an_overload_of_blocked_calls_gives_one_event_a_second() {
    const R: &str = "trace-overload";
    let clock = MockClock::install();
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        rules::load_flow_rules(vec![FlowRule::qps(R, 0.0)]).unwrap();
        for _ in 0..10_000 {
            assert!(entry(R).is_err());
            clock.advance(Duration::from_micros(50)); // 10 000 calls in half a second
        }
        let blocks = recorder.with("calls blocked");
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        assert_eq!(blocks[0]["resource"], R);
        assert_eq!(blocks[0]["rule"], "flow");
        assert_eq!(blocks[0]["blocked"], "1", "the first block of the second");

        clock.advance(Duration::from_secs(1));
        assert!(entry(R).is_err());
        let blocks = recorder.with("calls blocked");
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!(blocks[1]["blocked"], "10000", "9 999 unreported + this one");
        assert_eq!(blocks[1]["flow"], "10000");
        assert_eq!(blocks[1]["concurrency"], "0");
        rules::load_flow_rules(vec![]).unwrap();
    });
    assert_eq!(metrics::snapshot(R).unwrap().block_total, 10_001);
}

#[test]
fn block_events_are_info_by_default_and_their_level_is_the_users_choice() {
    const R: &str = "trace-block-level";
    const B: &str = "trace-block-level-breaker";
    let clock = MockClock::install();
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        rules::load_flow_rules(vec![FlowRule::qps(R, 0.0)]).unwrap();
        let rule = CircuitBreakerRule::error_count(B, 1)
            .min_requests(1)
            .recovery(Duration::from_secs(1));
        rules::load_circuit_breaker_rules(vec![rule]).unwrap();
        entry(B).unwrap().set_error(); // opens the breaker
        assert!(entry(R).is_err());
        let levels = |message: &str| -> Vec<String> {
            recorder
                .with(message)
                .iter()
                .map(|e| e["level"].clone())
                .collect()
        };
        assert_eq!(levels("calls blocked"), ["INFO"], "a block is routine");
        assert_eq!(levels("circuit breaker transition"), ["WARN"]);

        metrics::set_block_event_level(Some(tracing::Level::WARN));
        clock.advance(Duration::from_secs(1));
        assert!(entry(R).is_err());
        assert_eq!(levels("calls blocked"), ["INFO", "WARN"]);

        metrics::set_block_event_level(None);
        clock.advance(Duration::from_secs(1));
        assert!(entry(R).is_err());
        assert_eq!(levels("calls blocked"), ["INFO", "WARN"], "turned off");

        metrics::set_block_event_level(Some(tracing::Level::INFO));
        rules::load_flow_rules(vec![]).unwrap();
        rules::load_circuit_breaker_rules(vec![]).unwrap();
    });
    assert_eq!(metrics::snapshot(R).unwrap().block_total, 3);
}

#[test]
fn a_rule_that_matches_nothing_is_listed_and_warned_about_with_a_did_you_mean() {
    const ROUTE: &str = "GET:/unmatched-users/{id}";
    const TYPO: &str = "GET:/unmatched-users/:id"; // axum 0.7's syntax
    let clock = MockClock::install();
    let recorder = Recorder::default();
    // The warning comes from the library's reporter thread: this recorder is the process's
    // default (the only test here that sets one; the others scope theirs to their thread).
    tracing::subscriber::set_global_default(recorder.clone()).unwrap();
    tracing::subscriber::with_default(recorder.clone(), || {
        drop(entry(ROUTE)); // the route the service really serves
        rules::set_unmatched_grace(Duration::from_secs(30));
        rules::load_flow_rules(vec![FlowRule::qps(TYPO, 5.0), FlowRule::qps(ROUTE, 5.0)]).unwrap();
        assert_eq!(
            rules::unmatched(),
            [TYPO, ROUTE],
            "nothing entered since the load"
        );
        drop(entry(ROUTE));
        assert_eq!(rules::unmatched(), [TYPO]);
        let text = metrics::prometheus::encode_text();
        assert!(text.contains("sentinel_rules_unmatched 1"), "{text}");

        // Within the grace period nothing is said; after it, one warning with the route meant.
        clock.advance(Duration::from_secs(29));
        assert!(recorder.with("rules name a resource").is_empty());
        clock.advance(Duration::from_secs(2));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let warnings = loop {
            let warnings = recorder.with("rules name a resource");
            if !warnings.is_empty() || std::time::Instant::now() > deadline {
                break warnings;
            }
            std::thread::sleep(Duration::from_millis(5)); // polling the reporter thread
        };
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0]["resource"], TYPO);
        assert_eq!(warnings[0]["did_you_mean"], ROUTE);
        assert_eq!(warnings[0]["level"], "WARN");

        rules::set_unmatched_grace(rules::DEFAULT_UNMATCHED_GRACE);
        rules::load_flow_rules(vec![]).unwrap();
        assert!(rules::unmatched().is_empty());
    });
}

#[test]
fn breaker_transitions_and_rule_loads_are_reported() {
    const B: &str = "trace-breaker";
    let clock = MockClock::install();
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        let rule = CircuitBreakerRule::error_count(B, 1)
            .min_requests(1)
            .recovery(Duration::from_secs(1));
        rules::load_circuit_breaker_rules(vec![rule]).unwrap();
        let bad = rules::load_flow_rules(vec![FlowRule::qps(B, -1.0)]).unwrap_err();
        entry(B).unwrap().set_error();
        clock.advance(Duration::from_secs(2));
        drop(entry(B).unwrap()); // the probe closes the breaker again

        let loads = recorder.with("rules loaded");
        assert!(
            loads.iter().any(|e| e["kind"] == "circuit_breaker"),
            "{loads:?}"
        );
        let refused = recorder.with("rules refused");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0]["kind"], "flow");
        assert_eq!(refused[0]["error"], bad.to_string());

        let transitions: Vec<(String, String)> = recorder
            .with("circuit breaker transition")
            .into_iter()
            .filter(|e| e["resource"] == B)
            .map(|e| (e["from"].clone(), e["to"].clone()))
            .collect();
        let expected = [
            ("closed", "open"),
            ("open", "half_open"),
            ("half_open", "closed"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect();
        assert_eq!(transitions, expected);
        rules::load_circuit_breaker_rules(vec![]).unwrap();
    });
    let counted: Vec<_> = metrics::circuit_breaker_transitions()
        .into_iter()
        .filter(|t| t.0 == B)
        .collect();
    assert_eq!(counted.len(), 3, "{counted:?}");
    assert!(counted.iter().all(|t| t.3 == 1), "{counted:?}");
}

#[test]
fn resources_beyond_the_cap_are_counted_and_reported_once_a_second() {
    let clock = MockClock::install();
    let recorder = Recorder::default();
    let before = metrics::overflow().pass_total;
    let max = registry::max_resources();
    registry::set_max_resources(0);
    tracing::subscriber::with_default(recorder.clone(), || {
        for i in 0..100 {
            drop(entry(&format!("trace-overflow-{i}")).unwrap());
        }
        assert_eq!(recorder.with("resource beyond the cap").len(), 1);
        clock.advance(Duration::from_secs(1));
        drop(entry("trace-overflow-last").unwrap());
        assert_eq!(recorder.with("resource beyond the cap").len(), 2);
    });
    registry::set_max_resources(max);
    assert_eq!(metrics::overflow().pass_total, before + 101);
    let text = metrics::prometheus::encode_text();
    let line = format!("sentinel_resource_overflow_total {}", before + 101);
    assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
}
