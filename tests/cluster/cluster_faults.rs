//! Cluster limits under faults, against real `redis-server` processes (and a real Redis Cluster,
//! with replicas for the failover) started here on free loopback ports: keys that cannot collide, state the store
//! forgets, a slow store, instances cut off from it. Each fault is real (`FLUSHALL`,
//! `DEBUG SLEEP`, a TCP proxy that stalls), and each instance is a process of our own binary
//! (`tests/support/cluster_instance.rs`) that reports what it admitted every 100 ms.
//!
//! Without `redis-server` on PATH the tests are skipped with a line saying how to install it;
//! with `SENTINEL_REQUIRE_SERVERS=1` that is a failure. The tests run one at a time.

use crate::harness;

use std::sync::atomic::{AtomicBool, Ordering};

use std::time::{Duration, Instant};

use harness::{
    busiest_second, busiest_second_of_value, each, instance_args, reported, require, write_junk,
    Instances, Proxy, RedisCluster, RedisServer, Report,
};
use sentinel_runtime::cluster::{Cluster, ClusterDegraded, ClusterState, ClusterThreshold};
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::EntryBuilder;

use crate::{alone, spawned_only, this_process};

/// The lease TTL, in seconds.
const TTL: f64 = 0.2;

/// Starts one instance per `(namespace, extra arguments)`, says `go`, and collects the reports,
/// calling `on_line` with each line as it comes.
fn run_with(
    urls: &[String],
    redis_cluster: bool,
    instances: &[(&str, Vec<String>)],
    secs: f64,
    on_line: impl FnMut(&harness::Line),
) -> Vec<Report> {
    let args: Vec<Vec<String>> = instances
        .iter()
        .map(|(ns, rest)| {
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            instance_args(urls, redis_cluster, ns, &rest)
        })
        .collect();
    let mut running = Instances::spawn(&args);
    running.go(Duration::from_secs(20));
    running.collect(Duration::from_secs_f64(secs + 20.0), on_line)
}

/// The arguments of an instance offering `offer` calls per second of a rule of `r` per second
/// for `secs`, with `extra` arguments.
fn offering(r: f64, offer: f64, secs: f64, extra: &[&str]) -> Vec<String> {
    let mut rest = vec![
        "--threshold".to_owned(),
        r.to_string(),
        "--offer".to_owned(),
        offer.to_string(),
        "--secs".to_owned(),
        secs.to_string(),
    ];
    rest.extend(extra.iter().map(|s| (*s).to_owned()));
    rest
}

/// Polls `f` every 5 ms for at most `limit`; whether it held.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn colliding_namespaces_and_resources_keep_two_limits() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    // `shop` + `eu:checkout` and `shop:eu` + `checkout`: two rules of R each, each offered
    // 1.5 R for 2 s. Sharing one key, they would admit about R x 2 s + R together.
    let (r, secs) = (300.0, 2.0);
    let reports = run_with(
        &[redis.url()],
        false,
        &[
            (
                "shop",
                offering(r, 1.5 * r, secs, &["--resource", "eu:checkout"]),
            ),
            (
                "shop:eu",
                offering(r, 1.5 * r, secs, &["--resource", "checkout"]),
            ),
        ],
        secs,
        |_| {},
    );
    let admitted = each(&reports, "admitted");
    eprintln!("shop/eu:checkout and shop:eu/checkout, R = {r} each: admitted {admitted:?}");
    for (i, n) in admitted.iter().enumerate() {
        let (lower, upper) = (0.8 * r * secs, r * (secs + 0.5) + r + r * TTL);
        assert!(
            (*n as f64) >= lower && (*n as f64) <= upper,
            "rule {i}: admitted {n}, expected {lower}..={upper} (its own limit)"
        );
    }
}

