//! The system stage: an inbound call passes the process-wide system rules, when any are in
//! force. A chain's enforced part checks the enforced system rules; its shadow part (see
//! `kinds::stages::check_shadow`) the shadow ones, each against its own process-wide limits.

use crate::error::BlockError;
use crate::kinds::call::{Call, INBOUND_CALL};
use crate::kinds::kind::Successors;
use crate::kinds::system::check::{is_active, state, SystemPass};

/// The system kind's part of a chain: which of the process-wide sets of limits its stage
/// checks (the rules themselves are process-wide, not in the chain).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SystemChecks {
    /// The part is a chain's shadow part: its stage checks the shadow system rules.
    pub(crate) shadow: bool,
}

/// Nothing to take over: the state is process-wide, and a build says which set a part checks.
impl Successors for SystemChecks {
    fn successors(first: &Self, _: &Self, _: &Self) -> Self {
        *first
    }
}

/// The stage's check: what the system check reserved goes into the call's admission.
#[inline(always)]
pub(crate) fn check(checks: &SystemChecks, call: &mut Call<'_>) -> Result<(), BlockError> {
    if call.params.is_inbound() {
        call.out.inbound = INBOUND_CALL;
        if is_active() {
            let pass = state(checks.shadow).try_enter(call.target.name, call.out.at, call.count)?;
            call.out.at = call.out.at.max(pass.gated_at);
            call.out.system = pass;
        }
    }
    Ok(())
}

/// Gives back what the system check reserved.
pub(crate) fn release(checks: &SystemChecks, call: &mut Call<'_>) {
    if call.out.system != SystemPass::default() {
        state(checks.shadow).cancel(std::mem::take(&mut call.out.system), call.count);
    }
}
