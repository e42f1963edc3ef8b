//! Cluster limits on a real redis-server and a real Redis Cluster.

// Support code shared by several modules (declared once: a file may be one module only).
#[path = "../support/redis_harness.rs"]
mod harness;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// One test at a time, across the modules: they measure rates on a shared CPU, and one cluster
/// runs per process.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

mod cluster_faults;
mod cluster_redis;
mod fleet;
mod rule_source;
mod rule_source_dashboard;