#[test]
fn a_routes_hotspot_values_spread_over_three_masters() {
    let _running = this_process();
    let (Some(()), Some(())) = (require("redis-server"), require("redis-cli")) else {
        return;
    };
    let cluster = RedisCluster::start();
    // A route with a parameter, as axum names it: its `{` and `}` must not make the hash tag.
    let route = "GET:/users/{id}";
    let started = Cluster::redis_cluster(cluster.urls())
        .namespace("route-spread")
        .lease_wait(Duration::from_millis(500))
        .start()
        .expect("the cluster starts");
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(route, 0, 100.0).cluster(ClusterThreshold::Global)
    ])
    .expect("the rule loads");
    let values = 300;
    let enter_all = || {
        for value in 0..values as u64 {
            let _ = EntryBuilder::new(route).param(&value).enter();
        }
    };
    let per_master = || -> Vec<usize> {
        cluster
            .nodes
            .iter()
            .map(|n| {
                n.cli(&["--scan", "--pattern", "*route-spread*p0*"])
                    .lines()
                    .count()
            })
            .collect()
    };
    // Each value's call asks for its lease; keys expire a second after their last lease, so
    // the values are entered again until (nearly) every key is there at once (at most 5 s;
    // on a loaded host a round of entries and scans can outlast a key).
    let mut holding = Vec::new();
    within(Duration::from_secs(5), || {
        enter_all();
        holding = per_master();
        holding.iter().sum::<usize>() >= values
    });
    eprintln!(
        "{values} values of {route}: keys per master {holding:?}, {:?}",
        sentinel_runtime::metrics::cluster()
    );
    drop(started);
    rules::load_hotspot_rules(vec![]).expect("rules cleared");
    let found = holding.iter().sum::<usize>();
    assert!(
        found * 100 >= values * 95,
        "{found} of {values} keys: {holding:?}"
    );
    for (i, n) in holding.iter().enumerate() {
        assert!(
            *n * 10 >= found,
            "master {i} holds {n} of {found} keys: {holding:?}"
        );
    }
}

/// Three instances, each offered 1.5 R of a global rule of R, for `secs`; `on_tick(ms)` is
/// called once at each 100 ms tick the first instance reaches (ms since go).
fn three_instances(
    urls: &[Vec<String>; 3],
    ns: &str,
    r: f64,
    secs: f64,
    on_tick: impl FnMut(u64),
) -> Vec<Report> {
    three_instances_with(urls, ns, r, 1.5 * r, secs, &[], on_tick)
}

/// [`three_instances`] offering `offer` each, with `extra` arguments.
fn three_instances_with(
    urls: &[Vec<String>; 3],
    ns: &str,
    r: f64,
    offer: f64,
    secs: f64,
    extra: &[&str],
    mut on_tick: impl FnMut(u64),
) -> Vec<Report> {
    let args: Vec<Vec<String>> = urls
        .iter()
        .map(|u| {
            let rest = offering(r, offer, secs, extra);
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            instance_args(u, false, ns, &rest)
        })
        .collect();
    let mut running = Instances::spawn(&args);
    running.go(Duration::from_secs(20));
    let mut last = 0;
    running.collect(Duration::from_secs_f64(secs + 20.0), |line| {
        let mut words = line.text.split_whitespace();
        if words.next() == Some("tick") {
            let ms = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
            if ms > last {
                last = ms;
                on_tick(ms);
            }
        }
    })
}

#[test]
fn flushall_every_second_admits_at_most_1_25_r_and_says_so() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let (r, secs) = (500.0, 4.5);
    let url = vec![redis.url()];
    // FLUSHALL at 1, 2, 3 and 4 s: each time the store forgets every bucket and instance.
    let reports = three_instances(&[url.clone(), url.clone(), url], "flush", r, secs, |ms| {
        if ms % 1_000 == 0 && (1_000..=4_000).contains(&ms) {
            redis.cli(&["FLUSHALL"]);
        }
    });
    let (most, at) = busiest_second(&reports, 1_000, 4_500);
    let losses: u64 = reports.iter().map(|r| r.get("state_losses")).sum();
    eprintln!(
        "FLUSHALL every second, R = {r}: at most {most} admitted in a second (from {at} ms), \
         {losses} losses found, admitted {:?}",
        each(&reports, "admitted")
    );
    assert!(
        most as f64 <= 1.25 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.25 * r
    );
    assert!(losses > 0, "no instance found the state lost");
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(
            report.get("min_instances"),
            3,
            "instance {i}: status().instances while 3 ran"
        );
    }
    assert!(
        reported(&reports, "degraded", 1_000, 4_500),
        "no instance said it was degraded"
    );
}

