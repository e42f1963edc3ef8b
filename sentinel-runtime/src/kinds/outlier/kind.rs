//! The outlier kind in the table of kinds.

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Successors, Validation};
use crate::kinds::validate::{self, Cap};
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::OUTLIER_SLOT_ORDER;

use super::detector::Detector;
use super::rule::{OutlierRule, MAX_OUTLIER_RULES_PER_RESOURCE};
use super::stage;
use super::table::OutlierTicket;

/// The endpoint table a build may take over: the part's own, else the other part's, unless the
/// other new part already shares it (an enforced and a shadow rule never share a table).
impl Successors for Option<Box<Detector>> {
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self {
        let free = |d: &&Detector| !taken.as_deref().is_some_and(|t| t.shares_table(d));
        first
            .as_deref()
            .filter(free)
            .or_else(|| then.as_deref().filter(free))
            .map(|d| Box::new(d.sharing()))
    }
}

/// Outlier rules: endpoints of a resource ejected for their errors.
pub(crate) struct OutlierKind;

impl Kind for OutlierKind {
    type Rule = OutlierRule;
    type Checks = Option<Box<Detector>>;
    /// The endpoint the call was admitted to (and whether it is its probe), if tracked: its
    /// exit reports the call's outcome there.
    type Ticket = OutlierTicket;

    const NAME: &'static str = "outlier";
    const KEYS: &'static [&'static str] = &["outlier"];
    const PROCESS_WIDE: bool = false;
    /// After the circuit breakers: a resource's breaker judges the whole dependency first.
    const ORDER: i32 = OUTLIER_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "OutlierRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn unshadowed(rule: &OutlierRule) -> Option<OutlierRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn resource(rule: &OutlierRule) -> Option<&str> {
        Some(&rule.resource)
    }

    fn problems(rules: &[OutlierRule], _: &Validation) -> Vec<(usize, RuleError)> {
        validate::problems(rules, OutlierRule::validate, &[OUTLIER_CAP])
    }

    fn build(
        rules: &[OutlierRule],
        old: &Option<Box<Detector>>,
        _: &BuildContext<'_>,
    ) -> Option<Box<Detector>> {
        stage::build(rules, old)
    }

    fn alone(checks: &Option<Box<Detector>>) -> Alone {
        match checks {
            None => Alone::Empty,
            Some(_) => Alone::Other,
        }
    }

    #[inline(always)]
    fn check(
        checks: &Option<Box<Detector>>,
        call: &mut Call<'_>,
        ticket: &mut OutlierTicket,
    ) -> Result<(), BlockError> {
        stage::check(checks, call, ticket)
    }

    fn release(checks: &Option<Box<Detector>>, call: &mut Call<'_>, ticket: OutlierTicket) {
        stage::release(checks, call, ticket)
    }

    fn on_exit(checks: &Option<Box<Detector>>, ticket: OutlierTicket, exit: &Exit) {
        stage::on_exit(checks, ticket, exit)
    }

    fn shadow_checks(_: &Params) -> bool {
        false
    }

    fn put_in_force(_: &[OutlierRule], _: u64) {}
}

const OUTLIER_CAP: Cap<OutlierRule> = Cap {
    max: MAX_OUTLIER_RULES_PER_RESOURCE,
    what: "outlier rules",
    key: |r| Some((&r.resource, 0)),
    field: "resource",
};
