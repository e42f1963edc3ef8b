//! The fleet's view (`cluster::fleet`, the dashboard's `/api/fleet`) against a real
//! `redis-server` and three instance processes: every instance listed with the resource's
//! traffic summed over the fleet, the instances with the same rules flagged as such, and a
//! killed instance gone within 6 s.

use crate::harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use harness::{instance_args, require, Instances, RedisServer};
use sentinel_runtime::cluster::{self, Cluster, ClusterThreshold, Fleet};
use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::source::RedisSource;
use sentinel_runtime::rules::{self, FlowRule};

use crate::this_process;

const TOKEN: &str = "fleet-dashboard-token";
const NAMESPACE: &str = "fleet-view";
const RESOURCE: &str = "fleet-api";

/// `GET /api/fleet`'s status and body.
fn get_fleet(addr: SocketAddr) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let req = format!(
        "GET /api/fleet HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n\
         Authorization: Bearer {TOKEN}\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).expect("send the request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    (head[9..12].parse().expect("a status"), body.to_owned())
}

/// Polls the fleet's view until `done` says yes (at most `limit`), returning the last view.
fn wait_for(limit: Duration, what: &str, done: impl Fn(&Fleet) -> bool) -> (Fleet, Duration) {
    let start = Instant::now();
    loop {
        let view = cluster::fleet().unwrap_or_default();
        if done(&view) {
            return (view, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "{what} within {limit:?}: {view:#?}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_fleet_lists_every_instance_with_the_fleets_traffic_and_forgets_a_killed_one() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    // Three processes, each offering 200 calls a second of a global 2000/s rule: the calls
    // pass, the fleet's rate is about 600/s.
    let args: Vec<Vec<String>> = (0..3)
        .map(|_| {
            let rest = [
                "--threshold",
                "2000",
                "--offer",
                "200",
                "--secs",
                "30",
                "--resource",
                RESOURCE,
            ];
            instance_args(std::slice::from_ref(&url), false, NAMESPACE, &rest)
        })
        .collect();
    let mut instances = Instances::spawn(&args);
    instances.go(Duration::from_secs(20));

    // This process is a fourth instance, with the same rule.
    rules::load_flow_rules(vec![
        FlowRule::qps(RESOURCE, 2000.0).cluster(ClusterThreshold::Global)
    ])
    .expect("the rule");
    let cluster = Cluster::redis(&url)
        .namespace(NAMESPACE)
        .start()
        .expect("the cluster");
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(TOKEN)
        .start()
        .expect("the dashboard");

    let (view, _) = wait_for(
        Duration::from_secs(10),
        "four instances and the fleet's traffic",
        |f| {
            f.instances.len() == 4
                && f.resources
                    .iter()
                    .any(|r| r.resource == RESOURCE && r.instances == 3 && r.pass_qps > 300.0)
        },
    );
    let api = view
        .resources
        .iter()
        .find(|r| r.resource == RESOURCE)
        .expect("the resource");
    // Under a global 2000/s rule, a few calls of the first window may meet a local share
    // before the leases arrive; nothing like the fleet's 600/s.
    assert!(
        api.pass_qps <= 700.0 && api.block_qps <= 0.05 * api.pass_qps,
        "three instances at 200/s, almost none blocked: {api:?}"
    );
    let own = cluster.status().instance_id;
    assert!(
        view.instances.iter().any(|i| i.id == own),
        "this instance is listed"
    );
    assert!(
        view.instances
            .iter()
            .all(|i| i.pid > 0 && !i.host.is_empty()),
        "{view:#?}"
    );
    // No names given: each is `<host>-<pid>`.
    assert!(
        (view.instances.iter()).all(|i| i.name == format!("{}-{}", i.host, i.pid)),
        "{view:#?}"
    );
    // The same rules everywhere: one fingerprint.
    let versions: std::collections::BTreeSet<&str> = view
        .instances
        .iter()
        .map(|i| i.rules_version.as_str())
        .collect();
    assert_eq!(versions.len(), 1, "{view:#?}");

    let (status, body) = get_fleet(dash.local_addr());
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["available"], true, "{body}");
    assert_eq!(json["reachable"], true, "{body}");
    assert_eq!(
        json["instances"].as_array().map(Vec::len),
        Some(4),
        "{body}"
    );
    assert!(
        json["instances"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|i| i["other_rules"] == false),
        "{body}"
    );
    let listed = json["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["resource"] == RESOURCE)
        .expect("the resource in /api/fleet");
    assert_eq!(listed["instances"], 3, "{body}");
    assert_eq!(
        listed["global_limit"], 2000.0,
        "the global limit it is held to: {body}"
    );

    // Killed: it stops publishing and leaves the list within 6 s.
    instances.kill(0);
    let (_, took) = wait_for(Duration::from_secs(6), "the killed instance gone", |f| {
        f.instances.len() == 3
    });
    eprintln!("a killed instance left the fleet's view in {took:?}");
    drop(dash);
    drop(cluster);
    rules::load_flow_rules(vec![]).expect("no rules");
}

/// `PUT /api/rules` with `If-Match`: the status and the body.
fn put_rules(addr: SocketAddr, if_match: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let req = format!(
        "PUT /api/rules HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         If-Match: {if_match}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(req.as_bytes()).expect("send the request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    (head[9..12].parse().expect("a status"), body.to_owned())
}

fn document(threshold: u32) -> String {
    format!(
        "{{\"flow\": [{{\"resource\": \"{RESOURCE}\", \"threshold\": {threshold}, \
         \"cluster\": \"global\"}}]}}"
    )
}

#[test]
fn one_dashboards_edit_reaches_every_instance_within_2_s_and_a_stale_one_changes_nothing() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    let source = RedisSource::new(&url, "fleet-rules").expect("the source");
    let first = source
        .put(&document(2000), None)
        .expect("the first document");
    let args: Vec<Vec<String>> = (0..3)
        .map(|_| {
            let rest = [
                "--threshold",
                "2000",
                "--offer",
                "50",
                "--secs",
                "30",
                "--resource",
                RESOURCE,
                "--rules-source",
                "fleet-rules",
            ];
            instance_args(std::slice::from_ref(&url), false, "fleet-rules-ns", &rest)
        })
        .collect();
    let mut instances = Instances::spawn(&args);
    instances.go(Duration::from_secs(20));
    let _watcher = rules::watch_source(source.clone()).expect("this process's watcher");
    let cluster = Cluster::redis(&url)
        .namespace("fleet-rules-ns")
        .start()
        .expect("the cluster");
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(TOKEN)
        .rules_source(source.clone())
        .start()
        .expect("the dashboard");
    let same_rules = |f: &Fleet| {
        let versions: std::collections::BTreeSet<&str> = f
            .instances
            .iter()
            .map(|i| i.rules_version.as_str())
            .collect();
        f.instances.len() == 4 && versions.len() == 1
    };
    let (before, _) = wait_for(
        Duration::from_secs(10),
        "four instances, one rules version",
        same_rules,
    );

    // An edit on this instance's page: every instance has it within 2 s.
    let sent_us = harness::wall_us();
    let (status, body) = put_rules(dash.local_addr(), &format!("\"v{first}\""), &document(1500));
    assert_eq!(status, 200, "{body}");
    let mut seen = [false; 3];
    while !seen.iter().all(|s| *s) {
        let line = instances
            .line_within(Duration::from_secs(3), |l| {
                l.text.starts_with("rules 1500 ")
            })
            .unwrap_or_else(|| panic!("the new rule in every instance: {seen:?}"));
        let at: u128 = line
            .text
            .rsplit(' ')
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        let took_ms = at.saturating_sub(sent_us) / 1000;
        assert!(
            took_ms <= 2000,
            "instance {} took {took_ms} ms",
            line.instance
        );
        eprintln!(
            "instance {} applied the edit {took_ms} ms after it was sent",
            line.instance
        );
        seen[line.instance] = true;
    }
    // This process too, within the same 2 s: its watcher learns of the edit as the others do,
    // on a thread of its own (it can come a moment after the last instance's report).
    let this_too = || rules::flow_rules().first().map(|r| r.threshold) == Some(1500.0);
    while !this_too() {
        let took_ms = harness::wall_us().saturating_sub(sent_us) / 1000;
        assert!(
            took_ms <= 2000,
            "this instance: {:?} {took_ms} ms after the edit was sent",
            rules::flow_rules().first().map(|r| r.threshold)
        );
        thread::sleep(Duration::from_millis(5));
    }
    let (after, _) = wait_for(Duration::from_secs(5), "one new rules version", |f| {
        same_rules(f) && f.instances[0].rules_version != before.instances[0].rules_version
    });
    assert_eq!(after.instances.len(), 4);

    // A stale edit (the first version) is 409 and changes nothing anywhere.
    let (status, body) = put_rules(dash.local_addr(), &format!("\"v{first}\""), &document(10));
    assert_eq!(status, 409, "{body}");
    if let Some(stale) =
        instances.line_within(Duration::from_millis(500), |l| l.text.starts_with("rules "))
    {
        panic!(
            "a stale edit reached instance {}: {}",
            stale.instance, stale.text
        );
    }
    assert_eq!(
        rules::flow_rules().first().map(|r| r.threshold),
        Some(1500.0)
    );
    drop(dash);
    drop(cluster);
    rules::load(rules::RuleSet::new()).expect("no rules");
}

// ---- hostile and oversized fleets ------------------------------------------------------------

/// The fleet's keys of `namespace` (see `cluster/fleet_scripts.rs`): its index and the prefix
/// of its summaries.
fn fleet_keys(namespace: &str) -> (String, String) {
    let base = format!("{namespace}:fleet");
    (
        format!("{base}:{{{base}}}:index"),
        format!("{base}:{{{base}}}:s:"),
    )
}

/// A command in Redis's protocol.
fn resp(args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    out
}

/// Sends `commands` on `conn` in batches, each of which answers one line, and reads the answers.
fn pipeline(conn: &mut TcpStream, commands: &[String]) {
    let mut reply = vec![0u8; 64 * 1024];
    for batch in commands.chunks(500) {
        conn.write_all(batch.concat().as_bytes())
            .expect("send to redis");
        let mut lines = 0;
        while lines < batch.len() {
            let k = conn.read(&mut reply).expect("redis answers");
            assert!(k > 0, "redis closed the connection");
            lines += reply[..k].iter().filter(|&&b| b == b'\n').count();
        }
    }
}

/// Redis `TIME` in ms.
fn redis_ms(redis: &RedisServer) -> u64 {
    let out = redis.cli(&["TIME"]);
    let mut words = out
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let (s, us) = (words.next().unwrap_or(0), words.next().unwrap_or(0));
    s * 1000 + us / 1000
}

/// A summary in the format instances write (`v2`, see `cluster/fleet.rs`), with `resources`
/// resources and `pass` as its pass rate.
fn fake_summary(name: &str, pass: &str, resources: usize) -> String {
    let mut text = format!("v2\t{name}\tfake-host\t1\tfake-rules\t-\tconnected\t{pass}\t0\t0\n");
    for r in 0..resources {
        text.push_str(&format!("r\tfake-resource-{r}\t{}\t0\n", 10 + r));
    }
    text
}

/// Sets its flag when dropped: threads of a scope that watch it stop, also when the test
/// panics (the scope waits for them).
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `INFO commandstats`: the scripts' calls and their microseconds, all together.
fn script_cost(redis: &RedisServer) -> (u64, u64) {
    let info = redis.cli(&["INFO", "commandstats"]);
    let (mut calls, mut usec) = (0, 0);
    for line in info.lines() {
        let Some(rest) = line
            .strip_prefix("cmdstat_evalsha:")
            .or_else(|| line.strip_prefix("cmdstat_eval:"))
        else {
            continue;
        };
        for field in rest.trim().split(',') {
            match field.split_once('=') {
                Some(("calls", v)) => calls += v.parse::<u64>().unwrap_or(0),
                Some(("usec", v)) => usec += v.parse::<u64>().unwrap_or(0),
                _ => {}
            }
        }
    }
    (calls, usec)
}

/// 100 000 entries planted in the fleet's index (a quarter each: past their time, from the
/// future with summaries, live without a summary, live with a malformed one), then three
/// instances with a global cluster rule and their views asked for, for 15 s: none falls back,
/// Redis answers every `PING` within 50 ms, and the scripts cost at most 0.5 ms a call on
/// average. The instances' views end with the three of them.
#[test]
fn with_100_000_planted_entries_three_instances_keep_their_cluster_rule_and_redis_answers() {
    let _running = crate::spawned_only();
    let Some(()) = require("redis-server") else {
        return;
    };
    const NS: &str = "fleet-planted";
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    let (index, prefix) = fleet_keys(NS);
    let now = redis_ms(&redis);
    let mut commands = Vec::with_capacity(150_000);
    for i in 0..25_000u64 {
        let (past, future) = (format!("past-{i}"), format!("future-{i}"));
        let (nokey, bad) = (format!("nokey-{i}"), format!("bad-{i}"));
        commands.push(resp(&[
            "ZADD",
            &index,
            &(now - 3_600_000 - i).to_string(),
            &past,
        ]));
        let at = (now + 86_400_000 + i).to_string();
        commands.push(resp(&["ZADD", &index, &at, &future]));
        let summary = format!("{at}|{}", fake_summary("future", "1", 3));
        commands.push(resp(&["SET", &format!("{prefix}{future}"), &summary]));
        commands.push(resp(&["ZADD", &index, &(now - 500).to_string(), &nokey]));
        commands.push(resp(&["ZADD", &index, &(now - 500).to_string(), &bad]));
        commands.push(resp(&["SET", &format!("{prefix}{bad}"), "no stamp"]));
    }
    let mut conn = TcpStream::connect(("127.0.0.1", redis.port)).expect("connect to redis");
    pipeline(&mut conn, &commands);
    assert_eq!(redis.cli(&["ZCARD", &index]).trim(), "100000");
    redis.cli(&["CONFIG", "RESETSTAT"]);

    let args: Vec<Vec<String>> = (0..3)
        .map(|i| {
            let name = format!("planted-{i}");
            let rest = [
                "--threshold",
                "1000",
                "--offer",
                "100",
                "--secs",
                "15",
                "--resource",
                "fleet-planted",
                "--watch-fleet",
                "--name",
                &name,
            ];
            instance_args(std::slice::from_ref(&url), false, NS, &rest)
        })
        .collect();
    let mut instances = Instances::spawn(&args);
    instances.go(Duration::from_secs(20));

    // PING every 10 ms while the instances run: the slowest answer.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (reports, slowest, fleet_lines) = thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        let pinger = s.spawn(|| {
            let mut conn = TcpStream::connect(("127.0.0.1", redis.port)).expect("connect");
            let mut reply = [0u8; 64];
            let mut slowest = Duration::ZERO;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let sent = Instant::now();
                conn.write_all(b"PING\r\n").expect("PING");
                let k = conn.read(&mut reply).expect("PONG");
                assert_eq!(&reply[..k], b"+PONG\r\n");
                slowest = slowest.max(sent.elapsed());
                thread::sleep(Duration::from_millis(10));
            }
            slowest
        });
        let mut fleet_lines = vec![String::new(); 3];
        let reports = instances.collect(Duration::from_secs(40), |line| {
            if line.text.starts_with("fleet ") {
                fleet_lines[line.instance] = line.text.clone();
            }
        });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (reports, pinger.join().expect("the pinger"), fleet_lines)
    });
    let (calls, usec) = script_cost(&redis);
    let per_call = usec as f64 / calls.max(1) as f64;
    let left = redis.cli(&["ZCARD", &index]);
    eprintln!(
        "100 000 planted: slowest PING {slowest:?}; {calls} script calls, {per_call:.1} µs a \
         call; the index holds {} after 15 s; last views {fleet_lines:?}",
        left.trim()
    );
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r.get("fallbacks"), 0, "instance {i} fell back: {r:?}");
        let offered = r.get("admitted") + r.get("blocked");
        assert!(
            r.get("blocked") * 100 <= offered,
            "instance {i}: 100/s each under a global 1000/s, blocked {} of {offered}",
            r.get("blocked")
        );
    }
    assert!(
        slowest < Duration::from_millis(50),
        "a PING took {slowest:?}"
    );
    assert!(per_call <= 500.0, "{per_call:.1} µs a script call");
    // The planted entries are no part of the views: the three instances, each read.
    for (i, line) in fleet_lines.iter().enumerate() {
        assert_eq!(line, "fleet 3 3 0", "instance {i}'s view at its end");
    }
    let left: u64 = left.trim().parse().expect("ZCARD");
    assert!(
        left <= 100_000 - 3_000,
        "the publishes removed what they met: {left} left"
    );
}

