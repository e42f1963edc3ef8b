//! Sentinel's `DegradeRule` read into a [`CircuitBreakerRule`].

use std::time::Duration;

use serde::Deserialize;

use crate::rule_data::file::reader::first_of;

use crate::kinds::circuit_breaker::rule::{BreakerStrategy, CircuitBreakerRule};
use crate::rule_data::file::sentinel_fields::{
    check_limit_app, check_regex, code, number, opt_number, positive, refuse, unused_at_default,
    whole,
};
use crate::rule_data::file::value::{Value, ValueError};

/// Sentinel's default slow ratio, which its serialisers write on every degrade rule.
const DEFAULT_SLOW_RATIO: f64 = 1.0;

/// Sentinel's `DegradeRule` as JSON names it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelDegradeRule {
    resource: String,
    #[serde(deserialize_with = "number")]
    count: f64,
    #[serde(default, deserialize_with = "opt_number")]
    grade: Option<f64>,
    limit_app: Option<String>,
    #[serde(default, deserialize_with = "opt_number")]
    time_window: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    min_request_amount: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    stat_interval_ms: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    slow_ratio_threshold: Option<f64>,
    /// Deprecated in Sentinel (unused since 1.8): accepted and ignored.
    #[allow(dead_code)]
    pass_count: Option<Value>,
    regex: Option<bool>,
}

/// Reads a circuit-breaker rule written with Sentinel's (degrade rule) names.
pub(crate) fn degrade_rule(node: Value) -> Result<CircuitBreakerRule, ValueError> {
    let r = SentinelDegradeRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    let grade = code(
        "grade",
        r.grade,
        0,
        "0 (slow request ratio), 1 (error ratio) or 2 (error count)",
    )?;
    let mut rule = match grade {
        0 => {
            if !(r.count.is_finite() && r.count >= 0.0 && r.count <= 86_400_000.0) {
                return Err(refuse(
                    "count",
                    format!(
                        "(the max response time in ms) must be in 0..=86400000, got {}",
                        r.count
                    ),
                ));
            }
            // Sentinel's `Math.round(count)`: whole milliseconds.
            let max_rt = Duration::from_millis(r.count.round() as u64);
            // Sentinel opens when the slow ratio is above the threshold, or equal to it at
            // exactly 1.0 (`ResponseTimeCircuitBreaker`); ours opens at the threshold.
            let ratio = r.slow_ratio_threshold.unwrap_or(DEFAULT_SLOW_RATIO);
            let threshold = if ratio == 1.0 { ratio } else { above(ratio) };
            CircuitBreakerRule::slow_request_ratio(r.resource, max_rt, threshold)
        }
        1 => {
            unused_slow_ratio(r.slow_ratio_threshold)?;
            // Sentinel opens when the error ratio is above `count` (`ExceptionCircuitBreaker`),
            // so at 1.0 never.
            if r.count == 1.0 {
                return Err(refuse(
                    "count",
                    "is 1.0: Sentinel's error-ratio breaker opens when the ratio is above \
                     `count`, and no ratio is above 1, so this rule never opens (remove it, or \
                     give a ratio below 1)",
                ));
            }
            CircuitBreakerRule::error_ratio(r.resource, above(r.count))
        }
        2 => {
            unused_slow_ratio(r.slow_ratio_threshold)?;
            // Sentinel opens when the error count is above `count` (`ExceptionCircuitBreaker`):
            // at `floor(count) + 1` errors.
            let max = f64::from(u32::MAX - 1);
            if !(r.count.is_finite() && (0.0..=max).contains(&r.count)) {
                return Err(refuse(
                    "count",
                    format!(
                        "(the error count the breaker opens above) must be in 0..={max}, got {}",
                        r.count
                    ),
                ));
            }
            CircuitBreakerRule::error_count(r.resource, r.count.floor() as u32 + 1)
        }
        other => {
            return Err(refuse(
                "grade",
                format!(
                    "must be 0 (slow request ratio), 1 (error ratio) or 2 (error count), got \
                     {other}"
                ),
            ))
        }
    };
    let secs = match r.time_window {
        Some(secs) => positive("timeWindow", secs, "seconds open")?,
        None => {
            return Err(refuse(
                "timeWindow",
                "is required: the seconds the breaker stays open before probing",
            ))
        }
    };
    rule = rule.recovery(Duration::from_secs(secs as u64));
    if let Some(n) = r.min_request_amount {
        rule = rule.min_requests(whole("minRequestAmount", n, f64::from(u32::MAX))? as u32);
    }
    let interval = positive(
        "statIntervalMs",
        r.stat_interval_ms.unwrap_or(1_000.0),
        "milliseconds",
    )?;
    // Sentinel's breakers count in one bucket over the interval.
    rule = rule.window(Duration::from_millis(interval as u64), 1);
    Ok(rule)
}

/// The least ratio above `ratio`: our breakers open at their threshold, Sentinel's above it.
/// Both compute the ratio as the same `f64` division, so "at least `above(r)`" and "more than
/// `r`" decide alike for every count of calls. A ratio outside `0..=1` stays outside (refused by
/// validation, naming Sentinel's field).
pub(crate) fn above(ratio: f64) -> f64 {
    if (0.0..1.0).contains(&ratio) {
        ratio.next_up()
    } else {
        ratio
    }
}

fn unused_slow_ratio(value: Option<f64>) -> Result<(), ValueError> {
    unused_at_default(
        "slowRatioThreshold",
        value,
        DEFAULT_SLOW_RATIO,
        "with grade 0 (slow request ratio)",
    )
}

/// Fields only Sentinel's degrade rules have: one of them makes a `circuit_breaker` rule
/// Sentinel's.
const DEGRADE_FIELDS: &[&str] = &[
    "count",
    "grade",
    "limitApp",
    "timeWindow",
    "minRequestAmount",
    "statIntervalMs",
    "slowRatioThreshold",
    "passCount",
];

/// The first field only Sentinel's degrade rules have, if the circuit-breaker rule has one: it
/// then uses Sentinel's names.
pub(crate) fn sentinel_degrade_key(node: &Value) -> Option<&'static str> {
    first_of(node, DEGRADE_FIELDS)
}

/// As [`flow_field`], for degrade rules (`count` is the max RT of a slow-ratio rule, whose
/// threshold is `slowRatioThreshold`).
pub(crate) fn degrade_field<'a>(rule: &CircuitBreakerRule, field: &'a str) -> &'a str {
    let slow = matches!(rule.strategy, BreakerStrategy::SlowRequestRatio { .. });
    match field {
        "threshold" if slow => "slowRatioThreshold",
        "threshold" | "max_rt" => "count",
        "min_requests" => "minRequestAmount",
        "window" | "sample_count" => "statIntervalMs",
        "recovery" => "timeWindow",
        other => other,
    }
}
