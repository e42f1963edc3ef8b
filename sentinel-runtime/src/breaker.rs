//! The circuit breakers' public API: their states and the state-change listeners. The rules are
//! [`rules::CircuitBreakerRule`](crate::rules::CircuitBreakerRule); the check that trips them
//! runs in the slot chain.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

// Defined with the statistics, which report it; its public path is this one.
pub use crate::stat::circuit_state::CircuitState;

/// One transition of a circuit breaker, as listeners receive it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StateChange {
    /// The resource whose breaker changed.
    pub resource: &'static str,
    /// The state before.
    pub from: CircuitState,
    /// The state after.
    pub to: CircuitState,
    /// The figure that caused the change:
    /// Closed -> Open: the slow ratio, error ratio or error count that reached the threshold;
    /// Open -> HalfOpen: the milliseconds spent open;
    /// HalfOpen -> Open: the failed or slow probe's response time in milliseconds;
    /// HalfOpen -> Closed: the number of probes that succeeded.
    pub figure: f64,
    /// When, on the runtime clock (nanoseconds).
    pub at_nanos: u64,
    /// The breaker is a shadow rule's (see
    /// [`CircuitBreakerRule::shadow`](crate::rules::CircuitBreakerRule::shadow)): it blocks
    /// nothing, and its transitions are not counted in
    /// [`metrics::circuit_breaker_transitions`](crate::metrics::circuit_breaker_transitions).
    pub shadow: bool,
}

type Listener = Arc<dyn Fn(&StateChange) + Send + Sync>;

static LISTENERS: RwLock<Vec<Listener>> = RwLock::new(Vec::new());

/// Calls `listener` on every circuit-breaker transition of every resource, in the order the
/// transitions happen for each breaker (a breaker's transitions are serialised, and its
/// listeners run before its next transition).
///
/// A listener runs on the thread that caused the transition. It must not enter the resource
/// whose change it is observing (that could need the same breaker's next transition).
///
/// A listener that panics does not disturb the call that caused the transition: the panic is
/// contained (and reported by the panic hook, which prints it to stderr by default), the other
/// listeners still run, and the call's exit is recorded as usual.
///
/// ```
/// use sentinel_runtime::breaker::{on_state_change, CircuitState};
/// on_state_change(|change| {
///     if change.to == CircuitState::Open {
///         eprintln!("{} opened at {}", change.resource, change.figure);
///     }
/// });
/// ```
pub fn on_state_change(listener: impl Fn(&StateChange) + Send + Sync + 'static) {
    LISTENERS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::new(listener));
}

/// Transitions since start by resource, from and to (bounded: resources are capped).
type Transitions = BTreeMap<(&'static str, CircuitState, CircuitState), u64>;

static TRANSITIONS: Mutex<Transitions> = Mutex::new(BTreeMap::new());

/// How many transitions each resource's breakers made since start, by from and to state, sorted.
pub(crate) fn transition_counts() -> Vec<((&'static str, CircuitState, CircuitState), u64)> {
    let counts = TRANSITIONS.lock().unwrap_or_else(PoisonError::into_inner);
    counts.iter().map(|(k, n)| (*k, *n)).collect()
}

pub(crate) fn notify(change: &StateChange) {
    if !change.shadow {
        *TRANSITIONS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((change.resource, change.from, change.to))
            .or_default() += 1;
    }
    #[cfg(feature = "tracing")]
    if change.shadow {
        tracing::info!(
            target: "sentinel",
            resource = change.resource,
            from = change.from.label(),
            to = change.to.label(),
            figure = change.figure,
            "shadow circuit breaker transition (it blocks nothing)"
        );
    } else {
        tracing::warn!(
            target: "sentinel",
            resource = change.resource,
            from = change.from.label(),
            to = change.to.label(),
            figure = change.figure,
            "circuit breaker transition"
        );
    }
    let listeners = LISTENERS.read().unwrap_or_else(PoisonError::into_inner);
    for listener in listeners.iter() {
        // Contained: a listener runs inside the entry and exit paths, which must finish.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(change)));
    }
}
