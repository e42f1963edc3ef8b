//! How well the cluster's shared limits hold now, beyond connected or not: what the background
//! work found wrong (state the store lost, keys it may evict, a split hotspot value key, rules
//! that disagree between instances), read by [`Cluster::status`](crate::cluster::Cluster) and
//! [`metrics::cluster`](crate::metrics::cluster).

// Without the `redis` feature nothing finds anything wrong.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Mutex, PoisonError};

use crate::clock;

/// How long a lost state is reported after it was last found.
pub(crate) const LOST_REPORTED_NANOS: u64 = 5_000_000_000;
/// How long a disagreement between the instances' rules is reported after it was last seen.
pub(crate) const DISAGREE_REPORTED_NANOS: u64 = 5_000_000_000;

/// Times the store was found to have lost state (an epoch gone or changed, a key evicted).
pub(crate) static STATE_LOSSES: AtomicU64 = AtomicU64::new(0);
/// When state was last found lost (runtime clock, precise), 0: never.
static LOST_AT: AtomicU64 = AtomicU64::new(0);
/// Lease answers that said another instance runs the rule with another threshold.
pub(crate) static RULE_DISAGREEMENTS: AtomicU64 = AtomicU64::new(0);
static DISAGREE_AT: AtomicU64 = AtomicU64::new(0);
/// Times the hotspot value key in the store differed from the one in force here.
pub(crate) static VALUE_KEY_SPLITS: AtomicU64 = AtomicU64::new(0);
/// Whether the value key in force here differs from the store's now.
pub(crate) static VALUE_KEY_SPLIT: AtomicBool = AtomicBool::new(false);
/// Whether the store may evict the cluster's keys (its `maxmemory-policy` evicts).
pub(crate) static KEYS_EVICTABLE: AtomicBool = AtomicBool::new(false);
/// The store's `maxmemory-policy`, when it told it.
static POLICY: Mutex<Option<String>> = Mutex::new(None);
/// Calls admitted locally while the store could not be reached, charged to the shared bucket
/// on return.
pub(crate) static CHARGED_BACK: AtomicU64 = AtomicU64::new(0);
/// Instances missing from the heartbeats within the grace period now (their share is held
/// back).
pub(crate) static HELD_BACK: AtomicU64 = AtomicU64::new(0);
/// New hotspot values past the cap of values leased per second, limited locally.
pub(crate) static VALUES_OVER_CAP: AtomicU64 = AtomicU64::new(0);
/// Times the background work stayed on the store through a failure that did not persist.
pub(crate) static FAILURES_RIDDEN_OUT: AtomicU64 = AtomicU64::new(0);

/// Why the limit the instances share refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The store said the key's budget is spent: the instances together used the tokens.
    BudgetSpent,
    /// The key's budget is short because the store lost its state (the lost window counts as
    /// spent).
    LostWindow,
    /// This instance's local share: the store cannot be reached (or no cluster is started),
    /// the key waits for its lease, or a window after a return from a fallback.
    FallbackShare,
}

/// Refusals by the shared limit, by [`Refusal`] (in its order).
static REFUSED: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Counts a refusal by the shared limit.
#[cold]
pub(crate) fn refused(cause: Refusal) {
    REFUSED[cause as usize].fetch_add(1, Relaxed);
}

/// The refusals by the shared limit since the process started: budget spent, lost window,
/// fallback share.
pub(crate) fn refusals() -> [u64; 3] {
    std::array::from_fn(|i| REFUSED[i].load(Relaxed))
}

/// Records that the store lost state (found now).
pub(crate) fn state_lost() {
    STATE_LOSSES.fetch_add(1, Relaxed);
    LOST_AT.store(clock::precise_nanos().max(1), Relaxed);
}

/// Whether state was found lost lately.
pub(crate) fn is_state_lost() -> bool {
    recent(&LOST_AT, LOST_REPORTED_NANOS)
}

/// Records that an instance runs a rule with another threshold.
pub(crate) fn rules_disagree() {
    RULE_DISAGREEMENTS.fetch_add(1, Relaxed);
    DISAGREE_AT.store(clock::precise_nanos().max(1), Relaxed);
}

/// Whether instances disagreed on a rule lately.
pub(crate) fn do_rules_disagree() -> bool {
    recent(&DISAGREE_AT, DISAGREE_REPORTED_NANOS)
}

fn recent(at: &AtomicU64, nanos: u64) -> bool {
    let at = at.load(Relaxed);
    at != 0 && clock::precise_nanos().saturating_sub(at) < nanos
}

/// Records whether the value key in force here is the store's.
pub(crate) fn set_value_key_split(split: bool) {
    if split && !VALUE_KEY_SPLIT.swap(true, Relaxed) {
        VALUE_KEY_SPLITS.fetch_add(1, Relaxed);
    } else if !split {
        VALUE_KEY_SPLIT.store(false, Relaxed);
    }
}

/// Records the store's eviction policy (`None`: it did not say).
pub(crate) fn set_policy(policy: Option<String>) {
    let evicts = policy
        .as_deref()
        .is_some_and(|p| !p.eq_ignore_ascii_case("noeviction"));
    KEYS_EVICTABLE.store(evicts, Relaxed);
    *POLICY.lock().unwrap_or_else(PoisonError::into_inner) = policy;
}

/// The store's eviction policy, if it said.
pub(crate) fn policy() -> Option<String> {
    POLICY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Forgets what is reported now (the cluster stopped); counters are kept.
pub(crate) fn reset() {
    LOST_AT.store(0, Relaxed);
    DISAGREE_AT.store(0, Relaxed);
    VALUE_KEY_SPLIT.store(false, Relaxed);
    HELD_BACK.store(0, Relaxed);
    set_policy(None);
}
