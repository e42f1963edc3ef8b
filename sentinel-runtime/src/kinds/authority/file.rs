//! Authority rules in our rule files: their shape, and how a file's rule is read.

use serde::{Deserialize, Serialize};

use crate::kinds::authority::rule::{AuthorityRule, AuthorityStrategy};
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::through::through;
use crate::rule_data::file::value::Value;
use crate::rule_data::file::value::ValueError;

use super::sentinel;

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
    /// Shadow mode (`shadow: true`); written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    shadow: bool,
}

/// Reads an authority rule with our names; origins are trimmed, as the constructors do.
fn authority_rule(value: Value) -> Result<AuthorityRule, ValueError> {
    let mut rule = AuthorityRule::deserialize(value)?;
    for origin in &mut rule.origins {
        *origin = origin.trim().to_owned();
    }
    Ok(rule)
}

/// How rule files spell these rules: our names, or Sentinel's.
pub(crate) const READER: Reader<AuthorityRule> = Reader {
    is_sentinel: sentinel::sentinel_authority_key,
    ours: authority_rule,
    sentinel: sentinel::authority_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::authority_field(field),
};

through! {
    AuthorityStrategy => AuthorityStrategyFile,
    AuthorityRule => AuthorityRuleFile,
}