#[test]
fn an_lru_store_that_evicts_the_keys_admits_at_most_1_25_r() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let (r, secs) = (500.0, 4.0);
    let url = vec![redis.url()];
    // From 1 s: 2 MB of memory, allkeys-lru, and another writer of 5 000 values of 1 kB a
    // second: the store evicts the cluster's keys among the others.
    let stop = AtomicBool::new(false);
    let go = AtomicBool::new(false);
    let port = redis.port;
    let reports = std::thread::scope(|s| {
        s.spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !go.load(Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            write_junk(port, 5_000, &stop);
        });
        let reports = three_instances(&[url.clone(), url.clone(), url], "evict", r, secs, |ms| {
            if ms == 1_000 {
                redis.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
                redis.cli(&["CONFIG", "SET", "maxmemory", "2mb"]);
                go.store(true, Ordering::Relaxed);
            }
        });
        go.store(true, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        reports
    });
    let evicted = redis
        .cli(&["INFO", "stats"])
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:").map(|v| v.trim().to_owned()))
        .unwrap_or_default();
    let (most, at) = busiest_second(&reports, 1_000, 4_000);
    let losses: u64 = reports.iter().map(|r| r.get("state_losses")).sum();
    eprintln!(
        "allkeys-lru at 2 MB with another writer, R = {r}: at most {most} admitted in a second \
         (from {at} ms), {evicted} keys evicted, {losses} losses found, admitted {:?}, fewest \
         instances seen {:?}",
        each(&reports, "admitted"),
        each(&reports, "min_instances")
    );
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(
            report.get("min_instances"),
            3,
            "instance {i}: status().instances while 3 ran"
        );
    }
    assert!(
        most as f64 <= 1.25 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.25 * r
    );
    // The status says the limit is degraded while the store evicts (from the policy's switch
    // at 1 s: read again every second).
    for (i, r) in reports.iter().enumerate() {
        let healthy = r
            .ticks
            .iter()
            .zip(&r.healths)
            .filter(|((ms, _, _), h)| *ms >= 2_500 && h.as_str() == "connected")
            .count();
        assert_eq!(
            healthy, 0,
            "instance {i}: ticks from 2.5 s saying connected, not degraded: {:?}",
            r.healths
        );
    }
}

#[test]
fn a_value_key_written_anew_is_detected_reported_and_agreement_restored() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let hot = |secs: &str| {
        instance_args(
            &[redis.url()],
            false,
            "split",
            &["--rule", "hot", "--offer", "300", "--secs", secs],
        )
    };
    // A runs 3 s. Half a second in, the store loses the value key and B starts: B writes its
    // own key. A's key has been in use for longer: A writes it back, and B finds itself split.
    let mut a = Instances::spawn(&[hot("3")]);
    a.go(Duration::from_secs(20));
    let before = redis.cli(&["GET", "split:value-key"]);
    let mut b = None;
    let a_reports = a.collect(Duration::from_secs(30), |line| {
        if line.text.starts_with("tick 500 ") && b.is_none() {
            redis.cli(&["DEL", "split:value-key"]);
            let mut started = Instances::spawn(&[hot("2")]);
            started.go(Duration::from_secs(20));
            b = Some(started);
        }
    });
    let b_reports = b
        .expect("B started")
        .collect(Duration::from_secs(30), |_| {});
    let after = redis.cli(&["GET", "split:value-key"]);
    let key = |text: &str| text.split_whitespace().next().unwrap_or("").to_owned();
    eprintln!(
        "value key before {before:?}, after {after:?}; A: splits {} now {}, B: splits {} now {}",
        a_reports[0].get("value_key_splits"),
        a_reports[0].get("split_now"),
        b_reports[0].get("value_key_splits"),
        b_reports[0].get("split_now"),
    );
    assert_eq!(key(&after), key(&before), "A's key restored");
    assert_eq!(a_reports[0].get("value_key_splits"), 0, "A agrees");
    assert_eq!(a_reports[0].get("split_now"), 0, "A agrees");
    assert!(
        b_reports[0].get("value_key_splits") >= 1,
        "B found the split"
    );
    assert_eq!(b_reports[0].get("split_now"), 1, "B says it is split");
}

