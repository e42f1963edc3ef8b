//! Sentinel's `FlowRule` read into a [`FlowRule`].

use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::rule_data::file::reader::first_of;

use crate::kinds::flow::origin_rule::FlowOrigin;
use crate::kinds::flow::rule::{FlowMetric, FlowRule};
use crate::rule_data::cluster::ClusterFallback;
use crate::rule_data::file::sentinel_cluster::{cluster, ClusterConfig, SentinelClusterFlowConfig};
use crate::rule_data::file::sentinel_fields::{
    check_regex, code, number, opt_number, positive, refuse, unused_at_default,
};
use crate::rule_data::file::value::{Value, ValueError};

/// Sentinel's defaults, for fields it writes on every rule (its JSON serialisers do).
const DEFAULT_WARM_UP_SEC: f64 = 10.0;
const DEFAULT_MAX_QUEUEING_MS: f64 = 500.0;
/// Sentinel's cold factor (`csp.sentinel.flow.cold.factor`), which its files cannot set.
const COLD_FACTOR: f64 = 3.0;

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
    cluster_config: Option<SentinelClusterFlowConfig>,
    regex: Option<bool>,
    /// Sentinel's traffic shaping controller object, which its tests and some serialisers
    /// write (`"controller": null`): built from the other fields, so ignored.
    #[allow(dead_code)]
    controller: Option<IgnoredAny>,
}

/// Reads a flow rule written with Sentinel's names.
pub(crate) fn flow_rule(node: Value) -> Result<FlowRule, ValueError> {
    let r = SentinelFlowRule::deserialize(node)?;
    check_regex(r.regex)?;
    // Sentinel's `fallbackToLocalWhenFail` is true unless given on flow rules.
    let cluster = cluster(
        r.cluster_mode,
        r.cluster_config.map(ClusterConfig::from),
        ClusterFallback::Local,
    )?;
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
        // Sentinel's `FlowRuleUtil.checkControlBehaviorField` refuses a rate limiter that
        // cannot queue (`maxQueueingTimeMs` 0).
        let ms = positive(
            "maxQueueingTimeMs",
            r.max_queueing_time_ms.unwrap_or(DEFAULT_MAX_QUEUEING_MS),
            "milliseconds with controlBehavior 2 or 3 (rate limiter)",
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
    if let Some((threshold, fallback)) = cluster {
        rule.cluster = Some(threshold);
        rule.cluster_fallback = fallback;
    }
    // Sentinel's `limitApp`: "default" every caller, "other" each origin no other rule names,
    // else one origin's calls (validation names `limitApp` for what it refuses).
    if let Some(limit_app) = &r.limit_app {
        rule.origin = FlowOrigin::from_limit_app(limit_app);
    }
    Ok(rule)
}

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

/// The first field only Sentinel's flow rules have, if the rule has one: it then uses
/// Sentinel's names.
pub(crate) fn sentinel_flow_key(node: &Value) -> Option<&'static str> {
    first_of(node, FLOW_FIELDS)
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
