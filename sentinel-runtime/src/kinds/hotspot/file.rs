//! Hotspot rules in our rule files: their shape, and how a file's rule is read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::exceptions;
use crate::kinds::hotspot::rule::{HotspotException, HotspotMetric, HotspotRule, PARAM_BY_NAME};
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::rule_data::file::cluster::is_local_fallback;
use crate::rule_data::file::duration;
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;

use super::sentinel;

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "HotspotMetric",
    rename = "HotspotMetric",
    rename_all = "snake_case"
)]
enum HotspotMetricFile {
    Qps,
    Concurrency,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "HotspotRule", rename = "HotspotRule", deny_unknown_fields)]
struct HotspotRuleFile {
    resource: String,
    #[serde(default = "param_by_name", skip_serializing_if = "is_param_by_name")]
    param_index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    #[serde(default = "default_hotspot_metric")]
    metric: HotspotMetric,
    threshold: f64,
    #[serde(default)]
    burst: u32,
    #[serde(default = "default_hotspot_window", with = "duration")]
    window: Duration,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration::option"
    )]
    max_wait: Option<Duration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "exceptions")]
    exceptions: Vec<HotspotException>,
    #[serde(default = "default_hotspot_capacity")]
    capacity: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster: Option<ClusterThreshold>,
    #[serde(default, skip_serializing_if = "is_local_fallback")]
    cluster_fallback: ClusterFallback,
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
}

fn param_by_name() -> usize {
    PARAM_BY_NAME
}

fn is_param_by_name(index: &usize) -> bool {
    *index == PARAM_BY_NAME
}

fn default_hotspot_metric() -> HotspotMetric {
    HotspotMetric::Qps
}

fn default_hotspot_window() -> Duration {
    HotspotRule::qps("", 0, 0.0).window
}

fn default_hotspot_capacity() -> usize {
    HotspotRule::qps("", 0, 0.0).capacity
}

/// How rule files spell these rules: our names, or Sentinel's.
pub(crate) const READER: Reader<HotspotRule> = Reader {
    is_sentinel: sentinel::sentinel_param_flow_key,
    ours: HotspotRule::deserialize,
    sentinel: sentinel::param_flow_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::param_flow_field(field),
};

through! {
    HotspotMetric => HotspotMetricFile,
    HotspotRule => HotspotRuleFile,
}