#[test]
fn an_evicting_policy_is_reported_and_a_refused_config_get_is_not_an_error() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let evicting = RedisServer::start(&["--maxmemory-policy", "allkeys-lru"]);
    let cluster = Cluster::redis(evicting.url())
        .namespace("evicting")
        .start()
        .expect("the cluster starts");
    let status = cluster.status();
    assert!(
        status.degraded.contains(&ClusterDegraded::KeysEvictable),
        "{status:?}"
    );
    assert_eq!(status.eviction_policy.as_deref(), Some("allkeys-lru"));
    assert_eq!(status.health(), "degraded");
    assert!(sentinel_runtime::metrics::cluster().keys_evictable);
    let text = sentinel_runtime::metrics::prometheus::encode_text();
    assert!(text.contains("sentinel_cluster_keys_evictable 1"), "{text}");
    drop(cluster);
    // Managed Redis often refuses CONFIG: the cluster starts, the policy unknown.
    let refusing = RedisServer::start_with(Some("rename-command CONFIG \"\"\n"), &[]);
    let cluster = Cluster::redis(refusing.url())
        .namespace("refusing")
        .start()
        .expect("the cluster starts without CONFIG");
    let status = cluster.status();
    assert_eq!(status.eviction_policy, None, "{status:?}");
    assert!(!status.is_degraded(), "{status:?}");
}

#[test]
fn clients_killed_every_300ms_are_reconnected_without_falling_back() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let (r, secs) = (500.0, 4.0);
    let url = vec![redis.url()];
    // From 1 s to 3.4 s, every 300 ms: CLIENT KILL drops every instance's connection.
    let reports = three_instances(&[url.clone(), url.clone(), url], "kill", r, secs, |ms| {
        if (1_000..=3_400).contains(&ms) && ms % 300 == 100 {
            redis.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
        }
    });
    let (most, at) = busiest_second(&reports, 1_000, 4_000);
    let fallbacks = each(&reports, "fallbacks");
    eprintln!(
        "CLIENT KILL every 300 ms, R = {r}: at most {most} admitted in a second (from {at} ms), \
         fallbacks {fallbacks:?}"
    );
    assert!(
        fallbacks.iter().all(|&n| n <= 1),
        "flapping: fallbacks {fallbacks:?}"
    );
    assert!(
        most as f64 <= 1.15 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.15 * r
    );
}

