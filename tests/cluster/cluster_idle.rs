//! A global limit after an idle gap, in this process against a real `redis-server`: the first
//! call after a gap of any length passes, and a key that expired because no one called is not
//! taken for state the store lost (no loss reported, the bucket full again).
//!
//! A gap has two sides. Here (the runtime clock) the lease lapses 200 ms after its grant: the
//! test runs on a mock clock moved with real time by a helper thread, and moved on by the rest
//! of the gap at once (1 s, 5 s and 60 s). In Redis the key expires a second after its arrival
//! time: the test waits in real time until it is gone (about 1.2 s). The lease script then sees
//! what it sees after any longer gap: no key, the epoch it saw before, and a time past what this
//! instance knew the key to live until (its decision reads nothing else), so 60 s are proved
//! without waiting 60 s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{require, RedisServer};
use crate::this_process;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::cluster::{Cluster, ClusterDegraded, ClusterState, ClusterThreshold};
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::{entry, EntryBuilder};

/// The rules' threshold per second.
const R: f64 = 40.0;

/// Polls `f` every 2 ms for at most `limit`; whether it held.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn after_an_idle_gap_of_any_length_the_first_call_passes_and_nothing_is_charged() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let clock = MockClock::install();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        // The mock clock moves with real time, as the runtime's own clock would.
        s.spawn(|| {
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(500));
                let now = Instant::now();
                clock.advance(now - last);
                last = now;
            }
        });
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gaps(&redis, &clock);
        }));
        stop.store(true, Ordering::Relaxed);
        if let Err(panic) = checked {
            std::panic::resume_unwind(panic);
        }
    });
}

fn gaps(redis: &RedisServer, clock: &MockClock) {
    let cluster = Cluster::redis(redis.url())
        .namespace("idle-gap")
        .start()
        .expect("the cluster starts");
    rules::load_flow_rules(vec![
        FlowRule::qps("idle-flow", R).cluster(ClusterThreshold::Global)
    ])
    .unwrap();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("idle-hot", 0, R).cluster(ClusterThreshold::Global)
    ])
    .unwrap();
    assert!(
        within(Duration::from_secs(5), || cluster.status().state
            == ClusterState::Connected),
        "connected"
    );
    let flow = || entry("idle-flow").is_ok();
    let hot = || EntryBuilder::new("idle-hot").param("v").enter().is_ok();
    // A first call of each, and its lease.
    assert!(flow() && hot(), "the first calls");
    let leased = |n: u64| {
        within(Duration::from_secs(2), || {
            metrics::cluster().leases_taken >= n
        })
    };
    assert!(leased(2), "{:?}", metrics::cluster());
    let keys_gone = || {
        within(Duration::from_secs(5), || {
            redis
                .cli(&["--scan", "--pattern", "idle-gap:*w1000*"])
                .trim()
                .is_empty()
        })
    };
    let losses = metrics::cluster().state_losses;
    let refused = metrics::cluster().refusals.total();
    // A call every 2 s (real time), then gaps of 1 s, 5 s and 60 s (on the runtime's clock;
    // the store's keys expired in real time).
    for (i, gap) in [2, 1, 5, 60].into_iter().enumerate() {
        let waited = Instant::now();
        assert!(keys_gone(), "gap {gap} s: the lease keys expired");
        if gap > 2 {
            clock.advance(Duration::from_secs(gap).saturating_sub(waited.elapsed()));
        } else {
            std::thread::sleep(Duration::from_secs(gap).saturating_sub(waited.elapsed()));
        }
        let before = metrics::cluster();
        assert!(
            flow(),
            "gap {gap} s: the flow rule's first call was refused"
        );
        assert!(
            hot(),
            "gap {gap} s: the hotspot value's first call was refused"
        );
        assert!(
            leased(before.leases_taken + 2),
            "gap {gap} s: no lease after the gap ({:?})",
            metrics::cluster()
        );
        // Then 10 calls of each 30 ms apart (0.83 R): every one passes.
        let more = (0..10)
            .filter(|_| {
                let ok = flow() && hot();
                std::thread::sleep(Duration::from_millis(30));
                ok
            })
            .count();
        assert_eq!(
            more,
            10,
            "gap {gap} s (round {i}): {more} of 10 calls right after the first passed ({:?})",
            metrics::cluster().refusals
        );
        let status = cluster.status();
        assert_eq!(
            metrics::cluster().state_losses,
            losses,
            "gap {gap} s: a key that expired was taken for one the store lost"
        );
        assert!(
            !status.degraded.contains(&ClusterDegraded::StateLost),
            "gap {gap} s: {status:?}"
        );
        assert_eq!(status.refusals.total(), refused, "gap {gap} s: {status:?}");
    }
    drop(cluster);
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
}
