//! What a cluster reports: its [`ClusterState`] and [`ClusterStatus`].

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
}
