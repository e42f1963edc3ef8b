//! Cluster limits under faults, against real `redis-server` processes (and a real 3-master Redis
//! Cluster) started here on free loopback ports: keys that cannot collide, state the store
//! forgets, a slow store, instances cut off from it. Each fault is real (`FLUSHALL`,
//! `DEBUG SLEEP`, a TCP proxy that stalls), and each instance is a process of our own binary
//! (`tests/support/cluster_instance.rs`) that reports what it admitted every 100 ms.
//!
//! Without `redis-server` on PATH the tests are skipped with a line saying how to install it;
//! with `SENTINEL_REQUIRE_SERVERS=1` that is a failure. The tests run one at a time.

#[path = "support/redis_harness.rs"]
mod harness;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use harness::{instance_args, require, Instances, RedisCluster, RedisServer, Report};
use sentinel_runtime::cluster::{Cluster, ClusterThreshold};
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::EntryBuilder;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

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
    let _serial = serial();
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
    let admitted: Vec<u64> = reports.iter().map(|r| r.get("admitted")).collect();
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
    let _serial = serial();
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
    // the values are entered again until every key is there (at most 5 s).
    within(Duration::from_secs(5), || {
        enter_all();
        per_master().iter().sum::<usize>() >= values
    });
    let holding = per_master();
    eprintln!(
        "{values} values of {route}: keys per master {holding:?}, {:?}",
        sentinel_runtime::metrics::cluster()
    );
    drop(started);
    rules::load_hotspot_rules(vec![]).expect("rules cleared");
    assert_eq!(holding.iter().sum::<usize>(), values, "{holding:?}");
    for (i, n) in holding.iter().enumerate() {
        assert!(
            *n * 10 >= values,
            "master {i} holds {n} of {values} keys: {holding:?}"
        );
    }
}
