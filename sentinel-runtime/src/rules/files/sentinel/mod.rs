//! Sentinel Java's JSON names for flow, degrade, param-flow, system and authority rules, read into
//! [`FlowRule`], [`CircuitBreakerRule`], [`HotspotRule`], [`SystemRule`] and [`AuthorityRule`]
//! (see [`super`] for the mapping).
//!
//! A rule is read with Sentinel's names when it has any field only Sentinel uses
//! ([`sentinel_flow_key`], [`sentinel_degrade_key`], [`sentinel_param_flow_key`],
//! [`sentinel_system_key`], [`sentinel_authority_key`]); it then takes Sentinel's names only (a
//! field of ours in it is refused by name). Every field Sentinel has that we do not support, and
//! every value we do not support (chain strategy), is refused by name.
//!
//! Numbers may be given as strings (`"count": "0.0"`, as fastjson reads them), and fields
//! Sentinel writes with no meaning here (`controller`, `passCount`, `regex: false`) are
//! ignored: in Sentinel's names only.
//!
//! Where Sentinel's meaning differs from ours, the value is converted so that the rule behaves
//! as in Sentinel (the table is in [`super`]):
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
//! * **Cluster rules** (`clusterMode: true` with a `clusterConfig`, on flow and param-flow QPS
//!   rules): `thresholdType` 0 (Sentinel's default, `FLOW_THRESHOLD_AVG_LOCAL`) is
//!   [`ClusterThreshold::PerInstance`](crate::rules::ClusterThreshold::PerInstance), 1
//!   (`FLOW_THRESHOLD_GLOBAL`) is [`Global`](crate::rules::ClusterThreshold::Global);
//!   `fallbackToLocalWhenFail` true is [`ClusterFallback::Local`](crate::rules::ClusterFallback),
//!   false is `Pass`, and absent it is Sentinel's default for the kind (true on flow rules, false
//!   on param-flow rules). The token server's fields are ignored (see `cluster`).

mod cluster;
mod degrade;
mod fields;
mod flow;
mod param_flow;
mod system;
#[cfg(test)]
mod tests;

use super::value::Value;
use crate::kinds::circuit_breaker::rule::{BreakerStrategy, CircuitBreakerRule};

pub(crate) use degrade::degrade_rule;
pub(crate) use flow::flow_rule;
pub(crate) use param_flow::param_flow_rule;
pub(crate) use system::{authority_rule, system_rule};

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

/// The first field only Sentinel's flow rules have, if the rule has one: it then uses
/// Sentinel's names.
pub(crate) fn sentinel_flow_key(node: &Value) -> Option<&'static str> {
    first_of(node, FLOW_FIELDS)
}

/// The first field only Sentinel's degrade rules have, if the circuit-breaker rule has one: it
/// then uses Sentinel's names.
pub(crate) fn sentinel_degrade_key(node: &Value) -> Option<&'static str> {
    first_of(node, DEGRADE_FIELDS)
}

/// The first field only Sentinel's param-flow rules have, if the hotspot rule has one: it then
/// uses Sentinel's names.
pub(crate) fn sentinel_param_flow_key(node: &Value) -> Option<&'static str> {
    first_of(node, PARAM_FLOW_FIELDS)
}

/// The first field only Sentinel's system rules have, if the rule has one.
pub(crate) fn sentinel_system_key(node: &Value) -> Option<&'static str> {
    first_of(node, SYSTEM_FIELDS)
}

/// The first field only Sentinel's authority rules have, if the rule has one.
pub(crate) fn sentinel_authority_key(node: &Value) -> Option<&'static str> {
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

fn first_of(node: &Value, fields: &[&'static str]) -> Option<&'static str> {
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
        "cluster" => "clusterMode",
        "cluster_fallback" => "clusterConfig.fallbackToLocalWhenFail",
        "origin" => "limitApp",
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
        "cluster" => "clusterMode",
        "cluster_fallback" => "clusterConfig.fallbackToLocalWhenFail",
        other => other,
    }
}
