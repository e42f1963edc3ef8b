//! Sentinel's `ParamFlowRule` read into a [`HotspotRule`].

use std::time::Duration;

use serde::Deserialize;

use crate::rule_data::file::reader::first_of;

use crate::kinds::hotspot::rule::{HotspotException, HotspotMetric, HotspotRule};
use crate::rule_data::cluster::ClusterFallback;
use crate::rule_data::file::sentinel_cluster::{
    cluster, ClusterConfig, SentinelParamFlowClusterConfig,
};
use crate::rule_data::file::sentinel_fields::{
    check_limit_app, check_regex, code, number, opt_number, positive, refuse, unused_at_default,
    whole,
};
use crate::rule_data::file::value::{Value, ValueError};

/// The `classType`s of a param-flow item read as strings (Sentinel's `String.class.getName()`,
/// and the short names people write). A blank `classType` (`""`) is a string too, as in
/// Sentinel's `ParamFlowRuleUtil.parseValue`.
const STRING_CLASS_TYPES: &[&str] = &["java.lang.String", "String", "string"];

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
    cluster_config: Option<SentinelParamFlowClusterConfig>,
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

/// Reads a hotspot rule written with Sentinel's (param-flow rule) names.
pub(crate) fn param_flow_rule(node: Value) -> Result<HotspotRule, ValueError> {
    let r = SentinelParamFlowRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    // Sentinel's `fallbackToLocalWhenFail` is false unless given on param-flow rules: such a
    // rule passes every call while the cluster cannot be reached.
    let cluster = cluster(
        r.cluster_mode,
        r.cluster_config.map(ClusterConfig::from),
        ClusterFallback::Pass,
    )?;
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
            .filter(|c| !c.trim().is_empty() && !STRING_CLASS_TYPES.contains(&c.as_str()))
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
    if let Some((threshold, fallback)) = cluster {
        rule.cluster = Some(threshold);
        rule.cluster_fallback = fallback;
    }
    Ok(rule)
}

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

/// The first field only Sentinel's param-flow rules have, if the hotspot rule has one: it then
/// uses Sentinel's names.
pub(crate) fn sentinel_param_flow_key(node: &Value) -> Option<&'static str> {
    first_of(node, PARAM_FLOW_FIELDS)
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
