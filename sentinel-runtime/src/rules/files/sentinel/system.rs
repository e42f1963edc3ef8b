//! Sentinel's `SystemRule` and `AuthorityRule` read into a [`SystemRule`] and an
//! [`AuthorityRule`].

use std::time::Duration;

use serde::Deserialize;

use super::fields::{check_limit_app, check_regex, opt_number, refuse, whole};
use crate::kinds::authority::rule::{AuthorityRule, AuthorityStrategy};
use crate::kinds::system::rule::SystemRule;
use crate::rules::files::value::{Value, ValueError};

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

/// Sentinel's authority rule: `limitApp` lists origins separated by commas; `strategy` 0 is a
/// white list (the default), 1 a black list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SentinelAuthorityRule {
    resource: String,
    limit_app: String,
    strategy: Option<Value>,
    regex: Option<bool>,
}

/// Reads an authority rule written with Sentinel's names. The origins are split on commas and
/// trimmed (Sentinel does neither per rule, so `"a, b"` never matched `b`). As everywhere here,
/// a call without an origin is denied by a white list (Sentinel passes it).
pub(crate) fn authority_rule(node: Value) -> Result<AuthorityRule, ValueError> {
    let r = SentinelAuthorityRule::deserialize(node)?;
    check_regex(r.regex)?;
    let origins: Vec<&str> = r
        .limit_app
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    let strategy = match &r.strategy {
        None => AuthorityStrategy::Allow,
        Some(Value::U64(0) | Value::I64(0)) => AuthorityStrategy::Allow,
        Some(Value::U64(1) | Value::I64(1)) => AuthorityStrategy::Deny,
        Some(Value::F64(v)) if *v == 0.0 => AuthorityStrategy::Allow,
        Some(Value::F64(v)) if *v == 1.0 => AuthorityStrategy::Deny,
        Some(Value::Str(s)) if s.eq_ignore_ascii_case("white") || s.trim() == "0" => {
            AuthorityStrategy::Allow
        }
        Some(Value::Str(s)) if s.eq_ignore_ascii_case("black") || s.trim() == "1" => {
            AuthorityStrategy::Deny
        }
        Some(_) => {
            return Err(refuse(
                "strategy",
                "must be 0 or \"White\" (only the listed origins pass) or 1 or \"Black\" (the \
                 listed origins are denied)",
            ))
        }
    };
    Ok(match strategy {
        AuthorityStrategy::Deny => AuthorityRule::deny(r.resource, origins),
        _ => AuthorityRule::allow(r.resource, origins),
    })
}
