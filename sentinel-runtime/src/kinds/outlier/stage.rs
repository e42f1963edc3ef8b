//! The outlier stage: a call to an ejected endpoint is blocked; a call to an endpoint whose
//! ejection is over is its probe. A call without an endpoint passes.

use crate::error::BlockError;
use crate::kinds::call::Call;

use super::detector::Detector;
use super::rule::OutlierRule;

/// The outlier part of a chain: none without rules; else the rules, keeping `old`'s endpoints.
pub(crate) fn build(rules: &[OutlierRule], old: &Option<Box<Detector>>) -> Option<Box<Detector>> {
    if rules.is_empty() {
        return None;
    }
    Some(Box::new(Detector::new(rules, old.as_deref())))
}

/// The stage's check: a resource without outlier rules pays one test.
#[inline(always)]
pub(crate) fn check(checks: &Option<Box<Detector>>, call: &mut Call<'_>) -> Result<(), BlockError> {
    match checks {
        None => Ok(()),
        Some(detector) => check_endpoint(detector, call),
    }
}

#[cold]
#[inline(never)]
fn check_endpoint(detector: &Detector, call: &mut Call<'_>) -> Result<(), BlockError> {
    let Some(endpoint) = call.params.endpoint() else {
        return Ok(());
    };
    match detector.admit(endpoint, call.out.at) {
        Ok(ticket) => {
            call.out.outlier = ticket;
            Ok(())
        }
        Err(until) => Err(BlockError::outlier(
            call.target.name,
            endpoint,
            until.saturating_sub(call.out.at),
        )),
    }
}

/// Gives back the probe, if the call was its endpoint's.
pub(crate) fn release(checks: &Option<Box<Detector>>, call: &mut Call<'_>) {
    let ticket = std::mem::take(&mut call.out.outlier);
    if let (Some(detector), true) = (checks, ticket.is_some()) {
        detector.release(ticket, call.out.at);
    }
}
