//! Sentinel Java's JSON names for flow, degrade, param-flow, system and authority rules, read into
//! [`FlowRule`], [`CircuitBreakerRule`], [`HotspotRule`], [`SystemRule`] and [`AuthorityRule`]
//! (see [`super::files`] for the mapping).
//!
//! A rule is read with Sentinel's names when it has any field only Sentinel uses
//! ([`sentinel_flow_key`], [`sentinel_degrade_key`], [`sentinel_param_flow_key`],
//! [`sentinel_system_key`], [`sentinel_authority_key`]); it then takes Sentinel's names only (a
//! field of ours in it is refused by name). Every field Sentinel has that we do not support, and
//! every value we do not support (chain strategy, origins on flow rules, cluster mode), is
//! refused by name.
//!
//! Numbers may be given as strings (`"count": "0.0"`, as fastjson reads them), and fields
//! Sentinel writes with no meaning here (`controller`, `passCount`, `regex: false`) are
//! ignored: in Sentinel's names only.
//!
//! Where Sentinel's meaning differs from ours, the value is converted so that the rule behaves
//! as in Sentinel (the table is in [`super::files`]):
//!
//! * **Degrade rules** open *above* `count` in Sentinel, at the threshold here: an error count
//!   `n` reads as `floor(n) + 1`, a ratio as the least `f64` above it (a slow ratio of exactly 1
//!   is kept; an error ratio of 1, which never opens in Sentinel, is refused).
//! * **Param-flow rules** count whole calls (`count` loses its fraction); the rate limiter
//!   (`controlBehavior` 2) paces a value from its first call, read as a threshold per
//!   millisecond (a burst of one), waiting less than `maxQueueingTimeMs`.
//! * **System rules**: Sentinel writes `-1` for a limit it leaves unset, and every negative
//!   value reads as unset. Sentinel's `highestSystemLoad` is the whole machine's load, our
//!   `load_per_core` is per core: it is divided by [`std::thread::available_parallelism()`] (1
//!   if unknown) when the rule is read. `highestCpuUsage` is 0..1 in both.
//! * **Authority rules**: `limitApp` is split on commas and each origin trimmed (`"a, b"` lists
//!   `a` and `b`); `strategy` 0 or `"White"` is an allow-list, 1 or `"Black"` a deny-list. The
//!   rule keeps **our** semantics: a call without an origin is denied by an allow-list (Sentinel
//!   lets it through); `allow_missing` is never set from Sentinel's names.

use std::time::Duration;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;

use super::authority::{AuthorityRule, AuthorityStrategy};
use super::circuit_breaker::{BreakerStrategy, CircuitBreakerRule};
use super::flow::{FlowMetric, FlowRule};
use super::hotspot::{HotspotException, HotspotMetric, HotspotRule};
use super::node::{Node, NodeError};
use super::system::SystemRule;

/// Fields only Sentinel's flow rules have: one of them makes a `flow` rule Sentinel's.
const FLOW_FIELDS: &[&str] = &[
    "count",
    "grade",
    "limitApp",
    "strategy",
    "refResource",
    "controlBehavior",
    "warmUpPeriodSec",
    "maxQueueingTimeMs",
    "clusterMode",
    "clusterConfig",
];

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

/// Fields only Sentinel's param-flow rules have: one of them makes a `hotspot` rule Sentinel's.
const PARAM_FLOW_FIELDS: &[&str] = &[
    "count",
    "grade",
    "paramIdx",
    "limitApp",
    "durationInSec",
    "burstCount",
    "controlBehavior",
    "maxQueueingTimeMs",
    "paramFlowItemList",
    "clusterMode",
    "clusterConfig",
];

/// Fields only Sentinel's system rules have (`qps` is ours too, with the same meaning).
const SYSTEM_FIELDS: &[&str] = &[
    "highestSystemLoad",
    "highestCpuUsage",
    "avgRt",
    "maxThread",
    "resource",
    "limitApp",
];

/// Fields only Sentinel's authority rules have (`strategy` is ours too, as a word).
const AUTHORITY_FIELDS: &[&str] = &["limitApp"];

/// The `classType`s of a param-flow item read as strings (Sentinel's `String.class.getName()`,
/// and the short names people write).
const STRING_CLASS_TYPES: &[&str] = &["java.lang.String", "String", "string"];

