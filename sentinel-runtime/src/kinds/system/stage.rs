//! The system stage: an inbound call passes the process-wide system rules, when any are in
//! force.

use crate::error::BlockError;
use crate::kinds::call::{Call, INBOUND_CALL};
use crate::kinds::system::check::{cancel, is_active, try_enter, SystemPass};

/// The stage's check: what the system check reserved goes into the call's admission.
#[inline(always)]
pub(crate) fn check(_: &(), call: &mut Call<'_>) -> Result<(), BlockError> {
    if call.params.is_inbound() {
        call.out.inbound = INBOUND_CALL;
        if is_active() {
            let pass = try_enter(call.target.name, call.out.at, call.count)?;
            call.out.at = call.out.at.max(pass.gated_at);
            call.out.system = pass;
        }
    }
    Ok(())
}

/// Gives back what the system check reserved.
pub(crate) fn release(_: &(), call: &mut Call<'_>) {
    if call.out.system != SystemPass::default() {
        cancel(std::mem::take(&mut call.out.system), call.count);
    }
}
