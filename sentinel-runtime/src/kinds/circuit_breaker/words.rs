//! Circuit-breaker transitions in words, with the figure that caused them, for the page: an
//! on-call engineer read "open -> half_open (10048.00)" and could not tell what it meant.

use std::sync::Arc;
use std::time::Duration;

use super::breaker::CircuitBreaker;
use super::rule::{BreakerStrategy, CircuitBreakerRule};
use crate::stat::circuit_state::CircuitState;

/// The transition in words, in the terms of the resource's breaker rule when it has one (the
/// breakers in force on the resource).
pub(crate) fn describe_breakers(
    from: CircuitState,
    to: CircuitState,
    figure: f64,
    breakers: &[Arc<CircuitBreaker>],
) -> String {
    let rules: Vec<CircuitBreakerRule> = breakers.iter().map(|b| b.rule.clone()).collect();
    describe(from, to, figure, &rules)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s} s")
    }
}

fn percent(ratio: f64) -> String {
    format!("{:.0}%", ratio * 100.0)
}

/// [`transition`] given the rules (testable without a registry).
pub(crate) fn describe(
    from: CircuitState,
    to: CircuitState,
    figure: f64,
    rules: &[CircuitBreakerRule],
) -> String {
    // With several breakers on the resource the figure fits the one that tripped, which the
    // event does not name: the rule is described only when there is one.
    let rule = match rules {
        [one] => Some(one),
        _ => None,
    };
    match (from, to) {
        (CircuitState::Closed, CircuitState::Open) => {
            let why = match rule.map(|r| (&r.strategy, r.window)) {
                Some((BreakerStrategy::ErrorCount { threshold }, window)) => format!(
                    "{figure:.0} errors within {} reached its limit of {threshold}",
                    secs(window)
                ),
                Some((BreakerStrategy::ErrorRatio { threshold }, window)) => format!(
                    "{} of calls failed within {}, at or above its limit of {}",
                    percent(figure),
                    secs(window),
                    percent(*threshold)
                ),
                Some((BreakerStrategy::SlowRequestRatio { max_rt, threshold }, window)) => {
                    format!(
                        "{} of calls took longer than {} ms within {}, at or above its limit \
                         of {}",
                        percent(figure),
                        max_rt.as_millis(),
                        secs(window),
                        percent(*threshold)
                    )
                }
                None => format!("its figure reached {figure:.2}"),
            };
            let recovery = rule.map_or(String::new(), |r| {
                format!("; calls are refused for {}, then probed", secs(r.recovery))
            });
            format!("OPENED: {why}{recovery}")
        }
        (CircuitState::Open, CircuitState::HalfOpen) => {
            let probes = rule.map_or(String::new(), |r| {
                format!(
                    ": letting {} probe call{} through",
                    r.probes,
                    if r.probes == 1 { "" } else { "s" }
                )
            });
            format!("half-open after {:.1} s open{probes}", figure / 1_000.0)
        }
        (CircuitState::HalfOpen, CircuitState::Open) => {
            format!("RE-OPENED: a probe call failed or was slow ({figure:.0} ms)")
        }
        (CircuitState::HalfOpen, CircuitState::Closed) => format!(
            "closed again: {figure:.0} probe call{} succeeded",
            if figure == 1.0 { "" } else { "s" }
        ),
        (from, to) => format!("{from:?} -> {to:?} ({figure:.2})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_read_as_words_with_the_figure_that_caused_them() {
        let count = CircuitBreakerRule::error_count("r", 5).recovery(Duration::from_secs(30));
        assert_eq!(
            describe(
                CircuitState::Closed,
                CircuitState::Open,
                5.0,
                std::slice::from_ref(&count)
            ),
            "OPENED: 5 errors within 1 s reached its limit of 5; calls are refused for 30 s, \
             then probed"
        );
        let ratio = CircuitBreakerRule::error_ratio("r", 0.5);
        let text = describe(CircuitState::Closed, CircuitState::Open, 0.625, &[ratio]);
        assert!(text.starts_with("OPENED: 62% of calls failed"), "{text}");
        assert!(text.contains("limit of 50%"), "{text}");
        assert_eq!(
            describe(
                CircuitState::Open,
                CircuitState::HalfOpen,
                10_048.0,
                std::slice::from_ref(&count)
            ),
            "half-open after 10.0 s open: letting 1 probe call through"
        );
        assert_eq!(
            describe(
                CircuitState::HalfOpen,
                CircuitState::Open,
                812.0,
                std::slice::from_ref(&count)
            ),
            "RE-OPENED: a probe call failed or was slow (812 ms)"
        );
        assert_eq!(
            describe(CircuitState::HalfOpen, CircuitState::Closed, 1.0, &[count]),
            "closed again: 1 probe call succeeded"
        );
        assert_eq!(
            describe(CircuitState::Closed, CircuitState::Open, 3.0, &[]),
            "OPENED: its figure reached 3.00"
        );
    }
}
