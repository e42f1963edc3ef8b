//! Sentinel's `AuthorityRule` read into an [`AuthorityRule`].

use serde::Deserialize;

use crate::kinds::authority::rule::{AuthorityRule, AuthorityStrategy};
use crate::rule_data::file::reader::first_of;
use crate::rule_data::file::sentinel_fields::{check_regex, refuse};
use crate::rule_data::file::value::{Value, ValueError};

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

/// Fields only Sentinel's authority rules have (`strategy` is ours too, as a word).
const AUTHORITY_FIELDS: &[&str] = &["limitApp"];

/// The first field only Sentinel's authority rules have, if the rule has one.
pub(crate) fn sentinel_authority_key(node: &Value) -> Option<&'static str> {
    first_of(node, AUTHORITY_FIELDS)
}

/// An authority rule's field as Sentinel names it.
pub(crate) fn authority_field(field: &str) -> &str {
    match field {
        "origins" | "allow_missing" => "limitApp",
        other => other,
    }
}
