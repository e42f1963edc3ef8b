//! The cluster part of a QPS hotspot rule marked `cluster` ([`ClusterHot`]): each value's
//! tokens leased from the store while it answers; otherwise the rule limits locally (or passes)
//! as its [`ClusterFallback`] says (what cluster checks share: `slot::cluster::spend`).

use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Duration;

use crate::error::BlockError;
use crate::kinds::hotspot::rule::HotspotRule;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::slot::cluster::health::{self, Refusal};
use crate::slot::cluster::lease::key_of;
use crate::slot::cluster::shared::{self, RuleLeases, MODE_CONNECTED, MODE_FALLBACK};
use crate::slot::cluster::spend::{
    local_divisor, retry_after, spend, Spent, CLUSTER_LIMIT, CLUSTER_LOCAL, CLUSTER_LOST,
    CLUSTER_SHARE, MAX_HOT_SLOTS,
};
use crate::slot::param_table::{ParamTable, RateDecision};

/// What a cluster hotspot rule decided for a value.
#[derive(Debug)]
enum HotDecision {
    /// Spent a leased token.
    Leased,
    /// The instances together used the value's tokens (or the store lost them: `true`):
    /// retry after this.
    Blocked(Option<Duration>, bool),
    /// Limit locally, with the threshold's local share ([`ClusterHot::local_divisor`]).
    Local,
    /// The value has no lease yet: admit against the local share, and charge the passes with
    /// its lease.
    Unleased,
    /// Admit (the rule passes everything while the store cannot be reached).
    Pass,
}

/// The local `pace` (interval, tolerance) with a tenth of its burst, at least one call: what a
/// value admits locally while its calls are owed to its shared bucket.
fn without_burst(pace: (u64, u64)) -> (u64, u64) {
    (pace.0, (pace.1 / 10).max(pace.0))
}

/// The cluster part of a QPS hotspot rule marked `cluster`.
#[derive(Clone, Debug)]
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
    /// that holds nothing to give back) on a leased token (and charged in the local `table` at
    /// the `local` pace, interval and tolerance, up to the local share, so that a switch to
    /// local limiting starts from the value's recent passes; for one window after a return
    /// from a fallback a leased call beyond the local share is blocked), blocked, admitted
    /// without a check (fallback `Pass`), admitted against the local share without its burst
    /// (no lease yet, or the store cannot be reached: owed to the shared bucket), or `None`:
    /// limit locally at the `local` pace (no cluster started).
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
                let counted = table.acquire_rate(key, now, count, local.0, local.1, 0);
                // For one window after a return from a fallback the local share still bounds
                // the value here, as it does a flow rule: the other instances' local passes of
                // the window in progress are not yet charged to the value's shared bucket,
                // which may look full.
                if let RateDecision::Block { retry_after } = counted
                    && shared::resumed_within(now, self.window_ms.saturating_mul(1_000_000))
                {
                    let retry =
                        (retry_after != u64::MAX).then(|| Duration::from_nanos(retry_after));
                    return Some(Err(self.block(resource, retry, Refusal::FallbackShare)));
                }
                Some(Ok(()))
            }
            HotDecision::Unleased => {
                // A tenth of the local share's burst while the lease is on its way (at least
                // one call): the passes are charged with the lease, and a value whose lease is
                // slow must not run the shared bucket into debt.
                let pace = without_burst(local);
                Some(self.owed_locally(resource, table, key, count, now, pace, CLUSTER_SHARE))
            }
            HotDecision::Pass => {
                if shared::mode() == MODE_FALLBACK {
                    self.leases.lease.slot(key_of(key)).owe(count);
                }
                Some(Ok(()))
            }
            HotDecision::Blocked(retry, lost) => {
                let cause = if lost {
                    Refusal::LostWindow
                } else {
                    Refusal::BudgetSpent
                };
                Some(Err(self.block(resource, retry, cause)))
            }
            // A started cluster that cannot reach its store: the local share, owed to the
            // value's shared bucket (charged with its next lease after the return). Without
            // the share's burst (a tenth of it): the value's leased passes were counted at the
            // local pace, which leaves a value taking its share its whole burst, and each
            // instance cut off would admit its share twice over in its first second alone (a
            // flow rule's window holds its recent passes: it goes on from them).
            HotDecision::Local if shared::mode() == MODE_FALLBACK => {
                let pace = without_burst(local);
                Some(self.owed_locally(resource, table, key, count, now, pace, CLUSTER_LOCAL))
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
            RateDecision::Block { retry_after } => {
                health::refused(Refusal::FallbackShare);
                Err(BlockError::hot_param(
                    resource,
                    self.given,
                    self.param_index,
                    (retry_after != u64::MAX).then(|| Duration::from_nanos(retry_after)),
                )
                .because(reason)
                .cluster(self.window_ms))
            }
        }
    }

    /// `err`, the local limit's refusal of a value while the rule limits locally (no cluster
    /// started, or its values' key split), as a cluster refusal by the local share (counted).
    #[cold]
    pub(crate) fn local_block(&self, err: BlockError) -> BlockError {
        health::refused(Refusal::FallbackShare);
        err.because(CLUSTER_LOCAL).cluster(self.window_ms)
    }

    /// The error of a refusal by the shared limit, counted by its `cause`.
    #[cold]
    #[inline(never)]
    fn block(&self, resource: &'static str, retry: Option<Duration>, cause: Refusal) -> BlockError {
        health::refused(cause);
        let reason = match cause {
            Refusal::BudgetSpent => CLUSTER_LIMIT,
            Refusal::LostWindow => CLUSTER_LOST,
            Refusal::FallbackShare => CLUSTER_SHARE,
        };
        BlockError::hot_param(resource, self.given, self.param_index, retry)
            .because(reason)
            .cluster(self.window_ms)
    }

    /// The divisor of the threshold while the rule limits locally (the local share).
    pub(crate) fn local_divisor(&self) -> u32 {
        local_divisor(self.threshold)
    }

    /// Decides for `count` calls of the value hashed `hash` at `now`.
    #[inline]
    fn decide(&self, hash: u64, count: u32, now: u64) -> HotDecision {
        if shared::mode() == MODE_CONNECTED && shared::VALUES_SHARED.load(Relaxed) {
            let spent = spend(&self.leases, key_of(hash), count, now);
            return match spent {
                Spent::Leased => HotDecision::Leased,
                Spent::Dry | Spent::Lost => HotDecision::Blocked(
                    retry_after(self.leases.limit(), self.window_ms, count),
                    matches!(spent, Spent::Lost),
                ),
                Spent::Unleased => HotDecision::Unleased,
            };
        }
        match self.fallback {
            ClusterFallback::Pass => HotDecision::Pass,
            ClusterFallback::Local => HotDecision::Local,
        }
    }
}