/// Sentinel's defaults, for fields it writes on every rule (its JSON serialisers do).
const DEFAULT_WARM_UP_SEC: f64 = 10.0;
const DEFAULT_MAX_QUEUEING_MS: f64 = 500.0;
const DEFAULT_SLOW_RATIO: f64 = 1.0;
/// Sentinel's cold factor (`csp.sentinel.flow.cold.factor`), which its files cannot set.
const COLD_FACTOR: f64 = 3.0;

/// The first field only Sentinel's flow rules have, if the rule has one: it then uses
/// Sentinel's names.
pub(crate) fn sentinel_flow_key(node: &Node) -> Option<&'static str> {
    first_of(node, FLOW_FIELDS)
}

/// The first field only Sentinel's degrade rules have, if the circuit-breaker rule has one: it
/// then uses Sentinel's names.
pub(crate) fn sentinel_degrade_key(node: &Node) -> Option<&'static str> {
    first_of(node, DEGRADE_FIELDS)
}

/// The first field only Sentinel's param-flow rules have, if the hotspot rule has one: it then
/// uses Sentinel's names.
pub(crate) fn sentinel_param_flow_key(node: &Node) -> Option<&'static str> {
    first_of(node, PARAM_FLOW_FIELDS)
}

/// The first field only Sentinel's system rules have, if the rule has one.
pub(crate) fn sentinel_system_key(node: &Node) -> Option<&'static str> {
    first_of(node, SYSTEM_FIELDS)
}

/// The first field only Sentinel's authority rules have, if the rule has one.
pub(crate) fn sentinel_authority_key(node: &Node) -> Option<&'static str> {
    first_of(node, AUTHORITY_FIELDS)
}

/// A system rule's field as Sentinel names it.
pub(crate) fn system_field(field: &str) -> &str {
    match field {
        "cpu_usage" => "highestCpuUsage",
        "load_per_core" => "highestSystemLoad",
        "avg_rt" => "avgRt",
        "concurrency" => "maxThread",
        other => other,
    }
}

/// An authority rule's field as Sentinel names it.
pub(crate) fn authority_field(field: &str) -> &str {
    match field {
        "origins" | "allow_missing" => "limitApp",
        other => other,
    }
}

fn first_of(node: &Node, fields: &[&'static str]) -> Option<&'static str> {
    node.keys()
        .find_map(|k| fields.iter().find(|f| **f == k).copied())
}

/// Sentinel's name for one of our rule fields, in a rule read with Sentinel's names, so a
/// validation error names the field the file has.
pub(crate) fn flow_field(field: &str) -> &str {
    match field {
        "threshold" => "count",
        "metric" => "grade",
        "warm_up" | "cold_factor" => "warmUpPeriodSec",
        "max_wait" => "maxQueueingTimeMs",
        "relate" => "refResource",
        other => other,
    }
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

/// As [`flow_field`], for param-flow rules.
pub(crate) fn param_flow_field(field: &str) -> &str {
    match field {
        "threshold" => "count",
        "param_index" => "paramIdx",
        "metric" => "grade",
        "window" => "durationInSec",
        "burst" => "burstCount",
        "max_wait" => "maxQueueingTimeMs",
        "exceptions" => "paramFlowItemList",
        other => other,
    }
}

/// Sentinel's `ParamFlowRule` as JSON names it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelParamFlowRule {
    resource: String,
    #[serde(deserialize_with = "number")]
    count: f64,
    #[serde(deserialize_with = "number")]
    param_idx: f64,
    #[serde(default, deserialize_with = "opt_number")]
    grade: Option<f64>,
    limit_app: Option<String>,
    #[serde(default, deserialize_with = "opt_number")]
    duration_in_sec: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    burst_count: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    control_behavior: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    max_queueing_time_ms: Option<f64>,
    param_flow_item_list: Option<Vec<SentinelParamFlowItem>>,
    cluster_mode: Option<bool>,
    cluster_config: Option<Node>,
    regex: Option<bool>,
}

/// Sentinel's `ParamFlowItem`: a value with its own threshold.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelParamFlowItem {
    object: String,
    #[serde(deserialize_with = "number")]
    count: f64,
    class_type: Option<String>,
}

/// Sentinel's `FlowRule` as JSON names it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelFlowRule {
    resource: String,
    #[serde(deserialize_with = "number")]
    count: f64,
    #[serde(default, deserialize_with = "opt_number")]
    grade: Option<f64>,
    limit_app: Option<String>,
    #[serde(default, deserialize_with = "opt_number")]
    strategy: Option<f64>,
    ref_resource: Option<String>,
    #[serde(default, deserialize_with = "opt_number")]
    control_behavior: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    warm_up_period_sec: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    max_queueing_time_ms: Option<f64>,
    cluster_mode: Option<bool>,
    cluster_config: Option<Node>,
    regex: Option<bool>,
    /// Sentinel's traffic shaping controller object, which its tests and some serialisers
    /// write (`"controller": null`): built from the other fields, so ignored.
    #[allow(dead_code)]
    controller: Option<IgnoredAny>,
}

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
    pass_count: Option<Node>,
    regex: Option<bool>,
}

