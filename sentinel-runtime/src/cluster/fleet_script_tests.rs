//! The fleet's scripts on a real `redis-server` (through a Unix socket in a temporary
//! directory): what a publish removes and what it costs with 100 000 entries planted, what a
//! read skips, and what a fleet of 1 000 instances costs Redis. Skipped without
//! `redis-server` on `PATH`, unless `SENTINEL_REQUIRE_SERVERS=1`.

use std::time::{Duration, Instant};

use ::redis::{Connection, Value};

use super::fleet::{self, FleetInstance, FleetResource, LIVE_MS, MAX_READ, MAX_SUMMARY_BYTES};
use super::fleet_scripts::{FleetKeys, FleetScripts, Read, SWEEP};
use super::fleet_task::{fleet_of, PUBLISH_EVERY};
use super::test_server::Server;

fn keys() -> FleetKeys {
    FleetKeys::new("ns:fleet")
}

/// An instance's summary with `resources` resources of about 20-byte names.
fn summary(id: &str, resources: usize) -> String {
    summary_named(id, resources, "GET /api/resource-")
}

/// An instance's summary with `resources` resources named `<stem><i>`.
fn summary_named(id: &str, resources: usize, stem: &str) -> String {
    fleet::encode(&FleetInstance {
        id: id.to_owned(),
        name: format!("name-{id}"),
        host: "host".to_owned(),
        pid: 1,
        rules_version: "0123456789abcdef".to_owned(),
        cluster_state: "connected".to_owned(),
        pass_qps: 10.0,
        resources: (0..resources)
            .map(|i| FleetResource {
                resource: format!("{stem}{i}"),
                pass_qps: 100.0 + i as f64,
                block_qps: 1.5,
                instances: 1,
            })
            .collect(),
        ..FleetInstance::default()
    })
}

fn publish(conn: &mut Connection, id: &str, text: &str) -> i64 {
    let scripts = FleetScripts::get();
    let removed: Vec<i64> = scripts
        .publish_call(&keys(), id, text, LIVE_MS)
        .invoke(conn)
        .expect("the publish script runs");
    removed[0]
}

fn read(conn: &mut Connection, own: &str) -> Read {
    let scripts = FleetScripts::get();
    let raw: Vec<Value> = scripts
        .read_call(&keys(), own, LIVE_MS)
        .invoke(conn)
        .expect("the read script runs");
    Read::parse(raw).expect("the read script's shape")
}

/// Redis `TIME` in ms.
fn now_ms(conn: &mut Connection) -> u64 {
    let (s, us): (u64, u64) = ::redis::cmd("TIME").query(conn).expect("TIME");
    s * 1000 + us / 1000
}

fn zcard(conn: &mut Connection) -> u64 {
    ::redis::cmd("ZCARD")
        .arg(keys().index)
        .query(conn)
        .expect("ZCARD")
}

/// Plants entries in the index (and strings for some): `n` of each of past, future,
/// live-without-summary and live-with-a-malformed-summary.
fn plant(conn: &mut Connection, n: usize) {
    let now = now_ms(conn);
    let k = keys();
    let mut pipe = ::redis::pipe();
    for i in 0..n {
        pipe.cmd("ZADD")
            .arg(&k.index)
            .arg(now - 3_600_000 - i as u64)
            .arg(format!("past-{i}"))
            .ignore();
        pipe.cmd("ZADD")
            .arg(&k.index)
            .arg(now + 86_400_000 + i as u64)
            .arg(format!("future-{i}"))
            .ignore();
        pipe.cmd("SET")
            .arg(format!("{}future-{i}", k.prefix))
            .arg(format!("{}|{}", now + 86_400_000, summary("f", 1)))
            .ignore();
        pipe.cmd("ZADD")
            .arg(&k.index)
            .arg(now - 1_000)
            .arg(format!("nokey-{i}"))
            .ignore();
        pipe.cmd("ZADD")
            .arg(&k.index)
            .arg(now - 1_000)
            .arg(format!("bad-{i}"))
            .ignore();
        pipe.cmd("SET")
            .arg(format!("{}bad-{i}", k.prefix))
            .arg("not a stamp")
            .ignore();
    }
    pipe.query::<()>(conn).expect("planted");
}

