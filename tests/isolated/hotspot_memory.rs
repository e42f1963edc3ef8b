//! Ten million distinct values through one hotspot rule of capacity 100 000: memory stays
//! bounded (the table is allocated once), and the rule keeps limiting. Its own test binary, so
//! the process's RSS is this test's.

use crate::common;
use common::rss_kb;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::{BlockKind, EntryBuilder};

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn ten_million_values_stay_within_the_table() {
    crate::own_process::assert_alone();
    const VALUES: u64 = 10_000_000;
    let clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-flood", 0, 1.0).capacity(100_000)])
        .unwrap();
    // The first call builds the node and allocates the table.
    drop(EntryBuilder::new("hot-flood").param(&u64::MAX).enter());
    let before = rss_kb();
    let mut passed = 0u64;
    for v in 0..VALUES {
        // 20 calls per ms: a value is limited for 1 s after its call, so about 20 000 values
        // are live at any time (a fifth of the table): the table forgets idle values and never
        // needs to forget a live one.
        if v % 20 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        passed += u64::from(EntryBuilder::new("hot-flood").param(&v).enter().is_ok());
    }
    let grown_kb = rss_kb().saturating_sub(before);
    println!("10M values: RSS grew by {grown_kb} kB; {passed} passed");
    assert_eq!(passed, VALUES, "every new value has its own limit of 1");
    assert!(
        grown_kb < 16 * 1024,
        "RSS grew by {grown_kb} kB over 10M distinct values (table capacity 100 000)"
    );
    // Still limiting: a value seen just now is blocked, and nothing live was forgotten.
    let last = VALUES - 1;
    let err = EntryBuilder::new("hot-flood")
        .param(&last)
        .enter()
        .unwrap_err();
    assert_eq!(err.kind(), BlockKind::HotParam);
    assert_eq!(
        sentinel_runtime::metrics::hotspot_live_evictions("hot-flood"),
        Some(0)
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}
