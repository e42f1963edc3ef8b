//! A client floods a hotspot rule with new values: `cargo run --release --example hotspot_flood`
//! (a few seconds; time is a mock clock, so nothing sleeps).
//!
//! 1. The attack: `HotspotRule::qps("login", 0, 1.0).window(10 s)` at the default capacity;
//!    100 000 junk user names a second, and "admin" every 10 ms, for 10 s. A value the full
//!    table forgets while it still owes time comes back owing it, so "admin" passes once.
//! 2. The price: new values (each called once, so none is over its limit) arriving while
//!    `k x capacity` values owe time at once; the share held back because the sketch of
//!    forgotten debts answers for them with a later time owed by others, for k = 1, 2, 10, 100.

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, HotspotRule, DEFAULT_HOTSPOT_CAPACITY};
use sentinel_runtime::EntryBuilder;

fn passes(resource: &str, value: &(impl std::hash::Hash + ?Sized)) -> bool {
    EntryBuilder::new(resource).param(value).enter().is_ok()
}

fn attack(clock: &MockClock) {
    let resource = "login";
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(resource, 0, 1.0).window(Duration::from_secs(10))
    ])
    .expect("a valid rule");
    let (mut junk, mut junk_passed, mut admin) = (0u64, 0u64, Vec::new());
    for tick in 0..1_000u64 {
        for _ in 0..1_000 {
            junk += 1;
            junk_passed += u64::from(passes(resource, &junk));
        }
        if passes(resource, "admin") {
            admin.push(tick * 10);
        }
        clock.advance(Duration::from_millis(10));
    }
    println!(
        "attack: \"admin\" passed {} time(s) in 10 s (at ms {admin:?}); {junk_passed} of {junk} \
         junk names passed; sentinel_hotspot_live_evictions_total{{resource=\"login\"}} {}",
        admin.len(),
        metrics::hotspot_live_evictions(resource).unwrap_or(0)
    );
}

/// New values at a pace that keeps `live` of them owing time at once (a rule of 1 per 10 s,
/// so `live` per 10 s), two windows to settle, then a third measured.
fn held_back(clock: &MockClock, times: u64) {
    let resource = format!("flood-{times}x");
    let window = Duration::from_secs(10);
    rules::load_hotspot_rules(vec![HotspotRule::qps(&*resource, 0, 1.0).window(window)])
        .expect("a valid rule");
    let live = times * DEFAULT_HOTSPOT_CAPACITY as u64;
    // Arrivals in ticks of 1 ms, `live / 10 000` values each.
    let per_tick = live / 10_000;
    let (mut value, mut measured, mut blocked) = (0u64, 0u64, 0u64);
    let mut evicted_before = 0;
    for tick in 0..30_000u64 {
        if tick == 20_000 {
            evicted_before = metrics::hotspot_live_evictions(&resource).unwrap_or(0);
        }
        for _ in 0..per_tick {
            value += 1;
            let passed = passes(&resource, &(times, value));
            if tick >= 20_000 {
                measured += 1;
                blocked += u64::from(!passed);
            }
        }
        clock.advance(Duration::from_millis(1));
    }
    let evicted = metrics::hotspot_live_evictions(&resource).unwrap_or(0);
    println!(
        "{times:>3}x the capacity ({live} values owing at once): {:6.2}% of new values held back; \
         live evictions in the measured window {} ({:.3} a value), \
         sentinel_hotspot_live_evictions_total {evicted}",
        100.0 * blocked as f64 / measured as f64,
        evicted - evicted_before,
        (evicted - evicted_before) as f64 / measured as f64,
    );
}

fn main() {
    let clock = MockClock::install();
    attack(&clock);
    println!(
        "\nnew values held back (rule: 1 per 10 s, capacity {DEFAULT_HOTSPOT_CAPACITY}; each \
         value called once):"
    );
    for times in [1, 2, 10, 100] {
        held_back(&clock, times);
    }
    rules::load_hotspot_rules(vec![]).expect("no rules");
}