#[test]
fn a_read_skips_and_counts_what_it_cannot_read_and_shows_only_live_entries() {
    let Some(server) = Server::start("read") else {
        return;
    };
    let mut conn = server.connect();
    let k = keys();
    publish(&mut conn, "own", &summary("own", 3));
    publish(&mut conn, "a", &summary("a", 3));
    publish(&mut conn, "b", &summary("b", 3));
    plant(&mut conn, 3);
    let now = now_ms(&mut conn);
    // Over the byte cap (not written by an instance): skipped unread.
    let _: () = ::redis::cmd("SET")
        .arg(format!("{}huge", k.prefix))
        .arg(format!("{now}|{}", "x".repeat(MAX_SUMMARY_BYTES + 1)))
        .query(&mut conn)
        .expect("SET");
    let _: () = ::redis::cmd("ZADD")
        .arg(&k.index)
        .arg(now)
        .arg("huge")
        .query(&mut conn)
        .expect("ZADD");
    // Not a string at all.
    let _: () = ::redis::cmd("HSET")
        .arg(format!("{}hash", k.prefix))
        .arg("f")
        .arg("v")
        .query(&mut conn)
        .expect("HSET");
    let _: () = ::redis::cmd("ZADD")
        .arg(&k.index)
        .arg(now)
        .arg("hash")
        .query(&mut conn)
        .expect("ZADD");
    // A summary in the format, but with a number out of bounds: read, then refused.
    let nan = summary("nan", 1).replacen("\t10\t", "\tNaN\t", 1);
    assert!(nan.contains("NaN"));
    publish(&mut conn, "nan", &nan);

    let first = read(&mut conn, "own");
    let ids: Vec<&str> = first.entries.iter().map(|e| e.0.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["a", "b", "nan"], "{first:?}");
    // Live in the index: own, a, b, nan, huge, hash, 3 without a summary, 3 malformed.
    assert_eq!(first.count, 4 + 2 + 3 + 3);
    // Unreadable: huge, hash, 3 malformed (the missing ones are only gone).
    assert_eq!(first.unreadable, 5, "{first:?}");
    assert!(!first.over_budget);

    let view = fleet_of(
        fleet::decode("own", 0, &summary("own", 3)).expect("own"),
        read(&mut conn, "own"),
    );
    let names: Vec<&str> = view.instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(names, ["a", "b", "own"]);
    // The second read: the missing, malformed and wrong-typed entries left the index, the huge
    // one stays (skipped again) and the NaN one is refused by the reader.
    assert_eq!(view.count, 5, "{view:?}");
    assert_eq!(view.unreadable, 2, "{view:?}");
    assert!(view.incomplete, "five live, three shown");

    // Entries from the future were neither counted nor read; the publish after they were
    // planted removed them and the past ones, with their summaries.
    let live = ["a", "b", "huge", "nan", "own"];
    assert_eq!(zcard(&mut conn), live.len() as u64);
    let future: Option<String> = ::redis::cmd("GET")
        .arg(format!("{}future-0", k.prefix))
        .query(&mut conn)
        .expect("GET");
    assert_eq!(future, None, "a future entry's summary is removed with it");
}

#[test]
fn the_byte_budget_of_a_read_leaves_the_rest_out_and_says_so() {
    let Some(server) = Server::start("budget") else {
        return;
    };
    let mut conn = server.connect();
    let big = summary_named("x", 50, &"n".repeat(150));
    assert!(big.len() > MAX_SUMMARY_BYTES - 1000, "{}", big.len());
    for i in 0..40 {
        publish(&mut conn, &format!("i{i}"), &big);
    }
    let got = read(&mut conn, "nobody");
    assert_eq!(got.count, 40);
    assert!(got.over_budget);
    let bytes: usize = got.entries.iter().map(|e| e.2.len()).sum();
    assert!(
        bytes <= fleet::MAX_READ_BYTES && got.entries.len() < 40,
        "{bytes}"
    );
    // More live entries than a read looks at.
    for i in 0..MAX_READ + 20 {
        publish(&mut conn, &format!("small{i}"), &summary("s", 1));
    }
    let got = read(&mut conn, "nobody");
    assert_eq!(got.count, 40 + MAX_READ + 20);
    assert!(got.entries.len() <= MAX_READ);
}

