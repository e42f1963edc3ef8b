//! The check of a QPS flow rule marked `cluster` ([`ClusterGate`]): while the store answers it
//! spends tokens leased from it; otherwise it limits locally (or passes) as the rule's
//! [`ClusterFallback`] says (what cluster checks share: `slot::cluster::spend`).
//!
//! The call path never makes a network call and never waits: it spends a local lease with one
//! atomic decrement, and a dry lease blocks at once (its refill is asked for).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::Arc;

use crate::error::BlockError;
use crate::kinds::flow::qps::QpsGate;
use crate::kinds::flow::rule::FlowRule;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::slot::cluster::health::{self, Refusal};
use crate::slot::cluster::lease::FLOW_KEY;
use crate::slot::cluster::shared::{self, RuleLeases, MODE_CONNECTED, MODE_FALLBACK};
use crate::slot::cluster::spend::{
    local_divisor, retry_after, spend, Spent, CLUSTER_LIMIT, CLUSTER_LOCAL, CLUSTER_LOST,
    CLUSTER_SHARE,
};

/// A QPS flow rule marked `cluster`.
#[derive(Debug)]
pub(crate) struct ClusterGate {
    /// The local check while the store cannot be reached (threshold / instances last seen).
    local: QpsGate,
    leases: Arc<RuleLeases>,
    threshold: ClusterThreshold,
    fallback: ClusterFallback,
    /// The threshold as given (`f64` bits).
    given: AtomicU64,
    /// The divisor the local check's threshold was last set for (0: none yet).
    divisor: AtomicU32,
    window_ms: u64,
}

impl ClusterGate {
    /// The gate of a validated QPS `rule` with `cluster` set.
    pub(crate) fn new(rule: &FlowRule, now: u64) -> ClusterGate {
        let threshold = rule.cluster.unwrap_or(ClusterThreshold::Global);
        let leases = shared::leases(
            &rule.resource,
            None,
            threshold,
            rule.threshold,
            0,
            rule.window_ms(),
            1,
        );
        ClusterGate {
            // Strict, whatever the rule says: the local share is what each instance may admit
            // in any interval of the window (the fallback's bound adds these up over the
            // instances), not per aligned window, which lets up to twice the share through
            // across a window boundary (a fallback that began just after one measured 1.19 R
            // over the three instances of a test).
            local: QpsGate::new(&rule.clone().strict(true), now),
            leases,
            threshold,
            fallback: rule.cluster_fallback,
            given: AtomicU64::new(rule.threshold.to_bits()),
            divisor: AtomicU32::new(0),
            window_ms: rule.window_ms(),
        }
    }

    pub(crate) fn given(&self) -> f64 {
        f64::from_bits(self.given.load(Relaxed))
    }

    pub(crate) fn set_threshold(&self, threshold: f64) {
        self.given.store(threshold.to_bits(), Relaxed);
        self.leases.set_limit(threshold);
        self.divisor.store(0, Relaxed);
    }

    /// Admits `count` at `now` (the time the call counts at), or blocks.
    #[inline]
    pub(crate) fn try_acquire(
        &self,
        resource: &'static str,
        now: u64,
        count: u32,
    ) -> Result<u64, BlockError> {
        let n = local_divisor(self.threshold);
        if self.divisor.load(Relaxed) != n {
            self.local.threshold.set(self.given() / f64::from(n));
            self.divisor.store(n, Relaxed);
        }
        if shared::mode() == MODE_CONNECTED {
            match spend(&self.leases, FLOW_KEY, count, now) {
                Spent::Leased => {
                    // Counted in the local window too, up to the local share (refused beyond
                    // it: the window is full), so that a switch to local limiting starts from
                    // this instance's own recent passes instead of a fresh window.
                    let local = self.local.try_acquire(now, count);
                    // For one window after a return from a fallback the local share still
                    // bounds this instance: the others' local passes of the window in progress
                    // are not yet charged to the shared bucket, which may look full.
                    if local.is_none()
                        && shared::resumed_within(now, self.window_ms.saturating_mul(1_000_000))
                    {
                        return Err(self.cluster_block(resource, count, Refusal::FallbackShare));
                    }
                    return Ok(now);
                }
                Spent::Dry => {
                    return Err(self.cluster_block(resource, count, Refusal::BudgetSpent));
                }
                Spent::Lost => {
                    return Err(self.cluster_block(resource, count, Refusal::LostWindow))
                }
                Spent::Unleased => {
                    return match self.local.try_acquire(now, count) {
                        Some(at) => {
                            self.leases.lease.slot(FLOW_KEY).owe(count);
                            Ok(at)
                        }
                        None => Err(self.cluster_block(resource, count, Refusal::FallbackShare)),
                    };
                }
            }
        }
        self.local_fallback(resource, now, count)
    }

