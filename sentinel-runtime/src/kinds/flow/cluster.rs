//! The checks of cluster rules: a flow rule's [`ClusterGate`] and a hotspot rule's
//! [`ClusterHot`]. While the store answers they spend tokens leased from it
//! ([`lease`](crate::slot::cluster::lease)); a key without a lease yet is admitted against its local share
//! (charged with its lease); when the store cannot be reached, or no cluster is started, they
//! limit locally (or pass) as the rule's [`ClusterFallback`] says.
//!
//! The call path never makes a network call and never waits: it spends a local lease with one
//! atomic decrement, and a dry lease blocks at once (its refill is asked for).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

use crate::error::BlockError;
use crate::kinds::flow::qps::QpsGate;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::HotspotRule;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::slot::cluster::lease::{key_of, Take, FLOW_KEY};
use crate::slot::cluster::shared::{self, RuleLeases, MODE_CONNECTED, MODE_FALLBACK};
use crate::slot::param_table::{ParamTable, RateDecision};

/// The reason a cluster rule's block gives while the instances share the limit.
pub(crate) const CLUSTER_LIMIT: &str =
    "cluster limit: the instances together used the rule's tokens";
/// The reason a cluster rule's block gives while it limits locally.
pub(crate) const CLUSTER_LOCAL: &str = "cluster rule limiting locally (no cluster store reachable)";

/// Hotspot values a cluster hotspot rule leases at once, at most.
const MAX_HOT_SLOTS: usize = 4_096;

/// What spending a lease found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spent {
    /// Leased tokens were spent.
    Leased,
    /// The lease is dry: the instances together used the tokens.
    Dry,
    /// The key has no lease yet (new to this instance, or its slot was taken by another key):
    /// admit against the local share until its lease arrives; the passes are charged with it.
    Unleased,
}

/// Spends `count` of `key`'s leased tokens. Never waits: a dry lease asks for a refill (the
/// background work is woken) and the call is decided at once.
#[inline]
fn spend(leases: &RuleLeases, key: u64, count: u32, now: u64) -> Spent {
    let (took, asked) = leases.lease.take(key, count, now);
    if asked {
        shared::wake();
    }
    if took == Take::Spent {
        return Spent::Leased;
    }
    if leases.lease.slot(key).never_leased(key) {
        return Spent::Unleased;
    }
    // The first lease may have arrived since the take (a thread descheduled between the two):
    // one more try before the call is blocked.
    if leases.lease.take(key, count, now).0 == Take::Spent {
        return Spent::Leased;
    }
    Spent::Dry
}

/// When `count` more tokens come at `limit` per `window_ms`: the retry hint of a cluster block.
fn retry_after(limit: f64, window_ms: u64, count: u32) -> Option<Duration> {
    (limit > 0.0).then(|| {
        Duration::from_secs_f64(window_ms as f64 / 1_000.0 / limit * f64::from(count.max(1)))
    })
}

/// The divisor of a rule's threshold while it limits locally: the instances last seen for a
/// global rule, 1 for a per-instance rule.
fn local_divisor(threshold: ClusterThreshold) -> u32 {
    match threshold {
        ClusterThreshold::Global => shared::instances(),
        ClusterThreshold::PerInstance => 1,
    }
}

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
            local: QpsGate::new(rule, now),
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
                        return Err(self.cluster_block(resource, count));
                    }
                    return Ok(now);
                }
                Spent::Dry => return Err(self.cluster_block(resource, count)),
                Spent::Unleased => {
                    return match self.local.try_acquire(now, count) {
                        Some(at) => {
                            self.leases.lease.slot(FLOW_KEY).owe(count);
                            Ok(at)
                        }
                        None => Err(self.cluster_block(resource, count)),
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
            None => Err(self
                .local
                .block(resource, now, count)
                .because(CLUSTER_LOCAL)),
        }
    }

    /// Counts `count` passes admitted locally during a fallback.
    #[inline]
    fn owe(&self, count: u32) {
        if shared::mode() == MODE_FALLBACK {
            self.leases.owed.fetch_add(u64::from(count), Relaxed);
        }
    }

    #[cold]
    #[inline(never)]
    fn cluster_block(&self, resource: &'static str, count: u32) -> BlockError {
        let limit = self.leases.limit();
        BlockError::flow(resource, self.given(), self.window_ms)
            .because(CLUSTER_LIMIT)
            .with_retry_after(retry_after(limit, self.window_ms, count))
    }

    /// The error of a call blocked without a decision of this gate.
    pub(crate) fn block_error(&self, resource: &'static str) -> BlockError {
        BlockError::flow(resource, self.given(), self.window_ms).because(CLUSTER_LIMIT)
    }
}

/// What a cluster hotspot rule decided for a value.
#[derive(Debug)]
enum HotDecision {
    /// Spent a leased token.
    Leased,
    /// The instances together used the value's tokens: retry after this.
    Blocked(Option<Duration>),
    /// Limit locally, with the threshold's local share ([`ClusterHot::local_divisor`]).
    Local,
    /// The value has no lease yet: admit against the local share, and charge the passes with
    /// its lease.
    Unleased,
    /// Admit (the rule passes everything while the store cannot be reached).
    Pass,
}

