//! The circuit-breaker stage: every breaker must admit the call; a half-open one may make it its
//! probe.

use std::sync::Arc;

use crate::error::BlockError;
use crate::kinds::call::Call;
use crate::kinds::circuit_breaker::breaker::{CircuitBreaker, ProbeTicket};
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;

/// The breaker part of a chain: a breaker of a rule identical to one in `old` is kept (its
/// state and counts stay), any other starts closed. Each reports its transitions as a shadow
/// breaker's if `shadow` (the chain's shadow part).
pub(crate) fn build(
    rules: &[CircuitBreakerRule],
    old: &[Arc<CircuitBreaker>],
    now: u64,
    shadow: bool,
) -> Vec<Arc<CircuitBreaker>> {
    let mut breakers: Vec<Arc<CircuitBreaker>> = Vec::with_capacity(rules.len());
    for rule in rules {
        let kept = old
            .iter()
            .find(|b| b.rule == *rule && !breakers.iter().any(|c| Arc::ptr_eq(c, b)));
        breakers.push(match kept {
            Some(breaker) => Arc::clone(breaker),
            None => Arc::new(CircuitBreaker::new(rule, now)),
        });
    }
    for breaker in &breakers {
        breaker.set_shadow(shadow);
    }
    breakers
}

/// The stage's check: every breaker must admit the call; at most one makes it its probe.
#[inline(always)]
pub(crate) fn check(checks: &[Arc<CircuitBreaker>], call: &mut Call<'_>) -> Result<(), BlockError> {
    if checks.is_empty() {
        return Ok(());
    }
    check_breakers(checks, call)
}

fn check_breakers(checks: &[Arc<CircuitBreaker>], call: &mut Call<'_>) -> Result<(), BlockError> {
    for breaker in checks.iter() {
        if let Some(probe) =
            breaker.try_enter(call.target.name, call.out.at, call.out.probe.is_some())?
        {
            call.out.probe = ProbeTicket::new(breaker, probe);
        }
    }
    Ok(())
}

/// Gives back the probe, if a half-open breaker admitted the call as one.
pub(crate) fn release(checks: &[Arc<CircuitBreaker>], call: &mut Call<'_>) {
    let ticket = std::mem::take(&mut call.out.probe);
    if ticket.is_some() {
        for breaker in checks {
            if let Some(probe) = ticket.for_breaker(breaker) {
                breaker.release_probe(probe);
            }
        }
    }
}
