//! [`cluster`]: what the cluster limits did (see [`crate::cluster`]).

use std::sync::atomic::Ordering::Relaxed;

use crate::cluster::{ClusterRefusals, ClusterState};
use crate::slot::cluster::health;
use crate::slot::cluster::shared::{self, MODE_CONNECTED, MODE_FALLBACK};

/// The cluster's counters since the process started, and its state now.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterMetrics {
    /// `None` while no cluster is started (cluster rules limit locally).
    pub state: Option<ClusterState>,
    /// The instances live when the store was last reached (1 without a cluster).
    pub instances: usize,
    /// Leases granted with at least one token.
    pub leases_taken: u64,
    /// Calls to the store: connects, script loads, heartbeats and lease refills, whatever their
    /// result.
    pub redis_calls: u64,
    /// Calls to the store that failed with an error (refused, dropped, an error answer).
    pub redis_errors: u64,
    /// Calls to the store that got no answer within the command timeout.
    pub redis_timeouts: u64,
    /// Of the errors, how many were CROSSSLOT answers of a Redis Cluster (keys of one call in
    /// two slots: never expected, since every call touches one hash-tagged key).
    pub crossslot_errors: u64,
    /// Switches from connected to local limiting.
    pub fallbacks: u64,
    /// Times the store was found to have lost state (an epoch key gone or changed, a key this
    /// instance wrote evicted): the lost window then counts as spent.
    pub state_losses: u64,
    /// Whether the store's `maxmemory-policy` may evict the cluster's keys.
    pub keys_evictable: bool,
    /// Times this instance found its hotspot value key differing from the store's.
    pub value_key_splits: u64,
    /// Lease answers that said another instance runs the rule with another threshold.
    pub rule_disagreements: u64,
    /// Calls admitted locally during fallbacks and charged to the shared buckets on return.
    pub charged_back: u64,
    /// Instances missing from the heartbeats for less than the grace period now (their share
    /// is held back).
    pub held_back: u64,
    /// New hotspot values past the cap of values leased per second, limited locally.
    pub values_over_cap: u64,
    /// Failures of the store that did not persist: ridden out on the leases in hand instead of
    /// falling back.
    pub failures_ridden_out: u64,
    /// The calls cluster rules refused, by cause (the same counts as
    /// [`ClusterStatus::refusals`](crate::cluster::ClusterStatus::refusals)).
    pub refusals: ClusterRefusals,
}

/// The cluster limits' state and counters.
///
/// ```
/// let m = sentinel_runtime::metrics::cluster();
/// assert_eq!(m.state, None); // no cluster started
/// ```
pub fn cluster() -> ClusterMetrics {
    let ok = shared::CALLS_OK.load(Relaxed);
    let errors = shared::CALLS_ERROR.load(Relaxed);
    let timeouts = shared::CALLS_TIMEOUT.load(Relaxed);
    ClusterMetrics {
        state: match shared::mode() {
            MODE_CONNECTED => Some(ClusterState::Connected),
            MODE_FALLBACK => Some(ClusterState::Fallback),
            _ => None,
        },
        instances: shared::instances() as usize,
        leases_taken: shared::LEASES_TAKEN.load(Relaxed),
        redis_calls: ok + errors + timeouts,
        redis_errors: errors,
        redis_timeouts: timeouts,
        crossslot_errors: shared::CROSSSLOT.load(Relaxed),
        fallbacks: shared::FALLBACKS.load(Relaxed),
        state_losses: health::STATE_LOSSES.load(Relaxed),
        keys_evictable: health::KEYS_EVICTABLE.load(Relaxed),
        value_key_splits: health::VALUE_KEY_SPLITS.load(Relaxed),
        rule_disagreements: health::RULE_DISAGREEMENTS.load(Relaxed),
        charged_back: health::CHARGED_BACK.load(Relaxed),
        held_back: health::HELD_BACK.load(Relaxed),
        values_over_cap: health::VALUES_OVER_CAP.load(Relaxed),
        failures_ridden_out: health::FAILURES_RIDDEN_OUT.load(Relaxed),
        refusals: ClusterRefusals::so_far(),
    }
}
