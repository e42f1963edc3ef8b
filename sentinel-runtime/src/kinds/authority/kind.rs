//! The authority kind in the table of kinds.

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Successors, Validation};
use crate::kinds::validate;
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::AUTHORITY_SLOT_ORDER;

use super::rule::AuthorityRule;
use super::stage;

/// Authority rules keep no state: a build takes nothing over.
impl Successors for Vec<AuthorityRule> {
    fn successors(_: &Self, _: &Self, _: &Self) -> Self {
        Vec::new()
    }
}

/// Authority rules: which origins may enter a resource.
pub(crate) struct AuthorityKind;

impl Kind for AuthorityKind {
    type Rule = AuthorityRule;
    type Checks = Vec<AuthorityRule>;
    type Ticket = ();

    const NAME: &'static str = "authority";
    const KEYS: &'static [&'static str] = &["authority"];
    const PROCESS_WIDE: bool = false;
    const ORDER: i32 = AUTHORITY_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "AuthorityRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn resource(rule: &AuthorityRule) -> Option<&str> {
        Some(&rule.resource)
    }

    fn unshadowed(rule: &AuthorityRule) -> Option<AuthorityRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn problems(rules: &[AuthorityRule], _: &Validation) -> Vec<(usize, RuleError)> {
        validate::problems(rules, AuthorityRule::validate, &[])
    }

    fn build(
        rules: &[AuthorityRule],
        old: &Vec<AuthorityRule>,
        _: &BuildContext<'_>,
    ) -> Vec<AuthorityRule> {
        let _ = old;
        stage::build(rules)
    }

    fn alone(checks: &Vec<AuthorityRule>) -> Alone {
        if checks.is_empty() {
            Alone::Empty
        } else {
            Alone::Other
        }
    }

    #[inline(always)]
    fn check(
        checks: &Vec<AuthorityRule>,
        call: &mut Call<'_>,
        _: &mut (),
    ) -> Result<(), BlockError> {
        stage::check(checks, call)
    }

    fn release(checks: &Vec<AuthorityRule>, call: &mut Call<'_>, _: ()) {
        stage::release(checks, call)
    }

    fn on_exit(_: &Vec<AuthorityRule>, _: (), _: &Exit) {}

    fn shadow_checks(_: &Params) -> bool {
        false
    }

    fn put_in_force(_: &[AuthorityRule], _: u64) {}
}