fn refuse(field: &str, message: impl Into<String>) -> NodeError {
    NodeError::new(Some(field), message)
}

/// A number as Sentinel's JSON may give it: a number, or a string holding a finite one
/// (fastjson reads both, and Sentinel's own datasource tests write `"count": "0.0"`).
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(NumberVisitor)
}

/// [`number`], or `null` (or absent, with `#[serde(default)]`) for none.
fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(OptNumber)
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number (or a string holding one)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

/// The `Option<f64>` side of [`NumberVisitor`], for [`opt_number`].
impl<'de> Visitor<'de> for OptNumber {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number (or a string holding one), or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        number(d).map(Some)
    }
}

struct OptNumber;

/// Sentinel's `regex` (a resource name that is a regular expression, since 1.8.7; its
/// serialisers write `"regex": false` on every rule): accepted when false.
fn check_regex(regex: Option<bool>) -> Result<(), NodeError> {
    if regex == Some(true) {
        return Err(refuse(
            "regex",
            "is true: resource names as regular expressions are not supported (only false)",
        ));
    }
    Ok(())
}

/// A whole number in `0..=max`, for Sentinel's integer fields (which JSON may write as `10.0`).
fn whole(field: &str, value: f64, max: f64) -> Result<f64, NodeError> {
    if value.is_finite() && value >= 0.0 && value <= max && value.fract() == 0.0 {
        Ok(value)
    } else {
        Err(refuse(
            field,
            format!("must be a whole number in 0..={max}, got {value}"),
        ))
    }
}

/// A whole number in `1..=u32::MAX` of `unit`.
fn positive(field: &str, value: f64, unit: &str) -> Result<f64, NodeError> {
    let max = f64::from(u32::MAX);
    if value.is_finite() && value >= 1.0 && value <= max && value.fract() == 0.0 {
        Ok(value)
    } else {
        Err(refuse(
            field,
            format!("must be a whole number of {unit} in 1..={max}, got {value}"),
        ))
    }
}

/// One of the `codes` (with their meanings, for the message).
fn code(field: &str, value: Option<f64>, default: u8, codes: &str) -> Result<u8, NodeError> {
    match value {
        None => Ok(default),
        Some(v) if v.fract() == 0.0 && (0.0..=255.0).contains(&v) => Ok(v as u8),
        Some(v) => Err(refuse(field, format!("must be {codes}, got {v}"))),
    }
}

fn check_limit_app(limit_app: Option<&str>) -> Result<(), NodeError> {
    match limit_app {
        None | Some("default") => Ok(()),
        Some(other) => Err(refuse(
            "limitApp",
            format!(
                "is `{other}`: limiting by caller origin is not supported yet, only \"default\" \
                 (every caller)"
            ),
        )),
    }
}

/// A field Sentinel writes on every rule with its default: accepted when unused only at that
/// default (another value would be a setting we would silently drop).
fn unused_at_default(
    field: &str,
    value: Option<f64>,
    default: f64,
    used_with: &str,
) -> Result<(), NodeError> {
    match value {
        Some(v) if v != default => Err(refuse(
            field,
            format!(
                "is only used {used_with}; got {v} without it (remove it, or set it to {default})"
            ),
        )),
        _ => Ok(()),
    }
}

/// Refuses Sentinel's cluster flow control (flow and param-flow rules): `clusterMode` true or
/// any `clusterConfig`.
fn check_cluster(cluster_mode: Option<bool>, has_config: bool) -> Result<(), NodeError> {
    if cluster_mode == Some(true) {
        return Err(refuse(
            "clusterMode",
            "is true: cluster flow control is not supported (only false)",
        ));
    }
    if has_config {
        return Err(refuse(
            "clusterConfig",
            "is not supported: cluster flow control is not supported",
        ));
    }
    Ok(())
}

