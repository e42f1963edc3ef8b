//! Hardening: rule reloads retire what they replace ("Nothing user-controlled may grow memory
//! without bound": retired rule objects after reloads).
//!
//! Own test binary, so that the resident set size (VmRSS from /proc/self/status) measured around
//! the reloads belongs to them alone. The test installs the MockClock (entries on a throttled
//! resource move it forward instead of sleeping) and unloads the rules it loaded.

use crate::common;
use common::rss_kb;
use std::time::{Duration, Instant};

use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind, Entry};

const RESOURCES: [&str; 3] = ["hrm-a", "hrm-b", "hrm-c"];
/// Reloads in all: even ones load flow rules, odd ones circuit-breaker rules.
const RELOADS: usize = 100_000;
/// Reloads before the first RSS reading: the allocator's pools, the nodes' per-thread shards and
/// minute windows, and the registry have reached their steady size by then.
const WARM_UP: usize = 5_000;
/// Reloads in each of the two timed samples (the first and the last).
const TIMED: usize = 10_000;
/// The reloads after the warm-up may grow the resident set by less than this.
const RSS_LIMIT_KB: u64 = 16 * 1024;

/// The flow rule of reload `i` on resource number `k`: its shape cycles through the window
/// modes and control behaviours (each new shape needs a new gate), its threshold changes on
/// every reload.
fn flow_rule(i: usize, k: usize) -> FlowRule {
    let r = RESOURCES[k];
    let t = 5.0 + ((i / 2 + 7 * k) % 41) as f64;
    match (i / 2 + k) % 8 {
        0 => FlowRule::qps(r, t),
        1 => FlowRule::qps(r, t).window(Duration::from_millis(500), 5),
        2 => FlowRule::qps(r, t).strict(true),
        3 => FlowRule::qps(r, t)
            .window(Duration::from_millis(10), 10)
            .strict(true),
        4 => FlowRule::qps(r, t).warm_up(Duration::from_secs(2), 3.0),
        5 => FlowRule::qps(r, t).throttle(Duration::from_millis(5)),
        6 => FlowRule::concurrency(r, 1 + (i % 3) as u32),
        // With a concurrency limit beside it on the first resource (see `reload`).
        _ => FlowRule::qps(r, t).window(Duration::from_secs(2), 20),
    }
}

/// The circuit-breaker rules of reload `i` on resource number `k`, with changing thresholds.
fn breaker_rules(i: usize, k: usize) -> Vec<CircuitBreakerRule> {
    let r = RESOURCES[k];
    let recovery = Duration::from_millis(50 + (i % 5) as u64 * 10);
    let n = i / 2 + k;
    let first = match n % 3 {
        0 => CircuitBreakerRule::error_count(r, 1 + (n % 7) as u32),
        1 => CircuitBreakerRule::error_ratio(r, 0.1 * (n % 10) as f64),
        _ => CircuitBreakerRule::slow_request_ratio(r, Duration::from_millis(1), 0.5),
    }
    .min_requests(1 + (n % 4) as u32)
    .recovery(recovery);
    match n % 5 {
        // Sometimes a second breaker beside the first.
        0 => {
            let second = CircuitBreakerRule::error_count(r, 2 + (n % 3) as u32)
                .window(Duration::from_millis(200), 4)
                .recovery(recovery);
            vec![first, second]
        }
        _ => vec![first],
    }
}

/// Reload `i`: circuit-breaker rules on odd reloads, flow rules on even ones, for every
/// resource. Returns how long the load call took.
fn reload(i: usize) -> Duration {
    if i % 2 == 1 {
        let set: Vec<CircuitBreakerRule> = (0..RESOURCES.len())
            .flat_map(|k| breaker_rules(i, k))
            .collect();
        let started = Instant::now();
        rules::load_circuit_breaker_rules(set).expect("valid circuit-breaker rules");
        started.elapsed()
    } else {
        let mut set: Vec<FlowRule> = (0..RESOURCES.len()).map(|k| flow_rule(i, k)).collect();
        if (i / 2) % 8 == 7 {
            set.push(FlowRule::concurrency(RESOURCES[0], 2));
        }
        let started = Instant::now();
        rules::load_flow_rules(set).expect("valid flow rules");
        started.elapsed()
    }
}

