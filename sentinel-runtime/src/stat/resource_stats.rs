//! [`ResourceStats`]: a resource's statistics over its second-level window, as rates, and its
//! running totals since it was created.

use std::time::Duration;

pub use crate::block_kinds::BlockTotals;
use crate::error::BlockError;

use super::circuit_state::CircuitState;
use super::node_stats::RunningTotals;
use super::shadow::ShadowStats;
use super::WindowTotals;

impl BlockTotals {
    /// The index in [`RULES`](Self::RULES) a block counts under: its kind's (`cluster` for a
    /// cluster rule's block, [`BlockKind::Cluster`](crate::BlockKind::Cluster)).
    #[inline]
    pub(crate) fn index_of_block(block: &BlockError) -> usize {
        block.kind().index()
    }
}

/// A resource's statistics over its second-level window (the last second, in 10 buckets of
/// 100 ms), as rates per second, and its running totals since the resource was created (the
/// `*_total` fields: exact counts, for counters such as Prometheus's).
///
/// The totals cost the call path nothing: a 100 ms bucket's counts are added to the node's
/// totals when the bucket is reused for a later period, and a read adds what the buckets still
/// hold.
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
    /// Admitted calls since the resource was created (a batch counts its size).
    pub pass_total: u64,
    /// Rejected calls since the resource was created.
    pub block_total: u64,
    /// Finished calls since the resource was created.
    pub complete_total: u64,
    /// Calls that finished with an error or a panic since the resource was created.
    pub error_total: u64,
    /// The response times of every finished call added up (microsecond resolution).
    pub rt_total: Duration,
    /// [`block_total`](Self::block_total) by the kind of rule that blocked the calls.
    pub block_total_by_rule: BlockTotals,
    /// The current limit of the resource's adaptive concurrency rule
    /// ([`FlowRule::adaptive_concurrency`](crate::rules::FlowRule::adaptive_concurrency)); `None`
    /// without one.
    pub concurrency_limit: Option<u64>,
    /// The minimum (no-load) response time the adaptive concurrency limit compares against, as
    /// last measured (see [`AdaptiveConcurrency`](crate::rules::AdaptiveConcurrency)); `None`
    /// without an adaptive rule or before its first measurement.
    pub adaptive_min_rtt: Option<Duration>,
    /// How long ago [`adaptive_min_rtt`](Self::adaptive_min_rtt) was measured (by a probe, or
    /// by a window whose latency fell under it); `None` with it.
    pub adaptive_min_rtt_age: Option<Duration>,
    /// Values the resource's hotspot rules forgot while they were still being limited, because
    /// their tables were full of such values (raise the rule's
    /// [`capacity`](crate::rules::HotspotRule::capacity) if this grows); `None` without hotspot
    /// rules. The same as [`metrics::hotspot_live_evictions`](crate::metrics::hotspot_live_evictions).
    pub hotspot_live_evictions: Option<u64>,
    /// Calls the resource's shadow rules would have refused since it was created, every kind
    /// together (none of them was refused: see `shadow` on the rule types, such as
    /// [`FlowRule::shadow`](crate::rules::FlowRule::shadow)). Not in
    /// [`block_total`](Self::block_total).
    pub shadow_block_total: u64,
    /// [`shadow_block_total`](Self::shadow_block_total) by the kind of rule that would have
    /// refused the calls.
    pub shadow_block_total_by_rule: BlockTotals,
    /// Calls a shadow throttling rule would have made wait for their turn, since the resource
    /// was created (none of them waited).
    pub shadow_wait_total: u64,
    /// Those waits added up.
    pub shadow_wait_time: Duration,
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
            pass_total: 0,
            block_total: 0,
            complete_total: 0,
            error_total: 0,
            rt_total: Duration::ZERO,
            block_total_by_rule: BlockTotals::default(),
            concurrency_limit: None,
            adaptive_min_rtt: None,
            adaptive_min_rtt_age: None,
            hotspot_live_evictions: None,
            shadow_block_total: 0,
            shadow_block_total_by_rule: BlockTotals::default(),
            shadow_wait_total: 0,
            shadow_wait_time: Duration::ZERO,
        }
    }

    /// These statistics with the running totals `t`.
    pub(crate) fn with_running(mut self, t: RunningTotals) -> ResourceStats {
        self.pass_total = t.pass;
        self.block_total = t.block;
        self.complete_total = t.complete;
        self.error_total = t.error;
        self.rt_total = Duration::from_micros(t.rt_sum_us);
        self.block_total_by_rule = BlockTotals::from_counts(t.blocks_by_rule);
        self
    }

    /// These statistics with the shadow rules' counts.
    pub(crate) fn with_shadow(mut self, shadow: &ShadowStats) -> ResourceStats {
        self.shadow_block_total_by_rule = BlockTotals::from_counts(shadow.blocks_by_rule());
        self.shadow_block_total = self.shadow_block_total_by_rule.sum();
        let (waited, nanos) = shadow.waits();
        self.shadow_wait_total = waited;
        self.shadow_wait_time = Duration::from_nanos(nanos);
        self
    }
}

pub(crate) fn avg_rt_ms(rt_sum_us: u64, complete: u64) -> f64 {
    if complete == 0 {
        0.0
    } else {
        rt_sum_us as f64 / complete as f64 / 1_000.0
    }
}
