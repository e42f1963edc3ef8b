//! The rule types in our file names: each rule type's shape in a file (field names, defaults
//! for fields a file leaves out, durations as text, which fields are written), declared here
//! beside the file code, so that the rule types themselves stay plain data with no reference to
//! files.
//!
//! Each `...File` type below mirrors one rule type field for field (serde's `remote`
//! derive: the compiler refuses a mirror that misses or misnames a field of its rule type) and
//! converts to and from it; the rule types' `Serialize` and `Deserialize` go through them. A
//! Sentinel-named rule is read by its own transfer types instead (`super::sentinel`).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{duration, exceptions};
use crate::kinds::authority::rule::{AuthorityRule, AuthorityStrategy};
use crate::kinds::circuit_breaker::rule::{BreakerStrategy, CircuitBreakerRule};
use crate::kinds::flow::adaptive_rule::AdaptiveConcurrency;
use crate::kinds::flow::origin_rule::FlowOrigin;
use crate::kinds::flow::rule::{FlowMetric, FlowRule, WarmUp};
use crate::kinds::hotspot::rule::{HotspotException, HotspotMetric, HotspotRule, PARAM_BY_NAME};
use crate::kinds::system::rule::SystemRule;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};

// ----- flow rules ---------------------------------------------------------------------------------

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

// ----- cluster settings (flow and hotspot rules) --------------------------------------------------

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "ClusterThreshold",
    rename = "ClusterThreshold",
    rename_all = "snake_case"
)]
enum ClusterThresholdFile {
    Global,
    PerInstance,
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "ClusterFallback",
    rename = "ClusterFallback",
    rename_all = "snake_case"
)]
enum ClusterFallbackFile {
    Local,
    Pass,
}

fn is_local_fallback(f: &ClusterFallback) -> bool {
    *f == ClusterFallback::Local
}

// ----- circuit-breaker rules ----------------------------------------------------------------------

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "BreakerStrategy",
    rename = "BreakerStrategy",
    tag = "type",
    rename_all = "snake_case",
    deny_unknown_fields
)]
enum BreakerStrategyFile {
    SlowRequestRatio {
        #[serde(with = "duration")]
        max_rt: Duration,
        threshold: f64,
    },
    ErrorRatio {
        threshold: f64,
    },
    ErrorCount {
        threshold: u32,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "CircuitBreakerRule",
    rename = "CircuitBreakerRule",
    deny_unknown_fields
)]
struct CircuitBreakerRuleFile {
    resource: String,
    strategy: BreakerStrategy,
    #[serde(default = "default_breaker_min_requests")]
    min_requests: u32,
    #[serde(default = "default_breaker_window", with = "duration")]
    window: Duration,
    #[serde(default = "default_breaker_sample_count")]
    sample_count: u32,
    #[serde(with = "duration")]
    recovery: Duration,
    #[serde(default = "default_breaker_probes")]
    probes: u32,
}

// ----- hotspot rules ------------------------------------------------------------------------------

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
}

fn param_by_name() -> usize {
    PARAM_BY_NAME
}

fn is_param_by_name(index: &usize) -> bool {
    *index == PARAM_BY_NAME
}

// ----- system and authority rules -----------------------------------------------------------------

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "SystemRule",
    rename = "SystemRule",
    default,
    deny_unknown_fields
)]
struct SystemRuleFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_usage: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load_per_core: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", with = "duration::option")]
    avg_rt: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    qps: Option<f64>,
}

/// The fields a file leaves out (`#[serde(default)]` on the type): the rule type's defaults.
impl Default for SystemRuleFile {
    fn default() -> Self {
        let SystemRule {
            cpu_usage,
            load_per_core,
            avg_rt,
            concurrency,
            qps,
        } = SystemRule::default();
        SystemRuleFile {
            cpu_usage,
            load_per_core,
            avg_rt,
            concurrency,
            qps,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "AuthorityStrategy",
    rename = "AuthorityStrategy",
    rename_all = "snake_case"
)]
enum AuthorityStrategyFile {
    Allow,
    Deny,
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "AuthorityRule",
    rename = "AuthorityRule",
    deny_unknown_fields
)]
struct AuthorityRuleFile {
    resource: String,
    strategy: AuthorityStrategy,
    origins: Vec<String>,
    #[serde(default)]
    allow_missing: bool,
}

// ----- the builders' defaults, for fields a file leaves out ---------------------------------------

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

fn default_hotspot_metric() -> HotspotMetric {
    HotspotMetric::Qps
}

fn default_hotspot_window() -> Duration {
    HotspotRule::qps("", 0, 0.0).window
}

fn default_hotspot_capacity() -> usize {
    HotspotRule::qps("", 0, 0.0).capacity
}

fn breaker_defaults() -> CircuitBreakerRule {
    CircuitBreakerRule::error_count("", 1)
}

fn default_breaker_min_requests() -> u32 {
    breaker_defaults().min_requests
}

fn default_breaker_window() -> Duration {
    breaker_defaults().window
}

fn default_breaker_sample_count() -> u32 {
    breaker_defaults().sample_count
}

fn default_breaker_probes() -> u32 {
    breaker_defaults().probes
}

// ----- the rule types' serde impls, through their file shapes -------------------------------------

/// `Serialize` and `Deserialize` for each rule type, through its file shape.
macro_rules! through {
    ($($data:ty => $file:ident),* $(,)?) => {$(
        impl Serialize for $data {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $file::serialize(self, s)
            }
        }

        impl<'de> Deserialize<'de> for $data {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$data, D::Error> {
                $file::deserialize(d)
            }
        }
    )*};
}

through! {
    WarmUp => WarmUpFile,
    FlowMetric => FlowMetricFile,
    FlowRule => FlowRuleFile,
    AdaptiveConcurrency => AdaptiveConcurrencyFile,
    ClusterThreshold => ClusterThresholdFile,
    ClusterFallback => ClusterFallbackFile,
    BreakerStrategy => BreakerStrategyFile,
    CircuitBreakerRule => CircuitBreakerRuleFile,
    HotspotMetric => HotspotMetricFile,
    HotspotRule => HotspotRuleFile,
    SystemRule => SystemRuleFile,
    AuthorityStrategy => AuthorityStrategyFile,
    AuthorityRule => AuthorityRuleFile,
}
