//! Outlier rules in our rule files: their shape, and how a file's rule is read. Sentinel's Java
//! rules have no such kind: a file's outlier rules use our names only.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kinds::outlier::rule::{OutlierRule, OutlierStrategy};
use crate::rule_data::file::duration;
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "OutlierStrategy",
    rename = "OutlierStrategy",
    tag = "type",
    rename_all = "snake_case",
    deny_unknown_fields
)]
enum OutlierStrategyFile {
    ConsecutiveErrors { threshold: u32 },
    ErrorRatio { threshold: f64 },
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "OutlierRule", rename = "OutlierRule", deny_unknown_fields)]
struct OutlierRuleFile {
    resource: String,
    strategy: OutlierStrategy,
    #[serde(default = "default_min_requests")]
    min_requests: u32,
    #[serde(default = "default_recovery", with = "duration")]
    recovery: Duration,
    #[serde(default = "default_max_ejection_percent")]
    max_ejection_percent: f64,
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
}

fn defaults() -> OutlierRule {
    OutlierRule::consecutive_errors("", 1)
}

fn default_min_requests() -> u32 {
    defaults().min_requests
}

fn default_recovery() -> Duration {
    defaults().recovery
}

fn default_max_ejection_percent() -> f64 {
    defaults().max_ejection_percent
}

/// How rule files spell these rules: our names only.
pub(crate) const READER: Reader<OutlierRule> = Reader {
    is_sentinel: |_| None,
    ours: OutlierRule::deserialize,
    sentinel: OutlierRule::deserialize,
    our_field: |field| match field {
        "threshold" => "strategy.threshold",
        other => other,
    },
    sentinel_field: |_, field| field,
};

through! {
    OutlierStrategy => OutlierStrategyFile,
    OutlierRule => OutlierRuleFile,
}
