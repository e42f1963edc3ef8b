//! A flood of new values must not reset a limited value's hotspot limit: a value forgotten by
//! its full table while it still owes time comes back owing it. Time from the MockClock
//! (installing it also serialises these tests).

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::{metrics, EntryBuilder};

/// The attack: `HotspotRule::qps("login", 0, 1.0).window(10 s)` at the default capacity; every
/// 10 ms of mock time the client sends 1 000 new junk names (100 000 a second) and then tries
/// "admin", for 10 s. The table fills with junk that owes 10 s each, and forgets the live value
/// with the least debt, which is "admin", first: a re-entering value must come back owing what
/// it owed.
#[test]
fn a_junk_flood_does_not_reset_a_limited_value() {
    let clock = MockClock::install();
    const RESOURCE: &str = "hot-flood-login";
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(RESOURCE, 0, 1.0).window(Duration::from_secs(10))
    ])
    .unwrap();
    let mut junk = 0u64;
    let mut admin_passes = Vec::new();
    for tick in 0..1_000u64 {
        for _ in 0..1_000 {
            junk += 1;
            let _ = EntryBuilder::new(RESOURCE).param(&junk).enter();
        }
        if EntryBuilder::new(RESOURCE).param("admin").enter().is_ok() {
            admin_passes.push(tick * 10);
        }
        clock.advance(Duration::from_millis(10));
    }
    let evicted = metrics::hotspot_live_evictions(RESOURCE).unwrap();
    eprintln!(
        "admin passed {} times in 10 s (at ms {admin_passes:?}); {junk} junk calls; \
         sentinel_hotspot_live_evictions_total {evicted}",
        admin_passes.len()
    );
    assert!(
        admin_passes.len() <= 2,
        "1 per 10 s: admin passed {} times in 10 s, at ms {admin_passes:?}",
        admin_passes.len()
    );
    assert!(
        evicted > 0,
        "the flood fills the table: live values are forgotten"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}
