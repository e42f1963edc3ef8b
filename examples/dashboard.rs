//! The live dashboard over a small simulated service: `cargo run -p sentinel-integration --example dashboard`.
//!
//! Four resources get traffic from a few threads: `orders` (a QPS limit it sometimes exceeds),
//! `search` (busy, unlimited), `payments` (flaky: its errors open a circuit breaker, which
//! recovers and opens again), `profile` (a per-user limit: one heavy user is held to 5 a
//! second). The dashboard's URL (with its token) is printed; open it in a browser. Rule edits
//! made on the page are saved to `dashboard-rules.yaml` in the system's temporary directory.
//! Runs until Ctrl-C (or for `--seconds N`).
//!
//! `SENTINEL_DASHBOARD_ADDR=127.0.0.1:9000` chooses the address (default `127.0.0.1:8719`, or
//! any free port if that one is taken).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule, RuleSet};
use sentinel_runtime::{entry, EntryBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: Option<u64> = std::env::args()
        .skip_while(|a| a != "--seconds")
        .nth(1)
        .and_then(|n| n.parse().ok());

    let mut set = RuleSet::default();
    set.flow.push(FlowRule::qps("orders", 40.0));
    set.flow.push(FlowRule::concurrency("search", 20));
    set.circuit_breaker.push(
        CircuitBreakerRule::error_ratio("payments", 0.5)
            .min_requests(5)
            .recovery(Duration::from_secs(5)),
    );
    set.hotspot.push(HotspotRule::qps("profile", 0, 5.0));
    rules::load(set)?;

    let addr: SocketAddr = match std::env::var("SENTINEL_DASHBOARD_ADDR") {
        Ok(a) => a.parse()?,
        Err(_) => "127.0.0.1:8719".parse()?,
    };
    let rules_file = std::env::temp_dir().join("dashboard-rules.yaml");
    let dash = match Dashboard::new().bind(addr).rules_file(&rules_file).start() {
        Ok(dash) => dash,
        // The default port is taken (another dashboard?): any free one.
        Err(_) if std::env::var("SENTINEL_DASHBOARD_ADDR").is_err() => Dashboard::new()
            .bind("127.0.0.1:0".parse()?)
            .rules_file(&rules_file)
            .start()?,
        Err(e) => return Err(e.into()),
    };
    println!("dashboard: {}", dash.url());
    println!("rule edits are saved to {}", rules_file.display());
    println!("simulating traffic; Ctrl-C to stop");

    let start = Instant::now();
    let workers: Vec<_> = (0..3u64)
        .map(|w| std::thread::spawn(move || simulate(w, start, seconds)))
        .collect();
    for w in workers {
        let _ = w.join();
    }
    drop(dash);
    Ok(())
}

/// One worker's traffic: every few milliseconds a call to each resource, in waves.
fn simulate(worker: u64, start: Instant, seconds: Option<u64>) {
    let mut i: u64 = worker;
    loop {
        let t = start.elapsed().as_secs_f64();
        if seconds.is_some_and(|s| t >= s as f64) {
            return;
        }
        i += 1;
        // orders: a wave between ~20 and ~60 calls a second over the three workers.
        let wave = 40.0 + 20.0 * (t / 15.0).sin();
        std::thread::sleep(Duration::from_micros((3_000_000.0 / wave) as u64));
        if let Ok(e) = entry("orders") {
            std::thread::sleep(Duration::from_millis(1 + i % 4));
            drop(e);
        }
        if let Ok(e) = entry("search") {
            if i.is_multiple_of(50) {
                e.set_error();
            }
        }
        // payments: healthy for 20 s, then failing for 10 s, in cycles.
        if i.is_multiple_of(3) {
            if let Ok(e) = entry("payments") {
                let failing = (t as u64 % 30) >= 20;
                if failing && !i.is_multiple_of(4) {
                    e.set_error();
                }
            }
        }
        // profile: user 7 calls often, the others now and then.
        let user = if i.is_multiple_of(2) { 7 } else { i % 100 };
        drop(EntryBuilder::new("profile").param(&user).enter());
    }
}
