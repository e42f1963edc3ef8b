//! Sentinel's cluster flow control on flow and param-flow rules (`clusterMode: true` with a
//! `clusterConfig`), read into the rule's [`ClusterThreshold`] and [`ClusterFallback`].
//!
//! Sentinel asks a token server on every call; here the cluster's store hands out leases, so the
//! fields that tune Sentinel's token server and its clients have nothing to set. They are
//! accepted and ignored (see the format's documentation for each); the fields that say what the
//! limit *is* are read, and refused by name where Sentinel itself would drop the rule as
//! invalid.

use serde::Deserialize;

use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::rule_data::file::sentinel_fields::{opt_number, positive, refuse};
use crate::rule_data::file::value::ValueError;

/// Sentinel's `ClusterFlowConfig`: a flow rule's `clusterConfig`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SentinelClusterFlowConfig {
    /// The rule's id at Sentinel's token server: a cluster rule here is known by its resource.
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    flow_id: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    threshold_type: Option<f64>,
    fallback_to_local_when_fail: Option<bool>,
    #[serde(default, deserialize_with = "opt_number")]
    strategy: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    sample_count: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    window_interval_ms: Option<f64>,
    /// What a prioritized call does when the token server refuses it: no call is prioritized
    /// here.
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    acquire_refuse_strategy: Option<f64>,
    /// The next three tune Sentinel's cluster concurrency limits (grade 0), which are refused
    /// here (a cluster rule counts QPS).
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    resource_timeout: Option<f64>,
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    resource_timeout_strategy: Option<f64>,
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    client_offline_time: Option<f64>,
    /// How many tokens Sentinel's client fetches ahead: a lease here always does.
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    prefetch_cnt_ratio: Option<f64>,
}

/// Sentinel's `ParamFlowClusterConfig`: a param-flow rule's `clusterConfig`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SentinelParamFlowClusterConfig {
    /// As in [`SentinelClusterFlowConfig`].
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "opt_number")]
    flow_id: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    threshold_type: Option<f64>,
    fallback_to_local_when_fail: Option<bool>,
    #[serde(default, deserialize_with = "opt_number")]
    sample_count: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    window_interval_ms: Option<f64>,
}

/// What both configs say about the limit.
pub(crate) struct ClusterConfig {
    threshold_type: Option<f64>,
    fallback_to_local_when_fail: Option<bool>,
    strategy: Option<f64>,
    sample_count: Option<f64>,
    window_interval_ms: Option<f64>,
}

impl From<SentinelClusterFlowConfig> for ClusterConfig {
    fn from(c: SentinelClusterFlowConfig) -> ClusterConfig {
        ClusterConfig {
            threshold_type: c.threshold_type,
            fallback_to_local_when_fail: c.fallback_to_local_when_fail,
            strategy: c.strategy,
            sample_count: c.sample_count,
            window_interval_ms: c.window_interval_ms,
        }
    }
}

impl From<SentinelParamFlowClusterConfig> for ClusterConfig {
    fn from(c: SentinelParamFlowClusterConfig) -> ClusterConfig {
        ClusterConfig {
            threshold_type: c.threshold_type,
            fallback_to_local_when_fail: c.fallback_to_local_when_fail,
            strategy: None,
            sample_count: c.sample_count,
            window_interval_ms: c.window_interval_ms,
        }
    }
}

/// Sentinel's `DEFAULT_CLUSTER_SAMPLE_COUNT` and `DEFAULT_WINDOW_INTERVAL_MS`.
const DEFAULT_SAMPLE_COUNT: f64 = 10.0;
const DEFAULT_WINDOW_INTERVAL_MS: f64 = 1_000.0;

/// A rule's cluster settings from `clusterMode` and `clusterConfig`: none for a rule that is not
/// a cluster rule. `default_fallback` is what an absent `fallbackToLocalWhenFail` means
/// (Sentinel's defaults differ: true on flow rules, false on param-flow rules).
pub(crate) fn cluster(
    mode: Option<bool>,
    config: Option<ClusterConfig>,
    default_fallback: ClusterFallback,
) -> Result<Option<(ClusterThreshold, ClusterFallback)>, ValueError> {
    let config = match (mode == Some(true), config) {
        (false, None) => return Ok(None),
        (false, Some(_)) => {
            return Err(refuse(
                "clusterConfig",
                "is only used with `clusterMode: true` (Sentinel ignores it without): set \
                 clusterMode to true for a cluster rule, or remove it",
            ))
        }
        (true, None) => {
            return Err(refuse(
                "clusterMode",
                "is true without a `clusterConfig`: a cluster rule needs one (at least \
                 `{\"thresholdType\": 0 or 1}`), as in Sentinel, which drops such a rule",
            ))
        }
        (true, Some(config)) => config,
    };
    let threshold = match config.threshold_type {
        None | Some(0.0) => ClusterThreshold::PerInstance,
        Some(1.0) => ClusterThreshold::Global,
        Some(t) => {
            return Err(refuse(
                "clusterConfig.thresholdType",
                format!(
                    "must be 0 (the count is per instance: the limit in all is the count times \
                     the instances live) or 1 (the count is global: for all instances \
                     together), got {t}"
                ),
            ))
        }
    };
    let fallback = match config.fallback_to_local_when_fail {
        None => default_fallback,
        Some(true) => ClusterFallback::Local,
        Some(false) => ClusterFallback::Pass,
    };
    match config.strategy {
        None | Some(0.0) => {}
        Some(s) => {
            return Err(refuse(
                "clusterConfig.strategy",
                format!("must be 0 (normal), Sentinel's only valid cluster strategy, got {s}"),
            ))
        }
    }
    // The token server's statistics window: no window here (a lease spends tokens of the
    // rule's own rate), but a window Sentinel refuses is refused.
    let samples = positive(
        "clusterConfig.sampleCount",
        config.sample_count.unwrap_or(DEFAULT_SAMPLE_COUNT),
        "buckets",
    )?;
    let interval = positive(
        "clusterConfig.windowIntervalMs",
        config
            .window_interval_ms
            .unwrap_or(DEFAULT_WINDOW_INTERVAL_MS),
        "milliseconds",
    )?;
    if interval % samples != 0.0 {
        return Err(refuse(
            "clusterConfig.windowIntervalMs",
            format!("({interval}) must be divisible by sampleCount ({samples})"),
        ));
    }
    Ok(Some((threshold, fallback)))
}
