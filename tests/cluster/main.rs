//! Cluster limits on a real redis-server and a real Redis Cluster.

// Support code shared by several modules (declared once: a file may be one module only).
#[path = "../support/etcd_harness.rs"]
mod etcd_harness;
#[path = "../support/redis_harness.rs"]
mod harness;

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

// The tests run side by side (the harness's threads, one per core), most of them waiting on
// real time: each starts its own redis-server and instance processes, so only what this process
// holds once, or a timing with little room, keeps one test from the others. Each test takes
// one of the three guards below first.

/// Held shared by every test, and alone by those that [`alone`] runs.
static RUNNING: RwLock<()> = RwLock::new(());
/// Held by the test that uses this process's own cluster, rule source or process-wide metrics.
static THIS_PROCESS: Mutex<()> = Mutex::new(());

/// What a test holds while it runs.
#[allow(dead_code)] // Held for their `Drop` only.
enum Running {
    Alone(RwLockWriteGuard<'static, ()>),
    Beside(RwLockReadGuard<'static, ()>),
    ThisProcess(MutexGuard<'static, ()>, RwLockReadGuard<'static, ()>),
}

/// For a test whose bound is a timing with little room (round trips a few milliseconds under the
/// command timeout): no other test runs beside it.
fn alone() -> Running {
    Running::Alone(RUNNING.write().unwrap_or_else(PoisonError::into_inner))
}

/// For a test that only spawns processes (redis-server, instances, proxies of its own): others
/// may run beside it.
fn spawned_only() -> Running {
    Running::Beside(RUNNING.read().unwrap_or_else(PoisonError::into_inner))
}

/// For a test that starts this process's one cluster or rule source, or reads its process-wide
/// metrics: one such test at a time, beside tests that only spawn processes. (Always this
/// lock, then `RUNNING`: no cycle with [`alone`].)
fn this_process() -> Running {
    let mine = THIS_PROCESS.lock().unwrap_or_else(PoisonError::into_inner);
    Running::ThisProcess(mine, RUNNING.read().unwrap_or_else(PoisonError::into_inner))
}

/// The harness's ports, for servers started side by side: never one twice, never two 10 000
/// apart (a cluster node's port and its bus port), and room for the bus port above each.
#[test]
fn free_ports_are_never_given_twice_nor_10_000_apart() {
    let ports: Vec<u16> = (0..300).map(|_| harness::free_port()).collect();
    let unique: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
    assert_eq!(unique.len(), ports.len(), "a port given twice");
    for &port in &ports {
        assert!(port <= 55_535, "{port} leaves no room for its bus port");
        assert!(
            !unique.contains(&(port + 10_000)),
            "{port} and {} both given",
            port + 10_000
        );
    }
}

mod cluster_faults;
mod cluster_idle;
mod cluster_redis;
mod cluster_sweep;
mod etcd_source;
mod fleet;
mod rule_source;
mod rule_source_dashboard;
