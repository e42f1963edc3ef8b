//! The guarded call of a cluster rule with a live lease, beside a local QPS rule's guarded call,
//! and the Redis calls per admitted call at 10 000 calls/s on one instance. Needs `redis-server`
//! on PATH (started on a free loopback port, killed at the end); without it only the local case
//! runs.
//!
//! `cargo bench -p sentinel-benches --bench cluster_lease`

use std::hint::black_box;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use sentinel_runtime::cluster::{Cluster, ClusterThreshold};
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, sentinel, BlockError};

#[inline(never)]
#[sentinel(resource = "bench-local-qps", fallback = busy)]
fn local_rule(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

#[inline(never)]
#[sentinel(resource = "bench-cluster-qps", fallback = busy)]
fn cluster_rule(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

fn busy(_: u64, _: u64, _: BlockError) -> u64 {
    0
}

/// A redis-server on a free loopback port, killed on drop.
struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> Option<Redis> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .ok()?;
    let redis = Redis(child, port);
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(redis)
}

/// Offers 10 000 calls/s for 3 s to a global rule of 10 000/s; prints the Redis calls (leases
/// and heartbeats) per admitted call.
fn redis_calls_per_admitted_call() {
    rules::load_flow_rules(vec![
        FlowRule::qps("bench-ratio", 10_000.0).cluster(ClusterThreshold::Global)
    ])
    .expect("rule");
    let before = metrics::cluster();
    let start = Instant::now();
    let (mut offered, mut admitted) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(3) {
        let due = (start.elapsed().as_secs_f64() * 10_000.0) as u64;
        while offered < due {
            offered += 1;
            if entry("bench-ratio").is_ok() {
                admitted += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let after = metrics::cluster();
    let calls = after.redis_calls - before.redis_calls;
    let leases = after.leases_taken - before.leases_taken;
    println!(
        "10 000/s offered for 3 s to a global rule of 10 000/s: {admitted} admitted of {offered}, \
         {calls} Redis calls ({leases} leases, the rest heartbeats): {:.5} Redis calls per \
         admitted call (1 per {:.0})",
        calls as f64 / admitted as f64,
        admitted as f64 / calls as f64
    );
}

fn bench(c: &mut Criterion) {
    let server = redis();
    let cluster = server.as_ref().and_then(|r| {
        Cluster::redis(format!("redis://127.0.0.1:{}", r.1))
            .namespace("bench")
            .start()
            .ok()
    });
    if cluster.is_none() {
        println!(
            "redis-server not on PATH (apt-get install redis-server): the cluster case is skipped"
        );
    }
    rules::load_flow_rules(vec![
        FlowRule::qps("bench-local-qps", 100_000_000.0),
        FlowRule::qps("bench-cluster-qps", 100_000_000.0).cluster(ClusterThreshold::Global),
    ])
    .expect("rules");
    let mut g = c.benchmark_group("cluster_lease");
    g.bench_function("local QPS rule: guarded call", |b| {
        b.iter(|| local_rule(black_box(3), black_box(4)))
    });
    if cluster.is_some() {
        g.bench_function("cluster QPS rule, live lease: guarded call", |b| {
            b.iter(|| cluster_rule(black_box(3), black_box(4)))
        });
    }
    g.finish();
    if cluster.is_some() {
        redis_calls_per_admitted_call();
    }
    drop(cluster);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
