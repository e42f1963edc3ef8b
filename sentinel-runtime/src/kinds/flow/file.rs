//! Flow rules in our rule files: their shape (field names, defaults for fields a file
//! leaves out, durations as text), and how a file's flow rule is read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kinds::flow::adaptive_rule::AdaptiveConcurrency;
use crate::kinds::flow::origin_rule::FlowOrigin;
use crate::kinds::flow::rule::{FlowMetric, FlowRule, WarmUp};
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::rule_data::file::cluster::is_local_fallback;
use crate::rule_data::file::duration;
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;

use super::sentinel;

#[derive(Serialize, Deserialize)]
#[serde(remote = "WarmUp", rename = "WarmUp", deny_unknown_fields)]
struct WarmUpFile {
    #[serde(with = "duration")]
    period: Duration,
    #[serde(default = "default_cold_factor")]
    cold_factor: f64,
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "FlowMetric",
    rename = "FlowMetric",
    rename_all = "snake_case"
)]
enum FlowMetricFile {
    Qps,
    Concurrency,
    AdaptiveConcurrency,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "FlowRule", rename = "FlowRule", deny_unknown_fields)]
struct FlowRuleFile {
    resource: String,
    #[serde(default = "default_flow_metric")]
    metric: FlowMetric,
    threshold: f64,
    #[serde(default = "default_flow_window", with = "duration")]
    window: Duration,
    #[serde(default = "default_flow_sample_count")]
    sample_count: u32,
    #[serde(default)]
    strict: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warm_up: Option<WarmUp>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration::option"
    )]
    max_wait: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    adaptive: Option<AdaptiveConcurrency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster: Option<ClusterThreshold>,
    #[serde(default, skip_serializing_if = "is_local_fallback")]
    cluster_fallback: ClusterFallback,
    #[serde(
        default,
        skip_serializing_if = "FlowOrigin::is_all",
        with = "origin_field"
    )]
    origin: FlowOrigin,
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
}

/// A flow rule's `origin`: a string, `default` (every caller, as when left out), `other` or an
/// origin's name.
mod origin_field {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::kinds::flow::origin_rule::FlowOrigin;

    pub(super) fn serialize<S: Serializer>(origin: &FlowOrigin, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(origin.as_limit_app())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FlowOrigin, D::Error> {
        Ok(FlowOrigin::from_limit_app(&String::deserialize(d)?))
    }
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "AdaptiveConcurrency",
    rename = "AdaptiveConcurrency",
    default,
    deny_unknown_fields
)]
struct AdaptiveConcurrencyFile {
    initial_limit: u32,
    min_limit: u32,
    max_limit: u32,
    smoothing: f64,
    queue_size: u32,
    rtt_tolerance: f64,
    #[serde(with = "duration")]
    sample_window: Duration,
    min_samples: u32,
    #[serde(skip_serializing_if = "Option::is_none", with = "duration::option")]
    timeout: Option<Duration>,
    #[serde(with = "duration")]
    min_rtt_interval: Duration,
    min_rtt_jitter: f64,
    probe_limit: u32,
    probe_samples: u32,
}

/// The fields a file leaves out (`#[serde(default)]` on the type): the rule type's defaults.
impl Default for AdaptiveConcurrencyFile {
    fn default() -> Self {
        let AdaptiveConcurrency {
            initial_limit,
            min_limit,
            max_limit,
            smoothing,
            queue_size,
            rtt_tolerance,
            sample_window,
            min_samples,
            timeout,
            min_rtt_interval,
            min_rtt_jitter,
            probe_limit,
            probe_samples,
        } = AdaptiveConcurrency::default();
        AdaptiveConcurrencyFile {
            initial_limit,
            min_limit,
            max_limit,
            smoothing,
            queue_size,
            rtt_tolerance,
            sample_window,
            min_samples,
            timeout,
            min_rtt_interval,
            min_rtt_jitter,
            probe_limit,
            probe_samples,
        }
    }
}

fn default_flow_metric() -> FlowMetric {
    FlowMetric::Qps
}

fn default_flow_window() -> Duration {
    FlowRule::qps("", 0.0).window
}

fn default_flow_sample_count() -> u32 {
    FlowRule::qps("", 0.0).sample_count
}

/// Sentinel's default cold factor.
fn default_cold_factor() -> f64 {
    3.0
}

/// How rule files spell these rules: our names, or Sentinel's.
pub(crate) const READER: Reader<FlowRule> = Reader {
    is_sentinel: sentinel::sentinel_flow_key,
    ours: FlowRule::deserialize,
    sentinel: sentinel::flow_rule,
    our_field: |field| match field {
        "warm_up" => "warm_up.period",
        "cold_factor" => "warm_up.cold_factor",
        other => other,
    },
    sentinel_field: |_, field| sentinel::flow_field(field),
};

through! {
    WarmUp => WarmUpFile,
    FlowMetric => FlowMetricFile,
    FlowRule => FlowRuleFile,
    AdaptiveConcurrency => AdaptiveConcurrencyFile,
}
