//! What a cluster reports: its [`ClusterState`], [`ClusterStatus`] and what degrades it
//! ([`ClusterDegraded`]).

use std::fmt;

/// Whether cluster rules share their limits now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterState {
    /// The store answers: cluster rules spend leased tokens.
    Connected,
    /// The store cannot be reached: cluster rules limit locally (or pass, as each says).
    Fallback,
}

impl ClusterState {
    /// The state's name in metrics: `connected` or `fallback`.
    pub fn label(self) -> &'static str {
        match self {
            ClusterState::Connected => "connected",
            ClusterState::Fallback => "fallback",
        }
    }
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A started cluster's state, as `Cluster::status` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterStatus {
    /// Connected, or limiting locally.
    pub state: ClusterState,
    /// The instances live when the store was last reached (this one included).
    pub instances: usize,
    /// The last error talking to the store, if the last attempt failed.
    pub last_error: Option<String>,
    /// The key prefix of this cluster's keys.
    pub namespace: String,
    /// This instance's id in the store's set of instances.
    pub instance_id: String,
    /// Why the shared limits hold less than exactly now, though the store answers (empty:
    /// nothing). See [`ClusterStatus::is_degraded`].
    pub degraded: Vec<ClusterDegraded>,
    /// The store's `maxmemory-policy`, when it told it (managed Redis may refuse `CONFIG GET`).
    pub eviction_policy: Option<String>,
    /// Instances missing from the heartbeats for less than the grace period (10 s): they may be
    /// cut off from the store and admitting their local share, which the connected instances
    /// hold back.
    pub held_back: usize,
    /// The calls the shared limits refused in this process, by cause.
    pub refusals: ClusterRefusals,
}

/// The calls cluster rules refused since the process started, by cause: each is a
/// [`BlockKind::Cluster`](crate::BlockKind::Cluster) refusal, whose
/// [`reason`](crate::BlockError::reason) says the same in words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ClusterRefusals {
    /// The store said the budget is spent: the instances together used the tokens (the limit
    /// working as meant, when the fleet offers more than it).
    pub budget_spent: u64,
    /// The budget is short because the store lost the key's state (flushed, evicted, failed
    /// over): the lost window counts as spent, for one window.
    pub lost_window: u64,
    /// This instance's local share (the threshold over the instances last seen) was used: the
    /// store cannot be reached (or no cluster is started), the key waits for its lease (new,
    /// idle past its lease's TTL, or outrunning it), or a window after a return from a fallback.
    pub fallback_share: u64,
}

impl ClusterRefusals {
    /// Every cause with its name in metrics (`budget_spent`, `lost_window`, `fallback_share`)
    /// and its count.
    pub fn by_cause(&self) -> [(&'static str, u64); 3] {
        [
            ("budget_spent", self.budget_spent),
            ("lost_window", self.lost_window),
            ("fallback_share", self.fallback_share),
        ]
    }

    /// The refusals counted in this process so far.
    pub(crate) fn so_far() -> ClusterRefusals {
        let [budget_spent, lost_window, fallback_share] = crate::slot::cluster::health::refusals();
        ClusterRefusals {
            budget_spent,
            lost_window,
            fallback_share,
        }
    }

    /// Every refusal, whatever its cause.
    pub fn total(&self) -> u64 {
        self.budget_spent + self.lost_window + self.fallback_share
    }
}

impl ClusterStatus {
    /// Whether the store answers but something makes the shared limits hold less than exactly
    /// ([`degraded`](Self::degraded) is not empty).
    pub fn is_degraded(&self) -> bool {
        !self.degraded.is_empty()
    }

    /// `connected`, `degraded` (connected, with [`degraded`](Self::degraded) not empty) or
    /// `fallback`.
    pub fn health(&self) -> &'static str {
        match self.state {
            ClusterState::Connected if self.is_degraded() => "degraded",
            state => state.label(),
        }
    }
}

/// What makes a connected cluster's limits hold less than exactly (see the
/// [module docs](super)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClusterDegraded {
    /// The store lost state in the last 5 s (flushed, evicted, restarted empty, failed over
    /// to a replica without it): the lost window counts as spent, so the instances admit less
    /// than the limit for up to one window, never more.
    StateLost,
    /// The store's `maxmemory-policy` may evict the cluster's keys (set `noeviction`): a key
    /// lost is detected as [`StateLost`](Self::StateLost).
    KeysEvictable,
    /// This instance hashes hotspot values with another key than the store's (values hashed
    /// before the cluster started, or the store lost the key and another instance wrote its
    /// own): its cluster hotspot rules limit locally.
    ValueKeySplit,
    /// In the last 5 s another instance leased with another threshold for the same rule.
    RulesDisagree,
}

impl ClusterDegraded {
    /// The name in metrics: `state_lost`, `keys_evictable`, `value_key_split` or
    /// `rules_disagree`.
    pub fn label(self) -> &'static str {
        match self {
            ClusterDegraded::StateLost => "state_lost",
            ClusterDegraded::KeysEvictable => "keys_evictable",
            ClusterDegraded::ValueKeySplit => "value_key_split",
            ClusterDegraded::RulesDisagree => "rules_disagree",
        }
    }
}

impl fmt::Display for ClusterDegraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_says_degraded_only_when_connected_with_something_wrong() {
        let mut status = ClusterStatus {
            state: ClusterState::Connected,
            instances: 3,
            last_error: None,
            namespace: "n".into(),
            instance_id: "i".into(),
            degraded: Vec::new(),
            eviction_policy: Some("noeviction".into()),
            held_back: 0,
            refusals: ClusterRefusals::default(),
        };
        assert_eq!(status.health(), "connected");
        status.degraded.push(ClusterDegraded::StateLost);
        assert!(status.is_degraded());
        assert_eq!(status.health(), "degraded");
        status.state = ClusterState::Fallback;
        assert_eq!(status.health(), "fallback");
        assert_eq!(
            ClusterDegraded::ValueKeySplit.to_string(),
            "value_key_split"
        );
    }
}