#[test]
fn a_slow_redis_is_ridden_out_at_most_1_15_r_without_flapping() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&["--enable-debug-command", "local"]);
    let (r, secs) = (500.0, 4.0);
    let url = vec![redis.url()];
    // From 1 s to 3.5 s, Redis stops answering for 50 ms every 250 ms (DEBUG SLEEP 0.05):
    // more than the 20 ms command timeout, less than the failures that make an instance leave.
    let slowing = AtomicBool::new(false);
    let port = redis.port;
    let reports = std::thread::scope(|s| {
        s.spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !slowing.load(Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            let until = Instant::now() + Duration::from_millis(2_500);
            while Instant::now() < until {
                harness::cli(port, &["DEBUG", "SLEEP", "0.05"]);
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let reports = three_instances(&[url.clone(), url.clone(), url], "slow", r, secs, |ms| {
            if ms == 1_000 {
                slowing.store(true, Ordering::Relaxed);
            }
        });
        slowing.store(true, Ordering::Relaxed);
        reports
    });
    let (most, at) = busiest_second(&reports, 1_000, 4_000);
    let fallbacks = each(&reports, "fallbacks");
    eprintln!(
        "DEBUG SLEEP 0.05 every 250 ms, R = {r}: at most {most} admitted in a second (from {at} \
         ms), fallbacks {fallbacks:?}, failures ridden out {:?}",
        each(&reports, "ridden_out")
    );
    assert!(
        most as f64 <= 1.15 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.15 * r
    );
    assert!(
        fallbacks.iter().all(|&n| n <= 1),
        "flapping: fallbacks {fallbacks:?}"
    );
}

/// The partition tests' fault: the proxy stalls every byte from 1 s to 2.5 s (`ms`: the tick).
fn stall_from_1_to_2_5_s(proxy: &Proxy, ms: u64) {
    if ms == 1_000 {
        proxy.stalled.store(true, Ordering::Relaxed);
    }
    if ms == 2_500 {
        proxy.stalled.store(false, Ordering::Relaxed);
    }
}

#[test]
fn two_of_three_instances_cut_off_admit_at_most_1_25_r_together() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let proxy = Proxy::start(redis.port);
    let (r, secs) = (500.0, 4.5);
    // Instances 1 and 2 reach Redis through the proxy, stalled from 1 s to 2.5 s: they fall
    // back to their local share while instance 0 stays connected.
    let reports = three_instances(
        &[vec![redis.url()], vec![proxy.url()], vec![proxy.url()]],
        "partition",
        r,
        secs,
        |ms| stall_from_1_to_2_5_s(&proxy, ms),
    );
    let (most, at) = busiest_second(&reports, 1_000, 4_500);
    eprintln!(
        "2 of 3 instances cut off 1.5 s, R = {r}: at most {most} admitted in a second (from {at} \
         ms), admitted {:?}, fallbacks {:?}, charged back {:?}",
        each(&reports, "admitted"),
        each(&reports, "fallbacks"),
        each(&reports, "charged_back"),
    );
    for (i, r) in reports.iter().enumerate() {
        eprintln!(
            "instance {i}: {:?}",
            r.ticks
                .iter()
                .zip(&r.healths)
                .map(|((ms, n, _), h)| format!("{ms}:{n}:{}", &h[..1]))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        reported(&reports, "fallback", 1_000, 2_500),
        "the cut-off instances fell back"
    );
    assert!(
        most as f64 <= 1.25 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.25 * r
    );
}

/// [`two_of_three_instances_cut_off_admit_at_most_1_25_r_together`] with a cut-off of 5 s, longer
/// than the 2 s the connected instance used to hold the others' shares back: from then on it
/// took the whole limit while the two cut off still admitted their local shares (1 331 a second
/// at R = 1 000 in a replay, against 1.25 R).
#[test]
fn two_of_three_instances_cut_off_for_5_s_admit_at_most_1_25_r_together() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let proxy = Proxy::start(redis.port);
    let (r, secs) = (500.0, 7.0);
    let reports = three_instances(
        &[vec![redis.url()], vec![proxy.url()], vec![proxy.url()]],
        "partition-5s",
        r,
        secs,
        |ms| {
            if ms == 1_000 {
                proxy.stalled.store(true, Ordering::Relaxed);
            }
            if ms == 6_000 {
                proxy.stalled.store(false, Ordering::Relaxed);
            }
        },
    );
    let (most, at) = busiest_second(&reports, 1_000, 7_000);
    eprintln!(
        "2 of 3 instances cut off 5 s, R = {r}: at most {most} admitted in a second (from {at} \
         ms), admitted {:?}, fallbacks {:?}, charged back {:?}",
        each(&reports, "admitted"),
        each(&reports, "fallbacks"),
        each(&reports, "charged_back"),
    );
    assert!(
        reported(&reports, "fallback", 1_000, 6_000),
        "the cut-off instances fell back"
    );
    assert!(
        most as f64 <= 1.25 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.25 * r
    );
}

/// [`two_of_three_instances_cut_off_admit_at_most_1_25_r_together`] with a global hotspot
/// cluster rule of R per value: each instance offers 1.5 R of each of three values, and each
/// value's busiest second over the fault stays within the 1.25 R with margin: at most
/// 1.1 R. Without a guard a value measured 1.16-1.22 R (232-245 of R = 200): each cut-off
/// instance's local share began with its own burst on top of the passes it had just leased. Now
/// that share has a tenth of its burst, and for a window after the return a value's leased
/// calls stay within it, as a flow rule's do (measured 1.0 R).
#[test]
fn two_of_three_instances_cut_off_admit_at_most_1_1_r_per_hotspot_value_together() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let proxy = Proxy::start(redis.port);
    let (r, secs) = (200.0, 4.5);
    // Instances 1 and 2 reach Redis through the proxy, stalled from 1 s to 2.5 s: they fall
    // back to their local share while instance 0 stays connected. Each offers 1.5 R of each
    // of the three values (it takes them in turn).
    let reports = three_instances_with(
        &[vec![redis.url()], vec![proxy.url()], vec![proxy.url()]],
        "partition-hot",
        r,
        3.0 * 1.5 * r,
        secs,
        &["--rule", "hot"],
        |ms| stall_from_1_to_2_5_s(&proxy, ms),
    );
    let busiest: Vec<(u64, u64)> = (0..3)
        .map(|value| busiest_second_of_value(&reports, value, 1_000, 4_500))
        .collect();
    eprintln!(
        "2 of 3 instances cut off 1.5 s, hotspot R = {r} per value: at most {busiest:?} \
         (admitted, from ms) in a second per value, admitted {:?}, fallbacks {:?}",
        each(&reports, "admitted"),
        each(&reports, "fallbacks"),
    );
    // Per instance and tick: ms, admitted of each value, health, instances / held back.
    for (i, r) in reports.iter().enumerate() {
        eprintln!(
            "instance {i}: {:?}",
            r.ticks
                .iter()
                .zip(&r.values)
                .zip(&r.healths)
                .zip(&r.counts)
                .map(|((((ms, _, _), v), h), (live, held))| format!(
                    "{ms}:{}/{}/{}:{}:{live}/{held}",
                    v[0],
                    v[1],
                    v[2],
                    &h[..1]
                ))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        reported(&reports, "fallback", 1_000, 2_500),
        "the cut-off instances fell back"
    );
    for (value, (most, at)) in busiest.iter().enumerate() {
        assert!(
            *most as f64 <= 1.1 * r,
            "value {value}: {most} admitted in the second from {at} ms, at most {}",
            1.1 * r
        );
    }
}