/// Reads a flow rule written with Sentinel's names.
pub(crate) fn flow_rule(node: Node) -> Result<FlowRule, NodeError> {
    let r = SentinelFlowRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    check_cluster(r.cluster_mode, r.cluster_config.is_some())?;
    let metric = match code("grade", r.grade, 1, "0 (thread count) or 1 (QPS)")? {
        0 => FlowMetric::Concurrency,
        1 => FlowMetric::Qps,
        other => {
            return Err(refuse(
                "grade",
                format!("must be 0 (thread count) or 1 (QPS), got {other}"),
            ))
        }
    };
    let mut rule = FlowRule::qps(r.resource, r.count);
    rule.metric = metric;

    let behaviour = code(
        "controlBehavior",
        r.control_behavior,
        0,
        "0 (reject), 1 (warm up), 2 (rate limiter) or 3 (warm up + rate limiter)",
    )?;
    if behaviour > 3 {
        return Err(refuse(
            "controlBehavior",
            format!(
                "must be 0 (reject), 1 (warm up), 2 (rate limiter) or 3 (warm up + rate \
                 limiter), got {behaviour}"
            ),
        ));
    }
    if behaviour != 0 && metric != FlowMetric::Qps {
        return Err(refuse(
            "controlBehavior",
            format!("is {behaviour}: a control behaviour applies to QPS rules (grade 1) only"),
        ));
    }
    let warm_up = behaviour == 1 || behaviour == 3;
    let throttle = behaviour == 2 || behaviour == 3;
    if warm_up {
        let secs = positive(
            "warmUpPeriodSec",
            r.warm_up_period_sec.unwrap_or(DEFAULT_WARM_UP_SEC),
            "seconds of warm-up",
        )?;
        rule = rule.warm_up(Duration::from_secs(secs as u64), COLD_FACTOR);
    } else {
        unused_at_default(
            "warmUpPeriodSec",
            r.warm_up_period_sec,
            DEFAULT_WARM_UP_SEC,
            "with controlBehavior 1 or 3 (warm up)",
        )?;
    }
    if throttle {
        let ms = whole(
            "maxQueueingTimeMs",
            r.max_queueing_time_ms.unwrap_or(DEFAULT_MAX_QUEUEING_MS),
            f64::from(u32::MAX),
        )?;
        rule = rule.throttle(Duration::from_millis(ms as u64));
    } else {
        unused_at_default(
            "maxQueueingTimeMs",
            r.max_queueing_time_ms,
            DEFAULT_MAX_QUEUEING_MS,
            "with controlBehavior 2 or 3 (rate limiter)",
        )?;
    }

    let related = r.ref_resource.filter(|s| !s.is_empty());
    match code(
        "strategy",
        r.strategy,
        0,
        "0 (direct) or 1 (relate); 2 (chain) is not supported",
    )? {
        0 => {
            if let Some(related) = related {
                return Err(refuse(
                    "refResource",
                    format!("(`{related}`) is only used with strategy 1 (relate), got strategy 0"),
                ));
            }
        }
        1 => match related {
            Some(related) => rule = rule.relate(related),
            None => {
                return Err(refuse(
                    "refResource",
                    "is required with strategy 1 (relate): the resource whose traffic counts",
                ))
            }
        },
        2 => {
            return Err(refuse(
                "strategy",
                "is 2 (chain): limiting by calling chain is not supported (0 direct or 1 relate)",
            ))
        }
        other => {
            return Err(refuse(
                "strategy",
                format!("must be 0 (direct) or 1 (relate), got {other}"),
            ))
        }
    }
    Ok(rule)
}

