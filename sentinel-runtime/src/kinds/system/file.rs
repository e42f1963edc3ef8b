//! System rules in our rule files: their shape, and how a file's rule is read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kinds::system::rule::SystemRule;
use crate::rule_data::file::duration;
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;

use super::sentinel;

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
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
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
            shadow,
        } = SystemRule::default();
        SystemRuleFile {
            cpu_usage,
            load_per_core,
            avg_rt,
            concurrency,
            qps,
            shadow,
        }
    }
}

/// How rule files spell these rules: our names, or Sentinel's.
pub(crate) const READER: Reader<SystemRule> = Reader {
    is_sentinel: sentinel::sentinel_system_key,
    ours: SystemRule::deserialize,
    sentinel: sentinel::system_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::system_field(field),
};

through! {
    SystemRule => SystemRuleFile,
}