#[test]
fn a_flood_of_new_hotspot_values_never_waits_on_the_network_nor_blocks_its_runtime() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let cluster = Cluster::redis(redis.url())
        .namespace("flood")
        .start()
        .expect("the cluster starts");
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("flood", 0, 10.0).cluster(ClusterThreshold::Global)
    ])
    .expect("the rule loads");
    // Counted once connected: connecting makes its own calls (the scripts, the epochs).
    assert!(within(Duration::from_secs(5), || cluster.status().state
        == ClusterState::Connected));
    let before = sentinel_runtime::metrics::cluster();
    // Distinct values, each new, entered with `enter_async` on a current-thread runtime: for
    // at most 1 000 000 calls or 5 s.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (calls, slow, longest, took) = runtime.block_on(async {
        let start = Instant::now();
        let (mut calls, mut slow, mut longest) = (0u64, 0u64, Duration::ZERO);
        while calls < 1_000_000 && start.elapsed() < Duration::from_secs(5) {
            let call = Instant::now();
            let _ = EntryBuilder::new("flood").param(&calls).enter_async().await;
            let took = call.elapsed();
            longest = longest.max(took);
            if took > Duration::from_millis(1) {
                slow += 1;
            }
            calls += 1;
        }
        (calls, slow, longest, start.elapsed())
    });
    let after = sentinel_runtime::metrics::cluster();
    let status = cluster.status();
    std::thread::sleep(Duration::from_millis(1));
    drop(cluster);
    rules::load_hotspot_rules(vec![]).expect("rules cleared");
    let redis_calls = after.redis_calls - before.redis_calls;
    eprintln!(
        "{calls} new values in {took:?}: {redis_calls} Redis calls, {} leases, {slow} calls over 1 \
         ms, the longest {longest:?}, {} values past the lease cap, {} Redis errors, {status:?}",
        after.leases_taken - before.leases_taken,
        after.values_over_cap - before.values_over_cap,
        after.redis_errors - before.redis_errors,
    );
    assert!(
        redis_calls as f64 <= 0.05 * calls as f64,
        "{redis_calls} Redis calls for {calls} calls"
    );
    assert!(slow * 100 <= calls, "{slow} of {calls} calls over 1 ms");
    // New values are leased together: while up to 1 000 new values a second are leased (the
    // cap), one pass over them every 10 ms at most, one script call a pass for the one rule
    // (on one Redis its values share its hash tag; one more call per 32 values), with 33
    // heartbeats a second: at most about 166 Redis calls a second. Leasing one call a value made about 650; a call at each wake-up of the background
    // work, with the values spread over 64 hash tags, 147-225 (and 321 on a slower machine).
    let per_sec = redis_calls as f64 / took.as_secs_f64();
    assert!(
        per_sec <= 180.0,
        "{per_sec:.0} Redis calls a second: new values are not leased in batches"
    );
}

