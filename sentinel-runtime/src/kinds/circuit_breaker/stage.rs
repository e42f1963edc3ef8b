//! The circuit-breaker stage: every breaker must admit the call; a half-open one may make it its
//! probe.

use std::sync::Arc;

use crate::error::BlockError;
use crate::kinds::call::Call;
use crate::kinds::circuit_breaker::breaker::{CircuitBreaker, ProbeTicket};
use crate::kinds::circuit_breaker::breakers::Breakers;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;

/// The breaker part of a chain. A rule identical to one of `old`'s keeps that breaker (its
/// state and counts stay); a rule with the same strategy kind, window and bucket count as one
/// of the others gets a breaker over that one's state and counts (its own thresholds, recovery
/// and probes); any other starts closed with an empty window. Each old breaker is taken over
/// once, identical rules first. Each reports its transitions as a shadow breaker's if `shadow`
/// (the chain's shadow part).
pub(crate) fn build(
    rules: &[CircuitBreakerRule],
    old: &[Arc<CircuitBreaker>],
    now: u64,
    shadow: bool,
) -> Breakers {
    let mut taken = vec![false; old.len()];
    let mut take = |fits: &dyn Fn(&CircuitBreaker) -> bool| {
        let i = (0..old.len()).find(|&i| !taken[i] && fits(&old[i]))?;
        taken[i] = true;
        Some(&old[i])
    };
    let mut kept: Vec<Option<Arc<CircuitBreaker>>> = rules
        .iter()
        .map(|rule| take(&|b| b.rule == *rule).map(Arc::clone))
        .collect();
    for (rule, slot) in rules.iter().zip(&mut kept) {
        if slot.is_none() {
            *slot = take(&|b| b.keeps_counts_of(rule))
                .map(|b| Arc::new(CircuitBreaker::succeeding(rule, b)));
        }
    }
    let breakers: Vec<Arc<CircuitBreaker>> = rules
        .iter()
        .zip(kept)
        .map(|(rule, kept)| kept.unwrap_or_else(|| Arc::new(CircuitBreaker::new(rule, now))))
        .collect();
    for breaker in &breakers {
        breaker.set_shadow(shadow);
    }
    Breakers(breakers)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rule(threshold: u32) -> CircuitBreakerRule {
        CircuitBreakerRule::error_count("r", threshold).recovery(Duration::from_secs(1))
    }

    #[test]
    fn identical_rules_keep_their_breakers_first_then_changed_ones_take_the_rest_once() {
        let old = build(&[rule(5), rule(7)], &[], 0, false);
        // Listed first, the changed rule must not take the breaker the identical one keeps.
        let new = build(&[rule(8), rule(5), rule(9)], &old, 0, false);
        assert!(Arc::ptr_eq(&new[1], &old[0]), "identical: the same breaker");
        assert!(new[0].shares_counts_with(&old[1]) && !Arc::ptr_eq(&new[0], &old[1]));
        assert_eq!(new[0].rule, rule(8), "a new breaker of the new rule");
        assert!(
            !new[2].shares_counts_with(&old[0]) && !new[2].shares_counts_with(&old[1]),
            "a third rule finds no old breaker left: it starts fresh"
        );
        let other_window = rule(5).window(Duration::from_secs(2), 10);
        let fresh = build(&[other_window], &old, 0, false);
        assert!(!old.iter().any(|b| b.shares_counts_with(&fresh[0])));
    }
}