/// This process's resident set size in kB.
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in kB")
}

/// Writes summaries as any writer to the store can: stamped with Redis `TIME`, into the index
/// and a key of their own, live for `LIVE_MS` and a little.
const WRITE: &str = "local t = redis.call('TIME') \
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
    redis.call('SET', KEYS[2], now .. '|' .. ARGV[2], 'PX', 4750) \
    redis.call('ZADD', KEYS[1], now, ARGV[1]) return 1";

/// The commands that write each of `entries` (id, summary) into `namespace`'s fleet.
fn writes(namespace: &str, entries: &[(String, String)]) -> Vec<String> {
    let (index, prefix) = fleet_keys(namespace);
    entries
        .iter()
        .map(|(id, summary)| {
            let key = format!("{prefix}{id}");
            resp(&["EVAL", WRITE, "2", &index, &key, id, summary])
        })
        .collect()
}

/// `/api/fleet` as JSON, with its size in bytes.
fn api_fleet(addr: SocketAddr) -> (serde_json::Value, usize) {
    let (status, body) = get_fleet(addr);
    assert_eq!(status, 200, "{body}");
    (serde_json::from_str(&body).expect("JSON"), body.len())
}

/// Any process that can write to the cluster's Redis can write into the fleet's list. Hostile
/// summaries (8 MB long; `NaN`, `1e308`, a negative and an infinite rate; a 10 KB name) are
/// skipped and counted, never freeze the view; 2 000 fake instances of 50 resources each keep
/// `/api/fleet` bounded, grow this process by at most 50 MB and leave the real instance shown
/// as it is; once the writer stops they leave the view within `LIVE_MS` and a read.
#[test]
fn fake_and_hostile_summaries_leave_the_view_bounded_and_the_real_instance_right() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    const NS: &str = "fleet-hostile";
    const REAL: &str = "fleet-real";
    let redis = RedisServer::start(&[]);
    rules::load_flow_rules(vec![
        FlowRule::qps(REAL, 1000.0).cluster(ClusterThreshold::Global)
    ])
    .expect("the rule");
    let cluster = Cluster::redis(redis.url())
        .namespace(NS)
        .instance_name("the-real-one")
        .start()
        .expect("the cluster");
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(TOKEN)
        .start()
        .expect("the dashboard");
    let addr = dash.local_addr();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let writing = std::sync::atomic::AtomicU8::new(0);
    let real_is_right = |json: &serde_json::Value| {
        let real = &json["instances"][0];
        real["this_instance"] == true
            && real["name"] == "the-real-one"
            && real["other_rules"] == false
            && real["pass_qps"]
                .as_f64()
                .is_some_and(|p| (30.0..=80.0).contains(&p))
    };
    // What the writer writes.
    let hostile: Vec<(String, String)> = [
        ("huge", fake_summary("huge", "1", 1) + &"x".repeat(8 << 20)),
        ("nan", fake_summary("nan", "NaN", 1)),
        ("huge-rate", fake_summary("huge-rate", "1e308", 1)),
        ("negative", fake_summary("negative", "-5", 1)),
        (
            "inf",
            fake_summary("inf", "1", 1).replace("\t10\t0\n", "\tinf\t0\n"),
        ),
        ("long-name", fake_summary(&"n".repeat(10_000), "1", 1)),
        ("bidi", fake_summary("\u{202E}evil\u{202C}", "7", 1)),
    ]
    .into_iter()
    .map(|(id, text)| (id.to_owned(), text))
    .collect();
    let hostile = writes(NS, &hostile);
    let fakes: Vec<(String, String)> = (0..2_000)
        .map(|i| {
            (
                format!("fake-{i}"),
                fake_summary(&format!("fake-{i}"), "500", 50),
            )
        })
        .collect();
    let fakes = writes(NS, &fakes);
    thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        // The real traffic: 50 calls a second.
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                drop(sentinel_runtime::entry(REAL));
                thread::sleep(Duration::from_millis(20));
            }
        });
        // The writer: once a second, the hostile entries (from phase 1), the fakes (phase 2).
        s.spawn(|| {
            let mut conn = TcpStream::connect(("127.0.0.1", redis.port)).expect("connect");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let phase = writing.load(std::sync::atomic::Ordering::Relaxed);
                let started = Instant::now();
                if phase >= 1 {
                    pipeline(&mut conn, &hostile);
                }
                if phase >= 2 {
                    pipeline(&mut conn, &fakes);
                }
                thread::sleep(Duration::from_secs(1).saturating_sub(started.elapsed()));
            }
        });

        // The real instance alone, read from the store.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (json, _) = api_fleet(addr);
            if json["reading"] == false && json["count"] == 1 && real_is_right(&json) {
                break;
            }
            assert!(Instant::now() < deadline, "the real instance alone: {json}");
            thread::sleep(Duration::from_millis(200));
        }
        let rss0 = rss_kb();

        // Phase 1: hostile summaries are skipped and counted; the bidi name is shown as it is.
        writing.store(1, std::sync::atomic::Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(10);
        let json = loop {
            let (json, _) = api_fleet(addr);
            if json["count"] == 8 && json["unreadable"] == 6 && json["shown"] == 2 {
                break json;
            }
            assert!(
                Instant::now() < deadline,
                "hostile summaries skipped: {json}"
            );
            thread::sleep(Duration::from_millis(200));
        };
        assert!(real_is_right(&json), "{json}");
        assert_eq!(json["instances"][1]["name"], "\u{202E}evil\u{202C}");
        assert_eq!(json["instances"][1]["pass_qps"], 7.0);
        // The view goes on: the entries read are fresh at each read.
        for _ in 0..2 {
            thread::sleep(Duration::from_millis(1200));
            let (json, _) = api_fleet(addr);
            assert!(
                json["instances"][1]["last_seen_ms"].as_u64() < Some(2_500),
                "{json}"
            );
        }

        // Phase 2: 2 000 fakes of 50 resources each.
        writing.store(2, std::sync::atomic::Ordering::Relaxed);
        let (mut peak, mut biggest, mut saw_all) = (rss0, 0, false);
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            thread::sleep(Duration::from_millis(300));
            let (json, bytes) = api_fleet(addr);
            peak = peak.max(rss_kb());
            biggest = biggest.max(bytes);
            assert!(bytes <= 1_200_000, "/api/fleet is {bytes} bytes");
            assert!(json["shown"].as_u64() <= Some(101), "{}", json["shown"]);
            assert!(json["resources"].as_array().map_or(0, Vec::len) <= 100);
            assert!(
                real_is_right(&json),
                "the real instance: {}",
                json["instances"][0]
            );
            if json["count"].as_u64() >= Some(2_000) {
                saw_all = true;
                assert_eq!(json["incomplete"], true);
            }
        }
        assert!(saw_all, "the fleet's count reached the fakes");
        let grew_mb = peak.saturating_sub(rss0) / 1024;

        // Phase 3: the writer stops; every fake and hostile entry leaves the view.
        writing.store(0, std::sync::atomic::Ordering::Relaxed);
        let stopped = Instant::now();
        let deadline = stopped + Duration::from_millis(fleet_live_ms() + 2_500);
        loop {
            let (json, _) = api_fleet(addr);
            if json["count"] == 1 && json["shown"] == 1 {
                assert!(real_is_right(&json), "{json}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the fakes expired: {}",
                json["count"]
            );
            thread::sleep(Duration::from_millis(200));
        }
        let after_mb = rss_kb().saturating_sub(rss0) / 1024;
        eprintln!(
            "2 000 fakes: /api/fleet at most {biggest} bytes, this process grew by {grew_mb} MB \
             at most, {after_mb} MB over its start once they left ({:?} after the writer \
             stopped)",
            stopped.elapsed()
        );
        assert!(grew_mb <= 50, "grew by {grew_mb} MB");
        assert!(after_mb <= 50, "kept {after_mb} MB");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    drop(dash);
    drop(cluster);
    rules::load_flow_rules(vec![]).expect("no rules");
}