    /// Limits locally (or passes): no cluster, or the store cannot be reached. During a
    /// fallback the passes are owed to the shared bucket, charged on return.
    #[inline]
    fn local_fallback(
        &self,
        resource: &'static str,
        now: u64,
        count: u32,
    ) -> Result<u64, BlockError> {
        if self.fallback == ClusterFallback::Pass {
            self.owe(count);
            return Ok(now);
        }
        match self.local.try_acquire(now, count) {
            Some(at) => {
                self.owe(count);
                Ok(at)
            }
            None => {
                health::refused(Refusal::FallbackShare);
                Err(self
                    .local
                    .block(resource, now, count)
                    .because(CLUSTER_LOCAL)
                    .cluster(self.window_ms))
            }
        }
    }

    /// Counts `count` passes admitted locally during a fallback.
    #[inline]
    fn owe(&self, count: u32) {
        if shared::mode() == MODE_FALLBACK {
            self.leases.owed.fetch_add(u64::from(count), Relaxed);
        }
    }

    /// The error of a refusal by the shared limit, counted by its `cause`.
    #[cold]
    #[inline(never)]
    fn cluster_block(&self, resource: &'static str, count: u32, cause: Refusal) -> BlockError {
        health::refused(cause);
        let limit = self.leases.limit();
        let reason = match cause {
            Refusal::BudgetSpent => CLUSTER_LIMIT,
            Refusal::LostWindow => CLUSTER_LOST,
            Refusal::FallbackShare => CLUSTER_SHARE,
        };
        BlockError::flow(resource, self.given(), self.window_ms)
            .because(reason)
            .cluster(self.window_ms)
            .with_retry_after(retry_after(limit, self.window_ms, count))
    }

    /// The error of a call blocked without a decision of this gate.
    pub(crate) fn block_error(&self, resource: &'static str) -> BlockError {
        BlockError::flow(resource, self.given(), self.window_ms)
            .because(CLUSTER_LIMIT)
            .cluster(self.window_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BlockKind;
    use std::sync::{Mutex, PoisonError};

    const T0: u64 = 3_600_000_000_000;

    /// The tests here set the process-wide instances last seen.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn admitted(rule: FlowRule, calls: u32) -> u32 {
        let gate = ClusterGate::new(&rule, T0);
        (0..calls)
            .filter(|_| gate.try_acquire("r", T0, 1).is_ok())
            .count() as u32
    }

    #[test]
    fn without_a_cluster_a_cluster_rule_limits_locally_at_its_threshold() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        assert_ne!(shared::mode(), MODE_CONNECTED);
        let rule = FlowRule::qps("r", 5.0).cluster(ClusterThreshold::Global);
        let gate = ClusterGate::new(&rule, T0);
        let passed = (0..10)
            .filter(|_| gate.try_acquire("r", T0, 1).is_ok())
            .count();
        assert_eq!(passed, 5);
        let err = gate.try_acquire("r", T0, 1).unwrap_err();
        assert_eq!(err.kind(), BlockKind::Cluster);
        assert_eq!(err.reason(), Some(CLUSTER_LOCAL));
        assert!(err.retry_after().is_some());
    }

    #[test]
    fn the_local_share_is_the_threshold_over_the_instances_last_seen_for_global_rules() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        shared::set_instances(4);
        let global = admitted(
            FlowRule::qps("r", 100.0).cluster(ClusterThreshold::Global),
            200,
        );
        let per_instance = admitted(
            FlowRule::qps("r", 100.0).cluster(ClusterThreshold::PerInstance),
            200,
        );
        let pass = admitted(
            FlowRule::qps("r", 100.0)
                .cluster(ClusterThreshold::Global)
                .cluster_fallback(ClusterFallback::Pass),
            200,
        );
        shared::set_instances(1);
        assert_eq!((global, per_instance, pass), (25, 100, 200));
    }
}
