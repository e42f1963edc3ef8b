//! Sentinel's `SystemRule` read into a [`SystemRule`].

use std::time::Duration;

use serde::Deserialize;

use crate::kinds::system::rule::SystemRule;
use crate::rule_data::file::reader::first_of;
use crate::rule_data::file::sentinel_fields::{
    check_limit_app, check_regex, opt_number, refuse, whole,
};
use crate::rule_data::file::value::{Value, ValueError};

/// Sentinel's system rule: every limit is a number, negative (Sentinel writes -1) for unset.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelSystemRule {
    #[serde(default, deserialize_with = "opt_number")]
    highest_system_load: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    highest_cpu_usage: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    avg_rt: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    max_thread: Option<f64>,
    #[serde(default, deserialize_with = "opt_number")]
    qps: Option<f64>,
    /// Sentinel's rules all have these; a system rule uses neither.
    resource: Option<Value>,
    limit_app: Option<String>,
    regex: Option<bool>,
}

/// A limit Sentinel leaves unset with a negative value.
fn set_limit(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_nan() || *v >= 0.0)
}

/// Reads a system rule written with Sentinel's names. `highestSystemLoad` is the whole
/// machine's load: it is divided by the host's cores into our `load_per_core`.
pub(crate) fn system_rule(node: Value) -> Result<SystemRule, ValueError> {
    let r = SentinelSystemRule::deserialize(node)?;
    check_limit_app(r.limit_app.as_deref())?;
    check_regex(r.regex)?;
    let _ = r.resource;
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let mut rule = SystemRule::new();
    rule.load_per_core = set_limit(r.highest_system_load).map(|load| load / cores);
    rule.cpu_usage = set_limit(r.highest_cpu_usage);
    rule.avg_rt = match set_limit(r.avg_rt) {
        Some(ms) if ms.is_finite() && ms <= 3_600_000.0 => {
            Some(Duration::from_micros((ms * 1_000.0).round() as u64))
        }
        Some(ms) => {
            return Err(refuse(
                "avgRt",
                format!("must be at most an hour, got {ms}"),
            ))
        }
        None => None,
    };
    // Sentinel blocks when the calls already inside are *more than* `maxThread`, so
    // `maxThread: n` lets an (n + 1)th call in: a limit of n + 1 here (ours blocks at it).
    rule.concurrency = match set_limit(r.max_thread) {
        Some(n) => Some(whole("maxThread", n, u32::MAX.into())? as u64 + 1),
        None => None,
    };
    rule.qps = set_limit(r.qps);
    Ok(rule)
}

/// Fields only Sentinel's system rules have (`qps` is ours too, with the same meaning).
const SYSTEM_FIELDS: &[&str] = &[
    "highestSystemLoad",
    "highestCpuUsage",
    "avgRt",
    "maxThread",
    "resource",
    "limitApp",
];

/// The first field only Sentinel's system rules have, if the rule has one.
pub(crate) fn sentinel_system_key(node: &Value) -> Option<&'static str> {
    first_of(node, SYSTEM_FIELDS)
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
