//! [`CircuitState`]: the state of a circuit breaker, as the statistics report it
//! ([`ResourceStats::circuit`](super::ResourceStats::circuit)). Defined in the statistics layer
//! so that the statistics need not import the breakers above them; its public path is
//! `breaker::CircuitState`.

use std::fmt;

/// The state of a circuit breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CircuitState {
    /// Calls pass and are counted.
    Closed,
    /// A limited number of probe calls pass; their outcome closes or reopens the breaker.
    HalfOpen,
    /// Every call is blocked until the recovery time has passed.
    Open,
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CircuitState::Closed => "closed",
            CircuitState::HalfOpen => "half-open",
            CircuitState::Open => "open",
        })
    }
}

impl CircuitState {
    /// The state's name as metrics and events label it: `closed`, `half_open` or `open`.
    pub fn label(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::HalfOpen => "half_open",
            CircuitState::Open => "open",
        }
    }
}
