//! One instance of a service for the cluster tests (`tests/cluster/cluster_redis.rs`) and
//! `examples/cluster_limit`: starts a cluster (or not), loads one cluster rule, waits for `go`
//! on stdin, offers calls at a steady rate and reports on stdout:
//!
//! - `ready` once the rule is loaded (and the cluster connected),
//! - `state <connected|fallback> <wall µs>` at every change of the cluster's state,
//! - `tick <ms since go> <admitted in the tick> <state> <health> <instances> <held back>
//!   <admitted per value>` every 100 ms (health: `connected`, `degraded` or `fallback`;
//!   instances and held back as `status()` says them; the admitted calls of each hotspot value
//!   in the tick, comma-separated),
//! - `done admitted=<n> blocked=<n> max_call_us=<n> cluster_blocks=<n> slow_calls=<n> redis_calls=<n>
//!   crossslot=<n> leases=<n> fallbacks=<n> state_losses=<n> charged_back=<n> ridden_out=<n>
//!   value_key_splits=<n> split_now=<0|1> min_instances=<n> start_us=<wall> end_us=<wall>
//!   <value>=<n>...` (the
//!   counts of `metrics::cluster()`, when the calls began and ended, and the admitted calls per
//!   hotspot value).
//!
//! Arguments: `--redis URL` (repeat with `--redis-cluster` for a Redis Cluster; none: no
//! cluster), `--namespace NS`, `--rule flow|hot`, `--threshold R`, `--offer PER_SECOND`,
//! `--secs S`, `--skew-ms MS` (run on a mock clock that far ahead of the real one),
//! `--per-instance` (a per-instance cluster rule instead of a global one), `--resource NAME`
//! (the rule's resource, default `cluster-test`), `--rules-source KEY` (also watch the rule
//! document kept at `KEY` in the first Redis, and say `rules <threshold> <wall µs>` each time
//! the resource's flow rule changes), `--resources N` (also enter N other resources,
//! `other-0`..`other-{N-1}`, once a second each: the fleet's summaries list the busiest),
//! `--etcd URL` (with `--rules-source KEY`: watch the document at `KEY` in that etcd instead of
//! Redis), `--name NAME` (the instance's name in the fleet's view), `--watch-fleet` (ask for the
//! fleet's view every 500 ms, as an open dashboard does, and say `fleet <count> <shown>
//! <unreadable>` once a second).

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::cluster::{Cluster, ClusterState, ClusterThreshold};
use sentinel_runtime::rules::source::{EtcdSource, RedisSource};
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::EntryBuilder;

#[derive(Debug)]
struct Args {
    urls: Vec<String>,
    redis_cluster: bool,
    namespace: String,
    hot: bool,
    threshold: f64,
    offer: f64,
    secs: f64,
    skew_ms: u64,
    per_instance: bool,
    resource: &'static str,
    rules_source: Option<String>,
    etcd: Option<String>,
    resources: usize,
    name: Option<String>,
    watch_fleet: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        urls: Vec::new(),
        redis_cluster: false,
        namespace: "sentinel-test".into(),
        hot: false,
        threshold: 100.0,
        offer: 100.0,
        secs: 3.0,
        skew_ms: 0,
        per_instance: false,
        resource: "cluster-test",
        rules_source: None,
        etcd: None,
        resources: 0,
        name: None,
        watch_fleet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<f64>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--redis" => args.urls.push(value()?),
            "--redis-cluster" => args.redis_cluster = true,
            "--namespace" => args.namespace = value()?,
            "--rule" => args.hot = value()? == "hot",
            "--threshold" => args.threshold = number(value()?)?,
            "--offer" => args.offer = number(value()?)?,
            "--secs" => args.secs = number(value()?)?,
            "--skew-ms" => args.skew_ms = number(value()?)? as u64,
            "--per-instance" => args.per_instance = true,
            // Leaked once: entries take a `&'static str`.
            "--resource" => args.resource = Box::leak(value()?.into_boxed_str()),
            "--rules-source" => args.rules_source = Some(value()?),
            "--etcd" => args.etcd = Some(value()?),
            "--resources" => args.resources = number(value()?)? as usize,
            "--name" => args.name = Some(value()?),
            "--watch-fleet" => args.watch_fleet = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn wall_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

const VALUES: [&str; 3] = ["alice", "bob", "carol"];

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("cluster_instance: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A clock `skew_ms` ahead of the real one, kept moving with real time by a helper thread.
    let clock = (args.skew_ms > 0).then(|| {
        let clock = MockClock::install();
        clock.advance(Duration::from_millis(args.skew_ms));
        clock
    });
    let stop_clock = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(clock) = &clock {
            s.spawn(|| {
                let mut last = Instant::now();
                while !stop_clock.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_micros(500));
                    let now = Instant::now();
                    clock.advance(now - last);
                    last = now;
                }
            });
        }
        let code = run(&args);
        stop_clock.store(true, Ordering::Relaxed);
        code
    })
}

