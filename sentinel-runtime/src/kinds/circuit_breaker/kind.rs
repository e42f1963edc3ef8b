//! The circuit-breaker kind in the table of kinds.

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Validation};
use crate::kinds::validate::{self, Cap};
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::CIRCUIT_BREAKER_SLOT_ORDER;

use super::breakers::Breakers;
use super::rule::{CircuitBreakerRule, MAX_BREAKERS_PER_RESOURCE};
use super::stage;

/// Circuit-breaker rules (Sentinel's degrade rules).
pub(crate) struct CircuitBreakerKind;

impl Kind for CircuitBreakerKind {
    type Rule = CircuitBreakerRule;
    type Checks = Breakers;
    type Ticket = ();

    const NAME: &'static str = "circuit_breaker";
    const KEYS: &'static [&'static str] = &["circuit_breaker", "degrade"];
    const PROCESS_WIDE: bool = false;
    const ORDER: i32 = CIRCUIT_BREAKER_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "DegradeRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn resource(rule: &CircuitBreakerRule) -> Option<&str> {
        Some(&rule.resource)
    }

    fn unshadowed(rule: &CircuitBreakerRule) -> Option<CircuitBreakerRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn problems(rules: &[CircuitBreakerRule], _: &Validation) -> Vec<(usize, RuleError)> {
        validate::problems(rules, CircuitBreakerRule::validate, &[BREAKER_CAP])
    }

    fn build(rules: &[CircuitBreakerRule], old: &Breakers, ctx: &BuildContext<'_>) -> Breakers {
        stage::build(rules, old, ctx.now, ctx.shadow)
    }

    fn alone(checks: &Breakers) -> Alone {
        if checks.is_empty() {
            Alone::Empty
        } else {
            Alone::Other
        }
    }

    #[inline(always)]
    fn check(checks: &Breakers, call: &mut Call<'_>, _: &mut ()) -> Result<(), BlockError> {
        stage::check(checks, call)
    }

    fn release(checks: &Breakers, call: &mut Call<'_>, _: ()) {
        stage::release(checks, call)
    }

    fn on_exit(_: &Breakers, _: (), _: &Exit) {}

    fn shadow_checks(_: &Params) -> bool {
        false
    }

    fn put_in_force(_: &[CircuitBreakerRule], _: u64) {}
}

const BREAKER_CAP: Cap<CircuitBreakerRule> = Cap {
    max: MAX_BREAKERS_PER_RESOURCE,
    what: "circuit-breaker rules",
    key: |r| Some((&r.resource, 0)),
    field: "resource",
};
