use std::time::Duration;

use crate::kinds::authority::sentinel::{authority_field, authority_rule};
use crate::kinds::circuit_breaker::sentinel::{above, degrade_rule};
use crate::kinds::flow::sentinel::flow_rule;
use crate::kinds::hotspot::sentinel::param_flow_rule;
use crate::kinds::system::sentinel::{system_field, system_rule};
use crate::rule_data::file::value::Value;
use crate::rules::{
    AuthorityRule, BreakerStrategy, CircuitBreakerRule, FlowRule, HotspotRule, SystemRule,
};

fn node(json: &str) -> Value {
    serde_json::from_str(json).expect("test JSON parses")
}

fn flow(json: &str) -> Result<FlowRule, (Option<String>, String)> {
    flow_rule(node(json)).map_err(|e| (e.field(), e.message().to_owned()))
}

fn degrade(json: &str) -> Result<CircuitBreakerRule, (Option<String>, String)> {
    degrade_rule(node(json)).map_err(|e| (e.field(), e.message().to_owned()))
}

fn field<T>(r: Result<T, (Option<String>, String)>) -> String {
    match r {
        Ok(_) => "accepted".into(),
        Err((f, _)) => f.unwrap_or_default(),
    }
}

#[test]
fn flow_rules_map_every_behaviour() {
    let secs = Duration::from_secs;
    let ms = Duration::from_millis;
    assert_eq!(
        flow(r#"{"resource": "a", "count": 20.0}"#),
        Ok(FlowRule::qps("a", 20.0))
    );
    assert_eq!(
        flow(r#"{"resource": "a", "count": 4, "grade": 0}"#),
        Ok(FlowRule::concurrency("a", 4))
    );
    assert_eq!(
        flow(r#"{"resource": "a", "count": 10, "controlBehavior": 1}"#),
        Ok(FlowRule::qps("a", 10.0).warm_up(secs(10), 3.0))
    );
    assert_eq!(
        flow(r#"{"resource": "a", "count": 10, "controlBehavior": 2}"#),
        Ok(FlowRule::qps("a", 10.0).throttle(ms(500)))
    );
    assert_eq!(
        flow(
            r#"{"resource": "a", "count": 10, "controlBehavior": 3, "warmUpPeriodSec": 5,
                   "maxQueueingTimeMs": 20}"#
        ),
        Ok(FlowRule::qps("a", 10.0)
            .warm_up(secs(5), 3.0)
            .throttle(ms(20)))
    );
    assert_eq!(
        flow(r#"{"resource": "a", "count": 10, "strategy": 1, "refResource": "b"}"#),
        Ok(FlowRule::qps("a", 10.0).relate("b"))
    );
    // What Sentinel's own serialisers write for a plain rule.
    assert_eq!(
        flow(
            r#"{"resource": "a", "limitApp": "default", "grade": 1, "count": 5.0,
                   "strategy": 0, "refResource": null, "controlBehavior": 0,
                   "warmUpPeriodSec": 10, "maxQueueingTimeMs": 500, "clusterMode": false,
                   "clusterConfig": null}"#
        ),
        Ok(FlowRule::qps("a", 5.0))
    );
}

#[test]
fn unsupported_flow_fields_and_values_are_refused_by_name() {
    let cases = [
        (
            r#"{"resource": "a", "count": 1, "strategy": 2}"#,
            "strategy",
        ),
        (
            r#"{"resource": "a", "count": 1, "strategy": 1}"#,
            "refResource",
        ),
        (
            r#"{"resource": "a", "count": 1, "refResource": "b"}"#,
            "refResource",
        ),
        (
            r#"{"resource": "a", "count": 1, "clusterMode": true}"#,
            "clusterMode",
        ),
        (
            r#"{"resource": "a", "count": 1, "clusterConfig": {"flowId": 1}}"#,
            "clusterConfig",
        ),
        (r#"{"resource": "a", "count": 1, "grade": 2}"#, "grade"),
        (
            r#"{"resource": "a", "count": 1, "controlBehavior": 4}"#,
            "controlBehavior",
        ),
        (
            r#"{"resource": "a", "count": 1, "grade": 0, "controlBehavior": 1}"#,
            "controlBehavior",
        ),
        (
            r#"{"resource": "a", "count": 1, "warmUpPeriodSec": 30}"#,
            "warmUpPeriodSec",
        ),
        (
            r#"{"resource": "a", "count": 1, "maxQueueingTimeMs": 10}"#,
            "maxQueueingTimeMs",
        ),
        (
            r#"{"resource": "a", "count": 1, "controlBehavior": 2, "maxQueueingTimeMs": -1}"#,
            "maxQueueingTimeMs",
        ),
        (r#"{"resource": "a", "count": 1, "id": 7}"#, "id"),
        (
            r#"{"resource": "a", "count": 1, "threshold": 1}"#,
            "threshold",
        ),
        (r#"{"resource": "a", "grade": 1}"#, "count"),
    ];
    for (json, expected) in cases {
        assert_eq!(field(flow(json)), expected, "{json}");
    }
}

#[test]
fn degrade_rules_map_every_grade() {
    let secs = Duration::from_secs;
    assert_eq!(
        degrade(
            r#"{"resource": "a", "count": 20.0, "grade": 0, "passCount": 0, "timeWindow": 10}"#
        ),
        Ok(
            CircuitBreakerRule::slow_request_ratio("a", Duration::from_millis(20), 1.0)
                .recovery(secs(10))
                .window(secs(1), 1)
        )
    );
    assert_eq!(
        degrade(
            r#"{"resource": "a", "count": 200, "slowRatioThreshold": 0.4, "timeWindow": 5,
                   "minRequestAmount": 10, "statIntervalMs": 20000, "limitApp": "default"}"#
        ),
        Ok(
            CircuitBreakerRule::slow_request_ratio("a", Duration::from_millis(200), above(0.4))
                .recovery(secs(5))
                .min_requests(10)
                .window(secs(20), 1)
        )
    );
    assert_eq!(
        degrade(r#"{"resource": "a", "count": 0.5, "grade": 1, "timeWindow": 3}"#),
        Ok(CircuitBreakerRule::error_ratio("a", 0.5_f64.next_up())
            .recovery(secs(3))
            .window(secs(1), 1))
    );
    assert_eq!(
        degrade(
            r#"{"resource": "a", "count": 7, "grade": 2, "timeWindow": 3, "slowRatioThreshold": 1.0}"#
        ),
        Ok(CircuitBreakerRule::error_count("a", 8)
            .recovery(secs(3))
            .window(secs(1), 1))
    );
}

/// Sentinel opens its breakers *above* `count` (`ExceptionCircuitBreaker`,
/// `ResponseTimeCircuitBreaker`); ours at their threshold: the converter moves each
/// threshold to the least value above Sentinel's.
#[test]
fn degrade_thresholds_keep_sentinel_s_greater_than() {
    let threshold = |json: &str| degrade(json).map(|r| r.strategy);
    let count = |n| BreakerStrategy::ErrorCount { threshold: n };
    for (json_count, opens_at) in [("0", 1), ("5", 6), ("5.5", 6), ("4294967294", u32::MAX)] {
        assert_eq!(
            threshold(&format!(
                r#"{{"resource": "a", "grade": 2, "timeWindow": 1, "count": {json_count}}}"#
            )),
            Ok(count(opens_at)),
            "error count {json_count}"
        );
    }
    assert_eq!(
        field(degrade(
            r#"{"resource": "a", "grade": 2, "timeWindow": 1, "count": 4294967295}"#
        )),
        "count"
    );
    for ratio in [0.0, 0.1, 0.5, 0.999] {
        let json = format!(r#"{{"resource": "a", "grade": 1, "timeWindow": 1, "count": {ratio}}}"#);
        let Ok(BreakerStrategy::ErrorRatio { threshold: t }) = threshold(&json) else {
            panic!("{json}");
        };
        // For every call count up to 1000, "at least t" decides as "more than ratio".
        for total in 1..=1000_u32 {
            for bad in [0, 1, total / 3, total / 2, total / 2 + 1, total - 1, total] {
                let r = f64::from(bad) / f64::from(total);
                assert_eq!(r >= t, r > ratio, "{bad} of {total} against {ratio}");
            }
        }
    }
    // A ratio of 1.0 never opens Sentinel's error-ratio breaker: refused, not changed.
    let refused =
        degrade(r#"{"resource": "a", "grade": 1, "timeWindow": 1, "count": 1.0}"#).unwrap_err();
    assert_eq!(refused.0.as_deref(), Some("count"));
    assert!(refused.1.contains("never opens"), "{}", refused.1);
    // A slow ratio of exactly 1.0 opens Sentinel's breaker at 1.0: kept.
    assert_eq!(
        threshold(r#"{"resource": "a", "grade": 0, "count": 20, "timeWindow": 1}"#),
        Ok(BreakerStrategy::SlowRequestRatio {
            max_rt: Duration::from_millis(20),
            threshold: 1.0
        })
    );
    // Sentinel's max RT is `Math.round(count)` milliseconds.
    assert_eq!(
        threshold(
            r#"{"resource": "a", "grade": 0, "count": 20.5, "timeWindow": 1, "slowRatioThreshold": 0.2}"#
        ),
        Ok(BreakerStrategy::SlowRequestRatio {
            max_rt: Duration::from_millis(21),
            threshold: 0.2_f64.next_up()
        })
    );
}

#[test]
fn numbers_may_be_strings_and_sentinel_s_unused_fields_are_ignored() {
    // Sentinel's datasource tests (sentinel-datasource-redis, -consul) write this rule.
    assert_eq!(
        flow(
            r#"{"resource":"test", "limitApp":"default", "grade":1, "count":"0.0", "strategy":0,
                   "refResource":null, "controlBehavior":0, "warmUpPeriodSec":10,
                   "maxQueueingTimeMs":500, "controller":null}"#
        ),
        Ok(FlowRule::qps("test", 0.0))
    );
    assert_eq!(
        flow(r#"{"resource": "a", "count": " 12.5 ", "grade": "1", "regex": false}"#),
        Ok(FlowRule::qps("a", 12.5))
    );
    assert_eq!(
        degrade(r#"{"resource": "a", "count": "3", "grade": "2", "timeWindow": "10"}"#),
        Ok(CircuitBreakerRule::error_count("a", 4)
            .recovery(Duration::from_secs(10))
            .window(Duration::from_secs(1), 1))
    );
    assert_eq!(
        system(r#"{"highestCpuUsage": "0.8", "maxThread": "-1", "regex": false}"#),
        Ok(SystemRule::new().cpu_usage(0.8))
    );
    assert_eq!(
        authority(r#"{"resource": "r", "limitApp": "a", "strategy": "1"}"#),
        Ok(AuthorityRule::deny("r", ["a"]))
    );
    for (json, bad) in [
        (r#"{"resource": "a", "count": "ten"}"#, "count"),
        (r#"{"resource": "a", "count": "NaN"}"#, "count"),
        (r#"{"resource": "a", "count": ""}"#, "count"),
        (r#"{"resource": "a", "count": 1, "grade": "x"}"#, "grade"),
        (r#"{"resource": "a", "count": 1, "regex": true}"#, "regex"),
        (r#"{"resource": "a", "count": 1, "id": 7}"#, "id"),
    ] {
        assert_eq!(field(flow(json)), bad, "{json}");
    }
}

fn param_flow(json: &str) -> Result<HotspotRule, (Option<String>, String)> {
    param_flow_rule(node(json)).map_err(|e| (e.field(), e.message().to_owned()))
}

/// Sentinel's rate limiter paces from a value's first call: a burst of one, as a
/// threshold per millisecond.
#[test]
fn a_param_flow_rate_limiter_paces_from_the_first_call() {
    let rule = param_flow(
        r#"{"resource": "a", "paramIdx": 0, "count": 5, "controlBehavior": 2,
               "maxQueueingTimeMs": 300, "durationInSec": 2,
               "paramFlowItemList": [{"object": "vip", "count": 40, "classType": "String"}]}"#,
    )
    .unwrap();
    let mut expected = HotspotRule::qps("a", 0, 5.0 / 2_000.0)
        .window(Duration::from_millis(1))
        .throttle(Duration::from_millis(300) - Duration::from_nanos(1))
        .exception("vip", 40.0 / 2_000.0);
    expected.exceptions[0].value_hash = crate::param::hash("vip");
    assert_eq!(rule, expected);
    assert_eq!(
        field(param_flow(
            r#"{"resource": "a", "paramIdx": 0, "count": 5, "controlBehavior": 2, "burstCount": 3}"#
        )),
        "burstCount"
    );
    // Sentinel counts whole calls: `(long) count`.
    assert_eq!(
        param_flow(r#"{"resource": "a", "paramIdx": "0", "count": "2.9"}"#),
        Ok(HotspotRule::qps("a", 0, 2.0))
    );
}

#[test]
fn unsupported_degrade_fields_and_values_are_refused_by_name() {
    let cases = [
        (
            r#"{"resource": "a", "count": 1, "grade": 3, "timeWindow": 1}"#,
            "grade",
        ),
        (
            r#"{"resource": "a", "count": 0.5, "grade": 1}"#,
            "timeWindow",
        ),
        (
            r#"{"resource": "a", "count": -1.5, "grade": 2, "timeWindow": 1}"#,
            "count",
        ),
        (
            r#"{"resource": "a", "count": 1, "grade": 1, "timeWindow": 1, "slowRatioThreshold": 0.2}"#,
            "slowRatioThreshold",
        ),
        (
            r#"{"resource": "a", "count": 1, "timeWindow": 1, "limitApp": "other"}"#,
            "limitApp",
        ),
        (
            r#"{"resource": "a", "count": 1, "timeWindow": 1, "minRequestAmount": -1}"#,
            "minRequestAmount",
        ),
        (
            r#"{"resource": "a", "count": -1, "timeWindow": 1}"#,
            "count",
        ),
        (
            r#"{"resource": "a", "count": 1, "timeWindow": 1, "recovery": "1s"}"#,
            "recovery",
        ),
    ];
    for (json, expected) in cases {
        assert_eq!(field(degrade(json)), expected, "{json}");
    }
}

fn system(json: &str) -> Result<SystemRule, (Option<String>, String)> {
    system_rule(node(json)).map_err(|e| (e.field(), e.message().to_owned()))
}

fn authority(json: &str) -> Result<AuthorityRule, (Option<String>, String)> {
    authority_rule(node(json)).map_err(|e| (e.field(), e.message().to_owned()))
}

#[test]
fn system_rules_read_negative_limits_as_unset_and_load_per_core() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    assert_eq!(
        system(
            r#"{"highestSystemLoad": -1, "highestCpuUsage": -1, "avgRt": -1,
                    "maxThread": -1, "qps": -1}"#
        ),
        Ok(SystemRule::new()),
        "every limit unset (validation then refuses the rule)"
    );
    assert_eq!(
        system(r#"{"highestSystemLoad": -2.5, "highestCpuUsage": 0.75, "qps": 100.5}"#),
        Ok(SystemRule::new().cpu_usage(0.75).qps(100.5))
    );
    assert_eq!(
        system(
            r#"{"resource": null, "limitApp": "default", "highestSystemLoad": 6.0,
                    "avgRt": 150, "maxThread": 40.0}"#
        ),
        Ok(SystemRule::new()
            .load_per_core(6.0 / cores)
            .avg_rt(Duration::from_millis(150))
            .concurrency(41)),
        "Sentinel's maxThread 40 lets a 41st call in"
    );
}

#[test]
fn unsupported_system_fields_and_values_are_refused_by_name() {
    let cases = [
        (
            r#"{"highestCpuUsage": 0.5, "clusterMode": false}"#,
            "clusterMode",
        ),
        (r#"{"highestCpuUsage": 0.5, "cpu_usage": 0.5}"#, "cpu_usage"),
        (r#"{"maxThread": 1.5}"#, "maxThread"),
        (r#"{"avgRt": 1e12}"#, "avgRt"),
        (r#"{"qps": 1, "limitApp": "appA"}"#, "limitApp"),
        (r#"{"highestCpuUsage": "high"}"#, "highestCpuUsage"),
    ];
    for (json, expected) in cases {
        assert_eq!(field(system(json)), expected, "{json}");
    }
    // Our fields map to Sentinel's names in validation errors.
    assert_eq!(system_field("cpu_usage"), "highestCpuUsage");
    assert_eq!(system_field("load_per_core"), "highestSystemLoad");
    assert_eq!(system_field("avg_rt"), "avgRt");
    assert_eq!(system_field("concurrency"), "maxThread");
    assert_eq!(system_field("qps"), "qps");
}

#[test]
fn authority_rules_split_and_trim_limit_app_and_map_the_strategy() {
    for (strategy, deny) in [
        ("", false),
        (r#", "strategy": 0"#, false),
        (r#", "strategy": 0.0"#, false),
        (r#", "strategy": "White""#, false),
        (r#", "strategy": "white""#, false),
        (r#", "strategy": 1"#, true),
        (r#", "strategy": "Black""#, true),
        (r#", "strategy": "BLACK""#, true),
    ] {
        let json = format!(r#"{{"resource": "r", "limitApp": "a, b ,,c"{strategy}}}"#);
        let expected = if deny {
            AuthorityRule::deny("r", ["a", "b", "c"])
        } else {
            AuthorityRule::allow("r", ["a", "b", "c"])
        };
        assert_eq!(authority(&json), Ok(expected), "{json}");
    }
    let rule = authority(r#"{"resource": "r", "limitApp": "a"}"#).unwrap();
    assert!(
        !rule.allow_missing,
        "Sentinel's names keep our semantics: a missing origin is denied"
    );
}

#[test]
fn unsupported_authority_fields_and_values_are_refused_by_name() {
    let cases = [
        (
            r#"{"resource": "r", "limitApp": "a", "strategy": 2}"#,
            "strategy",
        ),
        (
            r#"{"resource": "r", "limitApp": "a", "strategy": "Grey"}"#,
            "strategy",
        ),
        (
            r#"{"resource": "r", "limitApp": "a", "clusterMode": false}"#,
            "clusterMode",
        ),
        (
            r#"{"resource": "r", "limitApp": "a", "origins": ["a"]}"#,
            "origins",
        ),
        (r#"{"resource": "r", "limitApp": ["a"]}"#, "limitApp"),
    ];
    for (json, expected) in cases {
        assert_eq!(field(authority(json)), expected, "{json}");
    }
    assert_eq!(authority_field("origins"), "limitApp");
    assert_eq!(authority_field("resource"), "resource");
}
