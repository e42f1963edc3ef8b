//! The outlier stage: a call to an ejected endpoint is blocked; a call to an endpoint whose
//! ejection is over is its probe. A call without an endpoint passes.

use std::time::Duration;

use crate::error::{BlockError, BlockKind};
use crate::kinds::call::{Call, Exit};

use super::detector::Detector;
use super::rule::OutlierRule;
use super::table::OutlierTicket;

/// The outlier part of a chain: none without rules; else the rules, keeping `old`'s endpoints.
pub(crate) fn build(rules: &[OutlierRule], old: &Option<Box<Detector>>) -> Option<Box<Detector>> {
    if rules.is_empty() {
        return None;
    }
    Some(Box::new(Detector::new(rules, old.as_deref())))
}

/// The stage's check: a resource without outlier rules pays one test. Admitted to a tracked
/// endpoint, the call carries its ticket to its exit.
#[inline(always)]
pub(crate) fn check(
    checks: &Option<Box<Detector>>,
    call: &mut Call<'_>,
    ticket: &mut OutlierTicket,
) -> Result<(), BlockError> {
    match checks {
        None => Ok(()),
        Some(detector) => check_endpoint(detector, call, ticket),
    }
}

#[cold]
#[inline(never)]
fn check_endpoint(
    detector: &Detector,
    call: &mut Call<'_>,
    ticket: &mut OutlierTicket,
) -> Result<(), BlockError> {
    let Some(endpoint) = call.params.endpoint() else {
        return Ok(());
    };
    match detector.admit(endpoint, call.out.at) {
        Ok(admitted) => {
            *ticket = admitted;
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
pub(crate) fn release(checks: &Option<Box<Detector>>, call: &mut Call<'_>, ticket: OutlierTicket) {
    if let (Some(detector), true) = (checks, ticket.is_some()) {
        detector.release(ticket, call.out.at);
    }
}

/// The exit of a call admitted with `ticket`: its endpoint learns the outcome.
#[cold]
pub(crate) fn on_exit(checks: &Option<Box<Detector>>, ticket: OutlierTicket, exit: &Exit) {
    if let (Some(detector), true) = (checks, ticket.is_some()) {
        detector.on_exit(exit.resource, ticket, exit.now, exit.error, exit.abandoned);
    }
}

impl BlockError {
    /// A rejection by an outlier rule of a call to `endpoint`, ejected for `nanos` more (0: its
    /// probe is out).
    pub(crate) fn outlier(resource: &'static str, endpoint: &str, nanos: u64) -> BlockError {
        BlockError::new(resource, BlockKind::Outlier, 0.0)
            .with_reason(format!("endpoint `{endpoint}` ejected"))
            .with_retry_after((nanos > 0).then(|| Duration::from_nanos(nanos)))
    }
}
