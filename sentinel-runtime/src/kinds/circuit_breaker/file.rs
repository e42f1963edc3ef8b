//! Circuit-breaker rules in our rule files: their shape, and how a file's rule is read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kinds::circuit_breaker::rule::{BreakerStrategy, CircuitBreakerRule};
use crate::rule_data::file::duration;
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;

use super::sentinel;

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
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
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

/// How rule files spell these rules: our names, or Sentinel's.
pub(crate) const READER: Reader<CircuitBreakerRule> = Reader {
    is_sentinel: sentinel::sentinel_degrade_key,
    ours: CircuitBreakerRule::deserialize,
    sentinel: sentinel::degrade_rule,
    our_field: |field| match field {
        "threshold" => "strategy.threshold",
        "max_rt" => "strategy.max_rt",
        other => other,
    },
    sentinel_field: sentinel::degrade_field,
};

through! {
    BreakerStrategy => BreakerStrategyFile,
    CircuitBreakerRule => CircuitBreakerRuleFile,
}
