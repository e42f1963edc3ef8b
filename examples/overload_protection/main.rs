//! An adaptive concurrency limit following a downstream whose latency rises and falls.
//!
//! ```text
//! cargo run --example overload_protection
//! ```
//!
//! A simulated downstream (40 workers, a queue in front) is called by clients offering 6 000
//! calls a second, more than it can take. Its service time is 10 ms, then 25 ms from 6 s to
//! 14 s, then 10 ms again. Every call enters `downstream` under
//! `FlowRule::adaptive_concurrency` (the default settings), and exits when the downstream
//! finishes it. Time is simulated with the mock clock, so the run takes a second or two and
//! prints the same figures every time: the limit every half second with the goodput and the
//! latency the callers saw, every probe of the minimum RTT, and the figures of each phase
//! (`tests/engine/adaptive_overload.rs` asserts them).

mod sim;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AdaptiveConcurrency, FlowRule};
use sentinel_runtime::RuleError;

use sim::{service_time, MS, SECOND};

/// The phases measured: settled before, during and (from 10 s) after the spike.
pub const PHASES: [(u64, u64); 3] = [
    (2 * SECOND, 6 * SECOND),
    (9 * SECOND, 14 * SECOND),
    (24 * SECOND, 40 * SECOND),
];

fn main() -> Result<(), RuleError> {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency("downstream")])?;
    let probe_limit = u64::from(AdaptiveConcurrency::default().probe_limit);
    let mut stretches: Vec<(u64, u64)> = (0..80)
        .map(|i| (i * SECOND / 2, (i + 1) * SECOND / 2))
        .collect();
    stretches.extend(PHASES);
    let run = sim::run(
        &sim::Scenario::SPIKE,
        "downstream",
        &clock,
        40,
        &stretches,
        probe_limit,
    );
    rules::load_flow_rules(vec![])?;

    println!(" time  service  limit  goodput/s  latency  refused/s  pinned");
    for f in &run.stretches[..80] {
        println!(
            "{:>4.1}s  {:>5} ms  {:>5}  {:>9.0}  {:>5.1} ms  {:>9.0}  {:>3} ms  {}",
            f.to as f64 / 1e9,
            f.service / MS,
            f.last_limit,
            f.goodput(),
            f.latency() / MS as f64,
            f.refused as f64 / f.seconds(),
            f.pinned_ms,
            "#".repeat((f.last_limit / 4) as usize)
        );
    }
    println!("\nprobes of the minimum RTT (the limit pinned at {probe_limit}):");
    for p in &run.probes {
        println!(
            "  at {:>5.2} s ({:>2} ms service): {:>3} ms, min RTT {:.1} ms",
            p.start as f64 / 1e9,
            service_time(p.start) / MS,
            p.length / MS,
            p.min_rtt.as_secs_f64() * 1e3
        );
    }
    println!("\n| phase | service time | capacity | goodput | latency | highest limit |");
    println!("|---|---|---|---|---|---|");
    for f in &run.stretches[80..] {
        println!(
            "| {}-{} s | {} ms | {:.0}/s | {:.0}/s ({:.1}%) | {:.1} ms ({:.2}x) | {} |",
            f.from / SECOND,
            f.to / SECOND,
            f.service / MS,
            f.capacity,
            f.goodput(),
            100.0 * f.goodput() / f.capacity,
            f.latency() / MS as f64,
            f.latency() / f.service as f64,
            f.highest_limit
        );
    }
    Ok(())
}