/// Reads a circuit-breaker rule written with Sentinel's (degrade rule) names.
pub(crate) fn degrade_rule(node: Node) -> Result<CircuitBreakerRule, NodeError> {
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

/// Reads a hotspot rule written with Sentinel's (param-flow rule) names.
pub(crate) fn param_flow_rule(node: Node) -> Result<HotspotRule, NodeError> {
    let r = SentinelParamFlowRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    check_cluster(r.cluster_mode, r.cluster_config.is_some())?;
    if r.param_idx < 0.0 {
        return Err(refuse(
            "paramIdx",
            format!(
                "is {}: counting parameters from the end is not supported; the first is 0",
                r.param_idx
            ),
        ));
    }
    let index = whole("paramIdx", r.param_idx, f64::from(u32::MAX))? as usize;
    let metric = match code("grade", r.grade, 1, "0 (thread count) or 1 (QPS)")? {
        0 => HotspotMetric::Concurrency,
        1 => HotspotMetric::Qps,
        other => {
            return Err(refuse(
                "grade",
                format!("must be 0 (thread count) or 1 (QPS), got {other}"),
            ))
        }
    };
    // Sentinel counts whole calls per value: `(long) rule.getCount()`, and `Integer` item counts.
    let mut rule = HotspotRule::qps(r.resource, index, r.count.trunc());
    rule.metric = metric;
    let behaviour = code(
        "controlBehavior",
        r.control_behavior,
        0,
        "0 (reject) or 2 (rate limiter)",
    )?;
    match (behaviour, metric) {
        (0, _) | (2, HotspotMetric::Qps) => {}
        (2, _) => {
            return Err(refuse(
                "controlBehavior",
                "is 2: a control behaviour applies to QPS rules (grade 1) only",
            ))
        }
        (other, _) => {
            return Err(refuse(
                "controlBehavior",
                format!("must be 0 (reject) or 2 (rate limiter), got {other}"),
            ))
        }
    }
    // Sentinel's rate limiter (`passThrottleLocalCheck`) passes a value's first call at once
    // and spaces the next ones `durationInSec / count` apart: a burst of one. Here that is the
    // same spacing as a threshold per millisecond (`count / (1000 x durationInSec)`, at most 1
    // below 1000 calls a second, so a value admits one call from idle).
    let mut per_ms = None;
    if metric == HotspotMetric::Qps {
        let secs = positive("durationInSec", r.duration_in_sec.unwrap_or(1.0), "seconds")?;
        if behaviour == 2 {
            unused_at_default(
                "burstCount",
                r.burst_count,
                0.0,
                "with controlBehavior 0 (Sentinel's rate limiter ignores it)",
            )?;
            per_ms = Some(1_000.0 * secs);
            rule.threshold /= 1_000.0 * secs;
            rule.window = Duration::from_millis(1);
        } else {
            rule.window = Duration::from_secs(secs as u64);
            if let Some(burst) = r.burst_count {
                rule.burst = whole("burstCount", burst, f64::from(u32::MAX))? as u32;
            }
        }
    } else {
        unused_at_default(
            "durationInSec",
            r.duration_in_sec,
            1.0,
            "with grade 1 (QPS)",
        )?;
        unused_at_default("burstCount", r.burst_count, 0.0, "with grade 1 (QPS)")?;
    }
    if behaviour == 2 {
        let ms = whole(
            "maxQueueingTimeMs",
            r.max_queueing_time_ms.unwrap_or(0.0),
            f64::from(u32::MAX),
        )?;
        // Sentinel waits while the wait is *less than* `maxQueueingTimeMs`; ours while it is at
        // most `max_wait`: one nanosecond less.
        rule.max_wait =
            Some(Duration::from_millis(ms as u64).saturating_sub(Duration::from_nanos(1)));
    } else {
        unused_at_default(
            "maxQueueingTimeMs",
            r.max_queueing_time_ms,
            0.0,
            "with controlBehavior 2 (rate limiter)",
        )?;
    }
    for (i, item) in r
        .param_flow_item_list
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if let Some(class) = item
            .class_type
            .filter(|c| !STRING_CLASS_TYPES.contains(&c.as_str()))
        {
            return Err(refuse(
                &format!("paramFlowItemList[{i}].classType"),
                format!(
                    "is `{class}`: only string values are supported (`java.lang.String`), since \
                     a value is matched by hashing it as a string; a `{class}` parameter would \
                     never match"
                ),
            ));
        }
        rule.exceptions.push(HotspotException::from_str_value(
            &item.object,
            item.count.trunc() / per_ms.unwrap_or(1.0),
        ));
    }
    Ok(rule)
}

/// The least ratio above `ratio`: our breakers open at their threshold, Sentinel's above it.
/// Both compute the ratio as the same `f64` division, so "at least `above(r)`" and "more than
/// `r`" decide alike for every count of calls. A ratio outside `0..=1` stays outside (refused by
/// validation, naming Sentinel's field).
fn above(ratio: f64) -> f64 {
    if (0.0..1.0).contains(&ratio) {
        ratio.next_up()
    } else {
        ratio
    }
}