/// A publish with 100 000 entries planted (past, future, live without a summary, malformed)
/// removes at most [`SWEEP`] past and [`SWEEP`] future ones, and costs about what it costs
/// without them; the read counts and reads only the live ones. (The fleet's cost as a whole,
/// with three instances on a cluster rule, is in `tests/cluster/fleet.rs`.)
#[test]
fn with_100_000_planted_entries_a_publish_and_a_read_stay_cheap() {
    let Some(server) = Server::start("planted") else {
        return;
    };
    let mut conn = server.connect();
    let own = summary("own", 50);
    // Without planted entries: the cost of a publish and a read, as Redis counts it.
    let cost = |conn: &mut Connection| -> f64 {
        let info: String = ::redis::cmd("INFO")
            .arg("commandstats")
            .query(conn)
            .expect("INFO");
        info.lines()
            .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
            .and_then(|l| l.split(',').find_map(|f| f.strip_prefix("usec_per_call=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    for _ in 0..20 {
        publish(&mut conn, "own", &own);
        read(&mut conn, "own");
    }
    let before = cost(&mut conn);
    let _: () = ::redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .expect("RESETSTAT");
    plant(&mut conn, 25_000);
    assert_eq!(zcard(&mut conn), 100_001);
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let start = Instant::now();
        let removed = publish(&mut conn, "own", &own);
        let got = read(&mut conn, "own");
        slowest = slowest.max(start.elapsed());
        assert!(removed <= 2 * SWEEP as i64, "{removed}");
        if round == 0 {
            assert_eq!(
                removed,
                2 * SWEEP as i64,
                "past and future ones, SWEEP each"
            );
        }
        // Live: this one and the planted ones without (or with malformed) summaries, less what
        // the reads removed: never the future ones.
        assert!(got.count <= 50_001, "{}", got.count);
        assert!(got.entries.is_empty(), "no other instance is live");
    }
    let after = cost(&mut conn);
    eprintln!(
        "a publish and a read: {before:.1} µs a call without planted entries, {after:.1} with \
         100 000; slowest pair {slowest:?}"
    );
    assert!(after <= 500.0, "{after} µs a call");
    // Every publish removed its share (the reads removed more: entries without a summary).
    let left = zcard(&mut conn);
    assert!(left <= 100_001 - 20 * 2 * SWEEP as u64, "{left}");
}

/// Redis's own CPU time (user + system), in seconds.
fn redis_cpu(conn: &mut Connection) -> f64 {
    let info: String = ::redis::cmd("INFO").arg("cpu").query(conn).expect("INFO");
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            matches!(k, "used_cpu_user" | "used_cpu_sys").then(|| v.parse::<f64>().ok())?
        })
        .sum()
}

/// A fleet of 1 000 instances, each publishing its summary (50 resources) every
/// [`PUBLISH_EVERY`], and three of them with their view asked for (three pages open), reading
/// once a second: Redis spends at most 5% of one core on it. Measured over one period after a
/// period to fill the index. The figure is in BENCHMARKS.md ("The fleet's list on Redis").
#[test]
fn a_fleet_of_1000_instances_costs_redis_at_most_5_percent_of_a_core() {
    let Some(server) = Server::start("thousand") else {
        return;
    };
    let mut conn = server.connect();
    const N: usize = 1_000;
    const READERS: usize = 3;
    let ids: Vec<String> = (0..N).map(|i| format!("{}-{i:08x}", 10_000 + i)).collect();
    let summaries: Vec<String> = ids.iter().map(|id| summary(id, 50)).collect();
    let scripts = FleetScripts::get();
    let k = keys();
    let secs = PUBLISH_EVERY.as_secs() as usize;
    // One period: every instance publishes once, spread over it; each reader reads once a
    // second.
    let period = |conn: &mut Connection| {
        let start = Instant::now();
        let reads_every = N / (READERS * secs);
        for (i, (id, text)) in ids.iter().zip(&summaries).enumerate() {
            let _: Vec<i64> = scripts
                .publish_call(&k, id, text, LIVE_MS)
                .invoke(conn)
                .expect("publish");
            if i % reads_every == 0 && i / reads_every < READERS * secs {
                let raw: Vec<Value> = scripts
                    .read_call(&k, &ids[i / reads_every % READERS], LIVE_MS)
                    .invoke(conn)
                    .expect("read");
                let read = Read::parse(raw).expect("a read");
                assert!(read.entries.len() >= MAX_READ.min(read.count) - 1);
            }
            let due = start + PUBLISH_EVERY * (i as u32 + 1) / N as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    };
    period(&mut conn);
    let (cpu0, t0) = (redis_cpu(&mut conn), Instant::now());
    period(&mut conn);
    let (cpu1, t1) = (redis_cpu(&mut conn), Instant::now());
    let share = (cpu1 - cpu0) / (t1 - t0).as_secs_f64();
    eprintln!(
        "a fleet of {N} instances (a publish every {PUBLISH_EVERY:?}, {READERS} readers once a \
         second): Redis CPU {:.2}% of a core over {:?}; the index holds {}",
        share * 100.0,
        t1 - t0,
        zcard(&mut conn)
    );
    assert_eq!(zcard(&mut conn), N as u64);
    assert!(share <= 0.05, "{:.2}% of a core", share * 100.0);
}