/// The cluster part of a QPS hotspot rule marked `cluster`.
#[derive(Debug)]
pub(crate) struct ClusterHot {
    leases: Arc<RuleLeases>,
    threshold: ClusterThreshold,
    fallback: ClusterFallback,
    window_ms: u64,
    /// The rule's threshold and parameter, for the error.
    given: f64,
    param_index: usize,
}

impl ClusterHot {
    /// The cluster part of a validated `rule`, if it has `cluster` set.
    pub(crate) fn of(rule: &HotspotRule) -> Option<ClusterHot> {
        let threshold = rule.cluster?;
        let window_ms = rule.window.as_millis() as u64;
        let leases = shared::leases(
            &rule.resource,
            Some(rule.param_index),
            threshold,
            rule.threshold,
            u64::from(rule.burst),
            window_ms,
            rule.capacity.clamp(16, MAX_HOT_SLOTS),
        );
        Some(ClusterHot {
            leases,
            threshold,
            fallback: rule.cluster_fallback,
            window_ms,
            given: rule.threshold,
            param_index: rule.param_index,
        })
    }

    /// Decides for `count` calls of the value hashed `key` at `now`: admitted (`Ok`, a pass
    /// that holds nothing to give back) on a leased token (and charged in the local `table` at the `local` pace, interval and tolerance, up
    /// to the local share, so that a switch to local limiting starts from the value's recent
    /// passes), blocked, admitted without a check (fallback `Pass`), or `None`: limit locally
    /// at the `local` pace.
    #[inline]
    pub(crate) fn check(
        &self,
        resource: &'static str,
        table: &ParamTable,
        key: u64,
        count: u32,
        now: u64,
        local: (u64, u64),
    ) -> Option<Result<(), BlockError>> {
        match self.decide(key, count, now) {
            HotDecision::Leased => {
                let _ = table.acquire_rate(key, now, count, local.0, local.1, 0);
                Some(Ok(()))
            }
            HotDecision::Unleased => {
                // A tenth of the local share's burst while the lease is on its way (at least
                // one call): the passes are charged with the lease, and a value whose lease is
                // slow must not run the shared bucket into debt.
                let tolerance = (local.1 / 10).max(local.0);
                let pace = (local.0, tolerance);
                Some(self.owed_locally(resource, table, key, count, now, pace, CLUSTER_LIMIT))
            }
            HotDecision::Pass => {
                if shared::mode() == MODE_FALLBACK {
                    self.leases.lease.slot(key_of(key)).owe(count);
                }
                Some(Ok(()))
            }
            HotDecision::Blocked(retry) => Some(Err(BlockError::hot_param(
                resource,
                self.given,
                self.param_index,
                retry,
            )
            .because(CLUSTER_LIMIT))),
            // A started cluster that cannot reach its store: the local share, owed to the
            // value's shared bucket (charged with its next lease after the return).
            HotDecision::Local if shared::mode() == MODE_FALLBACK => {
                Some(self.owed_locally(resource, table, key, count, now, local, CLUSTER_LOCAL))
            }
            HotDecision::Local => None,
        }
    }

    /// Admits `count` calls of the value hashed `key` against the local `table` at `pace`
    /// (interval, tolerance), owing the passes to the value's shared bucket; a block gives
    /// `reason`.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn owed_locally(
        &self,
        resource: &'static str,
        table: &ParamTable,
        key: u64,
        count: u32,
        now: u64,
        pace: (u64, u64),
        reason: &'static str,
    ) -> Result<(), BlockError> {
        match table.acquire_rate(key, now, count, pace.0, pace.1, 0) {
            RateDecision::Pass | RateDecision::Wait(_) => {
                self.leases.lease.slot(key_of(key)).owe(count);
                Ok(())
            }
            RateDecision::Block { retry_after } => Err(BlockError::hot_param(
                resource,
                self.given,
                self.param_index,
                (retry_after != u64::MAX).then(|| Duration::from_nanos(retry_after)),
            )
            .because(reason)),
        }
    }

    /// The divisor of the threshold while the rule limits locally (the local share).
    pub(crate) fn local_divisor(&self) -> u32 {
        local_divisor(self.threshold)
    }

    /// Decides for `count` calls of the value hashed `hash` at `now`.
    #[inline]
    fn decide(&self, hash: u64, count: u32, now: u64) -> HotDecision {
        if shared::mode() == MODE_CONNECTED && shared::VALUES_SHARED.load(Relaxed) {
            return match spend(&self.leases, key_of(hash), count, now) {
                Spent::Leased => HotDecision::Leased,
                Spent::Dry => {
                    HotDecision::Blocked(retry_after(self.leases.limit(), self.window_ms, count))
                }
                Spent::Unleased => HotDecision::Unleased,
            };
        }
        match self.fallback {
            ClusterFallback::Pass => HotDecision::Pass,
            ClusterFallback::Local => HotDecision::Local,
        }
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
        assert_eq!(err.kind(), BlockKind::Flow);
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