fn unused_slow_ratio(value: Option<f64>) -> Result<(), NodeError> {
    unused_at_default(
        "slowRatioThreshold",
        value,
        DEFAULT_SLOW_RATIO,
        "with grade 0 (slow request ratio)",
    )
}

/// Sentinel's system rule: every limit is a number, negative (Sentinel writes -1) for unset.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelSystemRule {
    #[serde(default, deserialize_with = "opt_number")]
    highest_system_load: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    highest_cpu_usage: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    avg_rt: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    max_thread: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    qps: Option<f64>,
    /// Sentinel's rules all have these; a system rule uses neither.
    resource: Option<Node>,
    limit_app: Option<String>,
    regex: Option<bool>,
}

/// A limit Sentinel leaves unset with a negative value.
fn set_limit(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_nan() || *v >= 0.0)
}

/// Reads a system rule written with Sentinel's names. `highestSystemLoad` is the whole
/// machine's load: it is divided by the host's cores into our `load_per_core`.
pub(crate) fn system_rule(node: Node) -> Result<SystemRule, NodeError> {
    let r = SentinelSystemRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    let _ = r.resource;
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let mut rule = SystemRule::new();
    rule.load_per_core = set_limit(r.highest_system_load).map(|load| load / cores);
    rule.cpu_usage = set_limit(r.highest_cpu_usage);
    rule.avg_rt = match set_limit(r.avg_rt) {
        Some(ms) if ms.is_finite() && ms <= 3_600_000.0 => {
            Some(Duration::from_micros((ms * 1_000.0).round() as u64))
        }
        Some(ms) => {
            return Err(refuse(
                "avgRt",
                format!("must be at most an hour, got {ms}"),
            ))
        }
        None => None,
    };
    rule.concurrency = match set_limit(r.max_thread) {
        Some(n) => Some(whole("maxThread", n, u32::MAX.into())? as u64),
        None => None,
    };
    rule.qps = set_limit(r.qps);
    Ok(rule)
}

/// Sentinel's authority rule: `limitApp` lists origins separated by commas; `strategy` 0 is a
/// white list (the default), 1 a black list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelAuthorityRule {
    resource: String,
    limit_app: String,
    strategy: Option<Node>,
    regex: Option<bool>,
}

/// Reads an authority rule written with Sentinel's names. The origins are split on commas and
/// trimmed (Sentinel does neither per rule, so `"a, b"` never matched `b`). As everywhere here,
/// a call without an origin is denied by a white list (Sentinel passes it).
pub(crate) fn authority_rule(node: Node) -> Result<AuthorityRule, NodeError> {
    let r = SentinelAuthorityRule::deserialize(node)?;
    check_regex(r.regex)?;
    let origins: Vec<&str> = r
        .limit_app
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    let strategy = match &r.strategy {
        None => AuthorityStrategy::Allow,
        Some(Node::U64(0) | Node::I64(0)) => AuthorityStrategy::Allow,
        Some(Node::U64(1) | Node::I64(1)) => AuthorityStrategy::Deny,
        Some(Node::F64(v)) if *v == 0.0 => AuthorityStrategy::Allow,
        Some(Node::F64(v)) if *v == 1.0 => AuthorityStrategy::Deny,
        Some(Node::Str(s)) if s.eq_ignore_ascii_case("white") || s.trim() == "0" => {
            AuthorityStrategy::Allow
        }
        Some(Node::Str(s)) if s.eq_ignore_ascii_case("black") || s.trim() == "1" => {
            AuthorityStrategy::Deny
        }
        Some(_) => {
            return Err(refuse(
                "strategy",
                "must be 0 or \"White\" (only the listed origins pass) or 1 or \"Black\" (the \
                 listed origins are denied)",
            ))
        }
    };
    Ok(match strategy {
        AuthorityStrategy::Deny => AuthorityRule::deny(r.resource, origins),
        _ => AuthorityRule::allow(r.resource, origins),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: &str) -> Node {
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
                r#"{"resource": "a", "count": 1, "limitApp": "app-a"}"#,
                "limitApp",
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
            let json =
                format!(r#"{{"resource": "a", "grade": 1, "timeWindow": 1, "count": {ratio}}}"#);
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
                .concurrency(40))
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
}