fn fleet_live_ms() -> u64 {
    cluster::LIVE_MS
}

/// A name the fleet's view would refuse is refused at start, naming the setting.
#[test]
fn an_instance_name_out_of_bounds_is_refused_at_start() {
    let long = "n".repeat(cluster::MAX_TEXT_BYTES + 1);
    for bad in ["", "checkout\na", "\u{202E}x", long.as_str()] {
        let refused = Cluster::redis("redis://127.0.0.1:1")
            .instance_name(bad)
            .start()
            .expect_err("a bad name is refused");
        assert!(
            matches!(
                refused,
                cluster::ClusterError::Setting {
                    field: "instance_name",
                    ..
                }
            ),
            "{bad:?}: {refused}"
        );
    }
}

/// On a Redis Cluster the fleet's keys share one slot: an instance publishes and reads its
/// view (no cross-slot error), and the view holds a second instance.
#[test]
fn on_a_redis_cluster_the_fleet_is_published_and_read() {
    let _running = this_process();
    let Some(()) = require("redis-server") else {
        return;
    };
    let redis = harness::RedisCluster::start();
    let urls = redis.urls();
    let args = vec![instance_args(
        &urls,
        true,
        "fleet-on-cluster",
        &["--secs", "15", "--offer", "10", "--name", "the-other"],
    )];
    let mut instances = Instances::spawn(&args);
    instances.go(Duration::from_secs(20));
    let cluster = Cluster::redis_cluster(urls.clone())
        .namespace("fleet-on-cluster")
        .instance_name("this-one")
        .start()
        .expect("the cluster");
    let (view, took) = wait_for(Duration::from_secs(10), "both instances read", |f| {
        !f.own_only && f.instances.iter().any(|i| i.name == "the-other")
    });
    eprintln!("on a Redis Cluster: the fleet read in {took:?}");
    assert_eq!((view.count, view.unreadable), (2, 0), "{view:#?}");
    assert_eq!(
        sentinel_runtime::metrics::cluster().crossslot_errors,
        0,
        "cross-slot errors"
    );
    drop(cluster);
}
