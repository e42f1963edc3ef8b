//! The authority stage: the call's origin must pass each of the resource's authority rules.
//! It reserves nothing.

use crate::error::{BlockError, BlockKind};
use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::call::Call;

/// The authority part of a chain: the rules as given.
pub(crate) fn build(rules: &[AuthorityRule]) -> Vec<AuthorityRule> {
    rules.to_vec()
}

/// The stage's check: the call's origin (the entry's own, else its scope's) must pass each rule.
#[inline(always)]
pub(crate) fn check(checks: &[AuthorityRule], call: &mut Call<'_>) -> Result<(), BlockError> {
    if checks.is_empty() {
        return Ok(());
    }
    check_origin(checks, call)
}

#[cold]
fn check_origin(checks: &[AuthorityRule], call: &Call<'_>) -> Result<(), BlockError> {
    let scoped;
    let origin = match call.params.origin() {
        Some(origin) => Some(origin),
        None => {
            scoped = crate::context::origin();
            scoped.as_deref()
        }
    };
    match checks.iter().find(|rule| !rule.admits(origin)) {
        Some(_) => Err(BlockError::authority(call.target.name, origin)),
        None => Ok(()),
    }
}

/// Nothing to give back.
pub(crate) fn release(_: &[AuthorityRule], _: &mut Call<'_>) {}

impl BlockError {
    /// A rejection by an authority rule of a call from `origin`.
    pub(crate) fn authority(resource: &'static str, origin: Option<&str>) -> BlockError {
        BlockError::new(resource, BlockKind::Authority, 0.0).with_reason(match origin {
            Some(o) => format!("origin `{o}` not allowed"),
            None => "no origin given".to_owned(),
        })
    }
}
