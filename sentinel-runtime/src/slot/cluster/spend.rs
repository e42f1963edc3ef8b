//! The checks of cluster rules: a flow rule's [`ClusterGate`] and a hotspot rule's
//! [`ClusterHot`]. While the store answers they spend tokens leased from it
//! ([`lease`](crate::slot::cluster::lease)); a key without a lease yet is admitted against its local share
//! (charged with its lease); when the store cannot be reached, or no cluster is started, they
//! limit locally (or pass) as the rule's [`ClusterFallback`](crate::rules::ClusterFallback) says.
//!
//! The call path never makes a network call and never waits: it spends a local lease with one
//! atomic decrement, and a dry lease blocks at once (its refill is asked for).

use std::time::Duration;

use super::lease::Take;
use super::shared::{self, RuleLeases};
use crate::rule_data::cluster::ClusterThreshold;

pub(crate) use crate::error::{CLUSTER_LIMIT, CLUSTER_LOCAL, CLUSTER_LOST, CLUSTER_SHARE};

/// Hotspot values a cluster hotspot rule leases at once, at most.
pub(crate) const MAX_HOT_SLOTS: usize = 4_096;

/// What spending a lease found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spent {
    /// Leased tokens were spent.
    Leased,
    /// The lease is dry and the store said the key's budget is spent: the instances together
    /// used the tokens.
    Dry,
    /// As [`Dry`](Self::Dry), within a window of the store losing the key's state: the lost
    /// window counts as spent.
    Lost,
    /// The key has no lease yet (new to this instance, or its slot was taken by another key):
    /// admit against the local share until its lease arrives; the passes are charged with it.
    Unleased,
}

/// Spends `count` of `key`'s leased tokens. Never waits: a dry lease asks for a refill (the
/// background work is woken) and the call is decided at once: refused if the store's last
/// answer said the key's budget is spent ([`LeaseSlot::is_spent`](super::lease::LeaseSlot::is_spent)),
/// else admitted against the local share while the lease is on its way (a key idle longer
/// than a lease's TTL, whatever the length of the gap, finds its lease lapsed, not spent).
#[inline]
pub(crate) fn spend(leases: &RuleLeases, key: u64, count: u32, now: u64) -> Spent {
    let (took, asked) = leases.lease.take(key, count, now);
    if asked {
        shared::wake();
    }
    if took == Take::Spent {
        return Spent::Leased;
    }
    let slot = leases.lease.slot(key);
    if slot.never_leased(key) {
        return Spent::Unleased;
    }
    // The first lease may have arrived since the take (a thread descheduled between the two):
    // one more try before the call is decided.
    if leases.lease.take(key, count, now).0 == Take::Spent {
        return Spent::Leased;
    }
    if !slot.is_spent(now) {
        return Spent::Unleased;
    }
    if slot.is_lost(now) {
        return Spent::Lost;
    }
    Spent::Dry
}

/// When `count` more tokens come at `limit` per `window_ms`: the retry hint of a cluster block.
pub(crate) fn retry_after(limit: f64, window_ms: u64, count: u32) -> Option<Duration> {
    (limit > 0.0).then(|| {
        Duration::from_secs_f64(window_ms as f64 / 1_000.0 / limit * f64::from(count.max(1)))
    })
}

/// The divisor of a rule's threshold while it limits locally: the instances last seen for a
/// global rule, 1 for a per-instance rule.
pub(crate) fn local_divisor(threshold: ClusterThreshold) -> u32 {
    match threshold {
        ClusterThreshold::Global => shared::instances(),
        ClusterThreshold::PerInstance => 1,
    }
}