/// A Redis Cluster of 3 masters and 3 replicas; the master holding the rule's key is killed and
/// its replica takes over (about 1.5-3 s with a 500 ms node timeout): the instances leave Redis
/// once and come back once, admitting at most 1.25 R in any second.
///
/// The failover outlasted the grace period when it was 2 s, and nobody heartbeats meanwhile:
/// the first
/// instance back used to find only itself in the set, count 1 instance, and take the whole
/// limit while the others still admitted their thirds in their fallback (in about one run in
/// four a second admitted 1.65 R, 826 against 625; the ticks showed an instance saying 1
/// instance as it returned). Instances back from a fallback now count those seen before it for
/// the grace period.
#[test]
fn a_redis_cluster_failover_is_one_fallback_and_one_resume_at_most_1_25_r() {
    let _running = spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    // 3 masters and 3 replicas; a master unreachable for 500 ms is failed over to its replica.
    let mut cluster = RedisCluster::start_with_replicas(1, 500);
    let (r, secs) = (500.0, 4.5);
    let urls = cluster.urls();
    let args: Vec<Vec<String>> = (0..3)
        .map(|_| {
            let rest = offering(r, 1.5 * r, secs, &[]);
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            instance_args(&urls, true, "failover", &rest)
        })
        .collect();
    let mut running = Instances::spawn(&args);
    running.go(Duration::from_secs(20));
    // At 1 s the master holding the rule's key is killed (SIGKILL).
    let (mut last, mut killed) = (0u64, None);
    let reports = running.collect(Duration::from_secs_f64(secs + 20.0), |line| {
        let mut words = line.text.split_whitespace();
        if words.next() != Some("tick") {
            return;
        }
        let ms = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
        if ms <= last {
            return;
        }
        last = ms;
        if ms >= 1_000 && killed.is_none() {
            let holder = cluster.nodes.iter().position(|n| {
                n.cli(&["role"]).starts_with("master")
                    && !n
                        .cli(&["--scan", "--pattern", "failover:flow:*"])
                        .trim()
                        .is_empty()
            });
            if let Some(i) = holder {
                cluster.nodes[i].kill();
                killed = Some((i, ms));
            }
        }
    });
    let (_, killed_at) = killed.expect("a master held the rule's key");
    let (most, at) = busiest_second(&reports, 1_000, 4_500);
    let fallbacks = each(&reports, "fallbacks");
    let states: Vec<Vec<&str>> = reports
        .iter()
        .map(|r| r.states.iter().map(|(_, s)| s.as_str()).collect())
        .collect();
    eprintln!(
        "Redis Cluster master killed at {killed_at} ms, R = {r}: at most {most} admitted in a \
         second (from {at} ms), fallbacks {fallbacks:?}, states {states:?}, admitted {:?}",
        each(&reports, "admitted")
    );
    // Per instance and tick: ms, admitted, health, and the instances (held back) it saw.
    for (i, r) in reports.iter().enumerate() {
        eprintln!(
            "instance {i}: {:?}",
            r.ticks
                .iter()
                .zip(&r.healths)
                .zip(&r.counts)
                .map(|(((ms, n, _), h), (live, held))| format!(
                    "{ms}:{n}:{}:{live}/{held}",
                    &h[..1]
                ))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        fallbacks.iter().all(|&n| n <= 1),
        "flapping: fallbacks {fallbacks:?}"
    );
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(
            report.states.last().map(|(_, s)| s.as_str()),
            Some("connected"),
            "instance {i} resumed after the failover: states {:?}",
            states[i]
        );
    }
    assert!(
        most as f64 <= 1.25 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.25 * r
    );
}

/// Every byte 8 ms late each way through a proxy (a 16 ms round trip, under the 20 ms command
/// timeout): at most 1.15 R in any second, and no instance leaves Redis more than once.
#[test]
fn a_16ms_round_trip_is_ridden_out_at_most_1_15_r_without_flapping() {
    // Under the timeout by 4 ms: beside another test, instances fell back once in one run of
    // five (none alone).
    let _running = alone();
    round_trip_from_1_to_3_5_s(8_000, "rtt");
}

/// Every byte 9.5 ms late each way (a 19 ms round trip, a hair under the 20 ms timeout: most
/// calls answer, runs of them time out): an instance that leaves on such a run stays out until
/// the store answers with room to spare, instead of coming back on three heartbeats answered
/// just in time and leaving again (it did, in most runs, before a return asked for the room).
#[test]
fn a_19ms_round_trip_makes_each_instance_leave_at_most_once() {
    // A hair under the timeout.
    let _running = alone();
    round_trip_from_1_to_3_5_s(9_500, "rtt19");
}