fn run(args: &Args) -> ExitCode {
    let cluster = if args.urls.is_empty() {
        None
    } else {
        let builder = if args.redis_cluster {
            Cluster::redis_cluster(args.urls.clone())
        } else {
            Cluster::redis(args.urls[0].clone())
        };
        let builder = match &args.name {
            Some(name) => builder.instance_name(name.clone()),
            None => builder,
        };
        match builder.namespace(args.namespace.clone()).start() {
            Ok(cluster) => Some(cluster),
            Err(e) => {
                println!("error {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let threshold = if args.per_instance {
        ClusterThreshold::PerInstance
    } else {
        ClusterThreshold::Global
    };
    let loaded = if args.hot {
        rules::load_hotspot_rules(vec![
            HotspotRule::qps(args.resource, 0, args.threshold).cluster(threshold)
        ])
    } else {
        rules::load_flow_rules(vec![
            FlowRule::qps(args.resource, args.threshold).cluster(threshold)
        ])
    };
    if let Err(e) = loaded {
        println!("error {e}");
        return ExitCode::FAILURE;
    }
    let out = std::io::stdout();
    let say = |line: String| {
        let mut out = out.lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let _watcher = match (&args.rules_source, args.urls.first()) {
        (Some(key), url) if args.etcd.is_some() || url.is_some() => {
            let watched = match (&args.etcd, url) {
                (Some(etcd), _) => EtcdSource::new([etcd.as_str()], key.as_str())
                    .map_err(|e| e.to_string())
                    .and_then(|source| rules::watch_source(source).map_err(|e| e.to_string())),
                (None, Some(url)) => RedisSource::new(url, key)
                    .map_err(|e| e.to_string())
                    .and_then(|source| rules::watch_source(source).map_err(|e| e.to_string())),
                (None, None) => Err("no store to watch".to_owned()),
            };
            match watched {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    println!("error {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        _ => None,
    };
    say("ready".into());
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() || line.trim() != "go" {
        return ExitCode::FAILURE;
    }
    let state = || match &cluster {
        Some(c) => c.status().state,
        None => ClusterState::Fallback,
    };
    let health = || match &cluster {
        Some(c) => c.status().health(),
        None => "fallback",
    };
    let done = AtomicBool::new(false);
    let start_us = wall_us();
    let min_instances = AtomicU64::new(u64::MAX);
    let (admitted, blocked, max_call, cluster_blocks, slow, per_value) = std::thread::scope(|s| {
        // Other resources, each entered once a second.
        if args.resources > 0 {
            s.spawn(|| {
                let names: Vec<String> =
                    (0..args.resources).map(|i| format!("other-{i}")).collect();
                while !done.load(Ordering::Relaxed) {
                    for name in &names {
                        drop(sentinel_runtime::entry(name));
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
        // The fleet's view asked for, as an open dashboard asks for it.
        if args.watch_fleet {
            s.spawn(|| {
                let mut said = Instant::now();
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    let view = sentinel_runtime::cluster::fleet().unwrap_or_default();
                    if said.elapsed() >= Duration::from_secs(1) {
                        said = Instant::now();
                        say(format!(
                            "fleet {} {} {}",
                            view.count,
                            view.instances.len(),
                            view.unreadable
                        ));
                    }
                }
            });
        }
        // With a rule source: says each new threshold of the resource's flow rule.
        if args.rules_source.is_some() {
            s.spawn(|| {
                let threshold = || {
                    rules::flow_rules()
                        .iter()
                        .find(|r| r.resource == args.resource)
                        .map_or(-1.0, |r| r.threshold)
                };
                let mut last = threshold();
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                    let now = threshold();
                    if now != last {
                        say(format!("rules {now} {}", wall_us()));
                        last = now;
                    }
                }
            });
        }
        // Watches the cluster's state every millisecond and reports each change, and the
        // fewest instances it said were live while connected (`min_instances`).
        s.spawn(|| {
            let watching = Instant::now();
            let mut last = state();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                let now = state();
                if now != last {
                    say(format!("state {now} {}", wall_us()));
                    last = now;
                }
                if let Some(c) = cluster.as_ref().filter(|_| now == ClusterState::Connected) {
                    // From 200 ms after go: the instances started one after another, and
                    // each counts the others from its next heartbeat (30 ms).
                    if watching.elapsed() >= Duration::from_millis(200) {
                        let n = c.status().instances as u64;
                        min_instances.fetch_min(n, Ordering::Relaxed);
                    }
                }
            }
        });
        let counts = || match &cluster {
            Some(c) => {
                let status = c.status();
                (status.instances, status.held_back)
            }
            None => (1, 0),
        };
        let result = offer(args, &say, &state, &health, &counts);
        done.store(true, Ordering::Relaxed);
        result
    });
    let values: Vec<String> = VALUES
        .iter()
        .zip(per_value)
        .map(|(v, n)| format!("{v}={n}"))
        .collect();
    let end_us = wall_us();
    let m = sentinel_runtime::metrics::cluster();
    say(format!(
        "done admitted={admitted} blocked={blocked} max_call_us={max_call} \
         cluster_blocks={cluster_blocks} slow_calls={slow} redis_calls={} crossslot={} leases={} \
         fallbacks={} state_losses={} charged_back={} ridden_out={} value_key_splits={} \
         split_now={} min_instances={} start_us={start_us} end_us={end_us} {}",
        m.redis_calls,
        m.crossslot_errors,
        m.leases_taken,
        m.fallbacks,
        m.state_losses,
        m.charged_back,
        m.failures_ridden_out,
        m.value_key_splits,
        u8::from(cluster.as_ref().is_some_and(|c| {
            c.status()
                .degraded
                .contains(&sentinel_runtime::cluster::ClusterDegraded::ValueKeySplit)
        })),
        min_instances.load(Ordering::Relaxed),
        values.join(" ")
    ));
    drop(cluster);
    ExitCode::SUCCESS
}

/// Offers calls at `args.offer` per second for `args.secs`; returns (admitted, blocked, the
/// longest call in µs, blocks that said "cluster limit", calls longer than 5 ms, admitted per
/// value).
fn offer(
    args: &Args,
    say: &dyn Fn(String),
    state: &dyn Fn() -> ClusterState,
    health: &dyn Fn() -> &'static str,
    counts: &dyn Fn() -> (usize, usize),
) -> (u64, u64, u128, u64, u64, [u64; 3]) {
    let start = Instant::now();
    let end = Duration::from_secs_f64(args.secs);
    let (mut offered, mut admitted, mut blocked, mut max_call, mut cluster_blocks) =
        (0u64, 0u64, 0u64, 0u128, 0u64);
    let mut per_value = [0u64; 3];
    let mut slow = 0u64;
    let mut tick_admitted = 0u64;
    let mut tick_values = [0u64; 3];
    let mut next_tick = Duration::from_millis(100);
    loop {
        let elapsed = start.elapsed();
        if elapsed >= next_tick {
            let (instances, held_back) = counts();
            say(format!(
                "tick {} {tick_admitted} {} {} {instances} {held_back} {},{},{}",
                next_tick.as_millis(),
                state(),
                health(),
                tick_values[0],
                tick_values[1],
                tick_values[2],
            ));
            tick_admitted = 0;
            tick_values = [0; 3];
            next_tick += Duration::from_millis(100);
        }
        if elapsed >= end {
            break;
        }
        let due = (elapsed.as_secs_f64() * args.offer) as u64;
        // Calls that wait (a dry lease) may slow the loop: it never runs past the end.
        while offered < due && start.elapsed() < end {
            let value = (offered % 3) as usize;
            offered += 1;
            let call = Instant::now();
            let result = if args.hot {
                EntryBuilder::new(args.resource)
                    .param(VALUES[value])
                    .enter()
            } else {
                EntryBuilder::new(args.resource).enter()
            };
            let took = call.elapsed().as_micros();
            max_call = max_call.max(took);
            if took > 5_000 {
                slow += 1;
            }
            match result {
                Ok(_entry) => {
                    admitted += 1;
                    tick_admitted += 1;
                    per_value[value] += 1;
                    tick_values[value] += 1;
                }
                Err(e) => {
                    blocked += 1;
                    if e.reason().is_some_and(|r| r.starts_with("cluster limit")) {
                        cluster_blocks += 1;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    (admitted, blocked, max_call, cluster_blocks, slow, per_value)
}
