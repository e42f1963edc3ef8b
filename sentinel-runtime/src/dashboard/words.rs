//! Circuit-breaker transitions in words for the page (the words are the breaker kind's:
//! `kinds::circuit_breaker::words`).

use crate::breaker::StateChange;
use crate::kinds::circuit_breaker::words::describe_breakers;

/// The transition in words: what happened and the figure that made it happen, in the terms
/// of the resource's breaker rule when it has one, read from its published chain: no lock (the
/// listener runs inside the breaker's transition, on the caller's thread).
pub(crate) fn transition(change: &StateChange) -> String {
    let (from, to, figure) = (change.from, change.to, change.figure);
    crate::registry::get(change.resource)
        .map(|node| node.with_chain(|c| describe_breakers(from, to, figure, &c.circuit_breaker)))
        .unwrap_or_else(|| describe_breakers(from, to, figure, &[]))
}
