//! [`ResourceStats`]: a resource's statistics over its second-level window, as rates.

use crate::breaker::CircuitState;

use super::WindowTotals;

/// A resource's statistics over its second-level window (the last second, in 10 buckets of
/// 100 ms), as rates per second.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResourceStats {
    /// Admitted calls per second.
    pub pass_qps: f64,
    /// Rejected calls per second.
    pub block_qps: f64,
    /// Finished calls per second.
    pub complete_qps: f64,
    /// Calls per second that finished with an error or a panic.
    pub error_qps: f64,
    /// Average response time of the finished calls, in milliseconds (0 if none finished).
    /// Response times have the resolution of the runtime clock (1–4 ms on Linux).
    pub avg_rt_ms: f64,
    /// Calls inside now.
    pub concurrency: u64,
    /// The state of the resource's circuit breakers, the most restrictive if several (Open over
    /// HalfOpen over Closed); `None` without circuit-breaker rules.
    pub circuit: Option<CircuitState>,
}

impl ResourceStats {
    pub(crate) fn from_totals(t: WindowTotals, circuit: Option<CircuitState>) -> ResourceStats {
        // The second-level window is exactly one second, so a count is a rate.
        ResourceStats {
            pass_qps: t.pass as f64,
            block_qps: t.block as f64,
            complete_qps: t.complete as f64,
            error_qps: t.error as f64,
            avg_rt_ms: avg_rt_ms(t.rt_sum_us, t.complete),
            concurrency: t.concurrency.max(0) as u64,
            circuit,
        }
    }
}

pub(crate) fn avg_rt_ms(rt_sum_us: u64, complete: u64) -> f64 {
    if complete == 0 {
        0.0
    } else {
        rt_sum_us as f64 / complete as f64 / 1_000.0
    }
}
