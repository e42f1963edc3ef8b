//! A global limit after an idle gap, in this process against a real `redis-server`: the first
//! call after a gap of any length passes, and a key that expired because no one called is not
//! taken for state the store lost (no loss reported, the bucket full again). And the causes of
//! the shared limit's refusals, told apart.
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

/// `GET /api/fleet`'s body from the dashboard at `addr`.
fn api_fleet(addr: std::net::SocketAddr, token: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let req = format!(
        "GET /api/fleet HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n\
         Authorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).expect("send the request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    raw.split_once("\r\n\r\n")
        .expect("an HTTP answer")
        .1
        .to_owned()
}

/// Each cause of a refusal by the shared limit is told apart, with one kind: the local share
/// while the first lease is on its way, the fleet's budget spent, and a window the store lost
/// (FLUSHALL); `status()`, the metrics and the dashboard's `/api/fleet` count them alike.
#[test]
fn refusals_are_counted_by_cause_in_the_status_the_metrics_and_the_dashboard() {
    use sentinel_runtime::dashboard::Dashboard;
    use sentinel_runtime::BlockKind;
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let cluster = Cluster::redis(redis.url())
        .namespace("refusal-causes")
        .start()
        .expect("the cluster starts");
    let token = "refusal-causes-token";
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(token)
        .start()
        .expect("the dashboard");
    rules::load_flow_rules(vec![
        FlowRule::qps("refusal-causes", 5.0).cluster(ClusterThreshold::Global)
    ])
    .unwrap();
    assert!(within(Duration::from_secs(5), || cluster.status().state
        == ClusterState::Connected));
    let before = cluster.status().refusals;
    let mut reasons = std::collections::BTreeSet::new();
    let mut call = || match entry("refusal-causes") {
        Ok(_) => {}
        Err(e) => {
            assert_eq!(e.kind(), BlockKind::Cluster, "{e}");
            reasons.insert(e.reason().unwrap_or("").to_owned());
        }
    };
    // 20 calls at once: the local share (5) while the first lease is on its way (a round trip
    // to Redis, far longer than 20 calls), then refused by it.
    for _ in 0..20 {
        call();
    }
    // Then every 2 ms for 1.5 s: the fleet's budget, spent by the charge of those 5 and the
    // bucket's burst.
    let until = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < until {
        call();
        std::thread::sleep(Duration::from_millis(2));
    }
    let spent = cluster.status().refusals;
    // The store forgets everything: the next leases find the epoch gone, and the lost window
    // counts as spent.
    redis.cli(&["FLUSHALL"]);
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        call();
        std::thread::sleep(Duration::from_millis(2));
    }
    let after = cluster.status().refusals;
    let body = api_fleet(dash.local_addr(), token);
    let m = metrics::cluster().refusals;
    drop(dash);
    drop(cluster);
    rules::load_flow_rules(vec![]).unwrap();
    eprintln!("refusals: before {before:?}, spent {spent:?}, after {after:?}; {reasons:?}");
    assert!(
        spent.fallback_share > before.fallback_share,
        "the local share before the first lease: {spent:?}"
    );
    assert!(
        spent.budget_spent > before.budget_spent,
        "the budget spent: {spent:?}"
    );
    assert!(
        after.lost_window > spent.lost_window,
        "the lost window after FLUSHALL: {after:?}"
    );
    assert!(reasons.len() >= 3, "a reason per cause: {reasons:?}");
    assert_eq!(m, after, "the metrics count what the status counts");
    for (cause, n) in after.by_cause() {
        assert!(
            body.contains(&format!("\"{cause}\":{n}")),
            "/api/fleet's cluster.refusals has {cause} = {n}: {body}"
        );
    }
}
