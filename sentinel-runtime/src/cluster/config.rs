//! What the background work was started with (the store's addresses, the namespace, the keys,
//! the epochs it saw), and how a loss of the store's state is reported.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::keys::{Keys, BUCKETS};
use crate::slot::cluster::health;

/// What the background work was started with, and the epochs it saw.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) urls: Vec<String>,
    pub(crate) cluster_mode: bool,
    pub(crate) namespace: String,
    pub(crate) instance_id: String,
    /// The name the fleet's view shows.
    pub(crate) instance_name: String,
    pub(crate) command_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) keys: Keys,
    /// The epoch of each bucket of keys as this instance last saw it (0: not yet).
    pub(crate) epochs: Box<[AtomicU64]>,
}

impl Config {
    /// No epoch seen yet.
    pub(crate) fn no_epochs() -> Box<[AtomicU64]> {
        (0..BUCKETS).map(|_| AtomicU64::new(0)).collect()
    }
}

/// The store lost state (an epoch gone or changed, a key evicted): counted, reported in
/// `status()`, and an event.
pub(crate) fn report_lost(config: &Config) {
    let first = !health::is_state_lost();
    health::state_lost();
    if first {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "sentinel",
            namespace = %config.namespace,
            "cluster: the store lost state (flushed, evicted, restarted empty or failed over): \
             the lost window counts as spent"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = config;
}