fn mean_us(total: Duration, n: usize) -> f64 {
    total.as_secs_f64() * 1e6 / n as f64
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_hundred_thousand_reloads_grow_rss_by_less_than_16_mb_and_do_not_slow_down() {
    crate::own_process::assert_alone();
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    let started = Instant::now();
    let mut first_timed = Duration::ZERO;
    let mut last_timed = Duration::ZERO;
    let mut passes = 0u64;
    // Blocks by kind: flow (QPS), concurrency, circuit breaker.
    let mut blocks = [0u64; 3];
    let mut rss_after_warm_up = 0;
    let mut rss_trace = Vec::new();
    // One entry per resource held across the next reload (the reload must not forget it, nor
    // keep what it replaces alive for longer than the entry's call).
    let mut held: Vec<Entry> = Vec::new();
    for i in 0..RELOADS {
        if i == WARM_UP {
            rss_after_warm_up = rss_kb();
        }
        if i % 10_000 == 0 {
            rss_trace.push((i, rss_kb()));
        }
        let took = reload(i);
        if i < TIMED {
            first_timed += took;
        } else if i >= RELOADS - TIMED {
            last_timed += took;
        }
        held.clear();
        for (k, r) in RESOURCES.iter().enumerate() {
            for call in 0..3 {
                match entry(r) {
                    Ok(e) => {
                        passes += 1;
                        if (i + k + call) % 4 == 0 {
                            e.set_error();
                        }
                        if call == 0 {
                            held.push(e);
                        }
                    }
                    Err(e) => match e.kind() {
                        BlockKind::Flow => blocks[0] += 1,
                        BlockKind::Concurrency => blocks[1] += 1,
                        BlockKind::CircuitBreaker => blocks[2] += 1,
                        other => panic!("no custom slots here, yet blocked by {other:?}"),
                    },
                }
            }
        }
        clock.advance(Duration::from_millis(1));
    }
    drop(held);
    let rss_end = rss_kb();
    rss_trace.push((RELOADS, rss_end));
    let wall = started.elapsed();
    let growth = rss_end.saturating_sub(rss_after_warm_up);
    let (first_us, last_us) = (mean_us(first_timed, TIMED), mean_us(last_timed, TIMED));
    let report = format!(
        "{RELOADS} reloads on {RESOURCES:?} over {} s of mock time, {wall:?} of wall time; \
         entries between reloads: {passes} passed, blocked (flow, concurrency, circuit breaker) \
         {blocks:?}; RSS after {WARM_UP} \
         reloads {rss_after_warm_up} kB, at the end {rss_end} kB: growth {growth} kB \
         ({:.2} MB); RSS (reload, kB): {rss_trace:?}; mean time per reload: first {TIMED} \
         {first_us:.2} us, last {TIMED} {last_us:.2} us (ratio {:.2})",
        (clock::now_nanos() - t0) / 1_000_000_000,
        growth as f64 / 1024.0,
        last_us / first_us
    );
    println!("{report}");
    for r in RESOURCES {
        let s = metrics::snapshot(r).expect("resource has a node");
        assert_eq!(s.concurrency, 0, "{r}: every entry exited: {s:?}");
    }
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();

    assert!(
        passes > 0 && blocks.iter().all(|&b| b > 0),
        "the rules admitted calls and every kind blocked some: {report}"
    );
    assert!(
        growth < RSS_LIMIT_KB,
        "RSS grew by {growth} kB ({:.2} MB) over reloads {WARM_UP}..{RELOADS}, limit {} MB: \
         {report}",
        growth as f64 / 1024.0,
        RSS_LIMIT_KB / 1024
    );
    // Coarse wall-clock timings of a debug build on a shared machine, not a benchmark: the bound
    // is loose on purpose. A reload whose cost grew with the number of reloads before it (a
    // list of retired rules walked on every reload, say) would exceed it by far.
    assert!(
        last_us <= 3.0 * first_us,
        "the mean time per reload grew more than 3x from the first {TIMED} to the last {TIMED}: \
         {report}"
    );
}