/// Three instances, R = 500, every byte `delay_us` late each way through a proxy from 1 s to
/// 3.5 s: at most 1.15 R in any second, and at most one fallback per instance.
fn round_trip_from_1_to_3_5_s(delay_us: u64, name: &str) {
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let proxy = Proxy::start(redis.port);
    let (r, secs) = (500.0, 4.0);
    let url = vec![proxy.url()];
    let reports = three_instances(&[url.clone(), url.clone(), url], name, r, secs, |ms| {
        if ms == 1_000 {
            proxy.delay_us.store(delay_us, Ordering::Relaxed);
        }
        if ms == 3_500 {
            proxy.delay_us.store(0, Ordering::Relaxed);
        }
    });
    let (most, at) = busiest_second(&reports, 1_000, 4_000);
    let fallbacks = each(&reports, "fallbacks");
    eprintln!(
        "{} ms round trip from 1 s to 3.5 s, R = {r}: at most {most} admitted in a second (from \
         {at} ms), fallbacks {fallbacks:?}, failures ridden out {:?}, admitted {:?}",
        2 * delay_us / 1_000,
        each(&reports, "ridden_out"),
        each(&reports, "admitted")
    );
    assert!(
        most as f64 <= 1.15 * r,
        "{most} admitted in the second from {at} ms, at most {}",
        1.15 * r
    );
    assert!(
        fallbacks.iter().all(|&n| n <= 1),
        "flapping: fallbacks {fallbacks:?}"
    );
}

/// The port of the node whose `CLUSTER NODES` line `line` is.
fn node_port(line: &str) -> u16 {
    line.split_whitespace()
        .nth(1)
        .and_then(|a| a.split(['@', ':']).nth(1))
        .and_then(|p| p.parse().ok())
        .expect("a node's port")
}

/// Instances started while a Redis Cluster fails over (`CLUSTER FAILOVER` on the replica of
/// the master serving the namespace's value key, then back, then again) all connect: a script
/// missing on the node that just took over, or no answer from it, is tried again within the
/// connect timeout (3 s here: a node hands its slots over in about a second) instead of
/// failing `start`.
#[test]
fn instances_started_during_redis_cluster_failovers_connect() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let cluster = RedisCluster::start_with_replicas(1, 500);
    let urls = cluster.urls();
    let slot: u16 = cluster.nodes[0]
        .cli(&["cluster", "keyslot", "failover:value-key"])
        .trim()
        .parse()
        .expect("a slot");
    let nodes = cluster.nodes[0].cli(&["cluster", "nodes"]);
    let serves = |line: &str| {
        line.split_whitespace().skip(8).any(|range| {
            let mut ends = range.split('-').filter_map(|w| w.parse::<u16>().ok());
            matches!((ends.next(), ends.next()), (Some(a), Some(b)) if (a..=b).contains(&slot))
        })
    };
    let master = nodes
        .lines()
        .find(|l| serves(l))
        .expect("the value key's master");
    let master_id = master.split_whitespace().next().expect("an id").to_owned();
    let replica = nodes
        .lines()
        .find(|l| l.contains(&format!("slave {master_id}")))
        .expect("its replica");
    let ports = [node_port(replica), node_port(master)];
    let (mut started, mut errors) = (0, Vec::new());
    for round in 0..3 {
        let took_over = harness::cli(ports[round % 2], &["cluster", "failover"]);
        assert!(took_over.contains("OK"), "CLUSTER FAILOVER: {took_over}");
        let until = Instant::now() + Duration::from_millis(1_000);
        while Instant::now() < until {
            match Cluster::redis_cluster(urls.clone())
                .namespace("failover")
                .connect_timeout(Duration::from_secs(3))
                .start()
            {
                Ok(c) => {
                    started += 1;
                    drop(c);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    eprintln!(
        "starts during 3 failovers: {started} connected, {} failed: {errors:?}",
        errors.len()
    );
    assert!(
        errors.is_empty(),
        "{} starts failed: {errors:?}",
        errors.len()
    );
}
