//! A chain part's breakers, and which old ones a reload may take over.

use std::ops::Deref;
use std::sync::Arc;

use crate::kinds::kind::Successors;

use super::breaker::CircuitBreaker;

/// The breakers of one part of a chain (enforced or shadow), one per rule.
#[derive(Debug, Default)]
pub(crate) struct Breakers(pub(crate) Vec<Arc<CircuitBreaker>>);

impl Deref for Breakers {
    type Target = [Arc<CircuitBreaker>];

    fn deref(&self) -> &[Arc<CircuitBreaker>] {
        &self.0
    }
}

/// `first`'s breakers, then `then`'s, each state once, without any whose state a breaker of
/// `taken` holds. Compared by state, not by breaker: a breaker that succeeded an old one with
/// a changed rule is a new breaker over the old one's state, and the other part must not take
/// that state over too (an enforced and a shadow rule never share state).
impl Successors for Breakers {
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self {
        let mut out: Vec<Arc<CircuitBreaker>> = Vec::with_capacity(first.len() + then.len());
        for held in first.iter().chain(then.iter()) {
            let seen = |c: &Arc<CircuitBreaker>| c.shares_counts_with(held);
            if !taken.iter().any(seen) && !out.iter().any(seen) {
                out.push(Arc::clone(held));
            }
        }
        Breakers(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
    use std::time::Duration;

    #[test]
    fn a_state_taken_over_under_a_changed_rule_is_not_offered_again() {
        let rule = CircuitBreakerRule::error_count("r", 5).recovery(Duration::from_secs(1));
        let old = Arc::new(CircuitBreaker::new(&rule, 0));
        let other = Arc::new(CircuitBreaker::new(&rule, 0));
        let successor = Arc::new(CircuitBreaker::succeeding(
            &rule.clone().recovery(Duration::from_secs(2)),
            &old,
        ));
        let first = Breakers(vec![Arc::clone(&old), Arc::clone(&other)]);
        let then = Breakers(vec![Arc::clone(&other)]);
        let got = Breakers::successors(&first, &then, &Breakers(vec![successor]));
        assert_eq!(got.len(), 1);
        assert!(
            Arc::ptr_eq(&got[0], &other),
            "old's state is held by its successor"
        );
    }
}
