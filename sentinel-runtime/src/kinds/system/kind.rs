//! The system kind in the table of kinds.

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Validation};
use crate::kinds::validate;
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::SYSTEM_SLOT_ORDER;

use super::rule::SystemRule;
use super::stage::{self, SystemChecks};

/// System rules: process-wide limits on inbound entries.
pub(crate) struct SystemKind;

impl Kind for SystemKind {
    type Rule = SystemRule;
    type Checks = SystemChecks;
    type Ticket = ();

    const NAME: &'static str = "system";
    const KEYS: &'static [&'static str] = &["system"];
    const PROCESS_WIDE: bool = true;
    const ORDER: i32 = SYSTEM_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "SystemRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn resource(_: &SystemRule) -> Option<&str> {
        None
    }

    /// System rules never reach a chain (they name no resource): [`put_in_force`] splits the
    /// enforced ones from the shadow ones by their flag.
    ///
    /// [`put_in_force`]: Kind::put_in_force
    fn unshadowed(rule: &SystemRule) -> Option<SystemRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn problems(rules: &[SystemRule], _: &Validation) -> Vec<(usize, RuleError)> {
        validate::problems(rules, SystemRule::validate, &[])
    }

    /// The system check reads the process-wide rules ([`put_in_force`](Kind::put_in_force)):
    /// a resource's chain holds only which of their two sets its part checks (a shadow part,
    /// the shadow rules).
    fn build(_: &[SystemRule], _: &SystemChecks, ctx: &BuildContext<'_>) -> SystemChecks {
        SystemChecks { shadow: ctx.shadow }
    }

    fn alone(_: &SystemChecks) -> Alone {
        // Decided at the entry, for inbound calls only (see `entry::lone`).
        Alone::Empty
    }

    #[inline(always)]
    fn check(checks: &SystemChecks, call: &mut Call<'_>, _: &mut ()) -> Result<(), BlockError> {
        stage::check(checks, call)
    }

    fn release(checks: &SystemChecks, call: &mut Call<'_>, _: ()) {
        stage::release(checks, call)
    }

    fn on_exit(_: &SystemChecks, _: (), _: &Exit) {}

    fn shadow_checks(params: &Params) -> bool {
        params.is_inbound() && super::check::shadow_is_active()
    }

    fn put_in_force(rules: &[SystemRule], now: u64) {
        super::check::set_rules(rules, now);
        if rules.is_empty() {
            crate::system_load::stop();
        } else {
            crate::system_load::start();
        }
    }
}
