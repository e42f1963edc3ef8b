//! Hardening: a flood of distinct resource names costs bounded memory, and the cap on resources
//! cannot be turned against real resources ("Nothing user-controlled may grow memory without
//! bound").
//!
//! Own test binary, so that the resident set size (VmRSS from /proc/self/status) measured around
//! the flood belongs to the flood alone. The flood is process-wide (it fills the registry's cap
//! for the whole binary), so it runs once, in `flooded()`, which every test calls first and
//! which records its measurements; the tests then check them. After that, every test installs
//! the MockClock: it fixes time and serialises the tests of this binary, which share the
//! process-wide rules, registry and cap. (Call `flooded()` before installing the MockClock: the
//! flood installs it too.)
//!
//! Names: `flood-*` and `cap-*` are created by name without rules (they count against the cap);
//! `defined-*` (the attribute) and `named-*` (mentioned by loaded rules) never do.

use crate::common;
use common::rss_kb;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::registry::{self, DEFAULT_MAX_RESOURCES};
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockError};

/// Distinct names in the flood.
const FLOOD: usize = 1_000_000;
/// Names after which the RSS is read once more: the default cap is full by then, so the names
/// after it only reach the overflow.
const CAP_FILLED_AT: usize = 10_000;
/// The flood may grow the resident set by less than this.
const FLOOD_RSS_LIMIT_KB: u64 = 64 * 1024;

/// Whether a node named `name` counts against the cap (created by name, no rules).
fn is_capped_name(name: &str) -> bool {
    name.starts_with("flood-") || name.starts_with("cap-")
}

/// How many nodes that count against the cap exist now.
fn capped_nodes() -> usize {
    metrics::all()
        .iter()
        .filter(|(name, _)| is_capped_name(name))
        .count()
}

/// What the flood measured.
#[derive(Debug)]
struct Flood {
    /// Nodes in the registry before the flood.
    nodes_before: usize,
    /// Entries of the flood that were admitted (all should be: no rules apply).
    admitted: usize,
    rss_before_kb: u64,
    /// After the first `CAP_FILLED_AT` names (the default cap is full by then).
    rss_cap_filled_kb: u64,
    rss_after_kb: u64,
    flood_time: Duration,
    /// What `metrics::all()` returned right after the flood: entries, and `flood-*` names among
    /// them.
    all_len: usize,
    flood_nodes: usize,
    /// Whether the `flood-*` nodes are exactly `flood-0..flood-{flood_nodes - 1}`.
    first_names_got_the_nodes: bool,
    all_time: Duration,
    /// `metrics::overflow()` at the flood's frozen mock time.
    overflow: metrics::ResourceStats,
}

impl Flood {
    fn rss_growth_kb(&self) -> u64 {
        self.rss_after_kb.saturating_sub(self.rss_before_kb)
    }
}

/// Runs the flood once for the binary (at one frozen mock time, so that every flooded entry is
/// in the overflow's last second) and returns its measurements. Asserts nothing, so that a
/// failure cannot make another test run the flood again.
fn flooded() -> &'static Flood {
    static FLOOD_RESULT: OnceLock<Flood> = OnceLock::new();
    FLOOD_RESULT.get_or_init(|| {
        let _clock = MockClock::install();
        let nodes_before = metrics::all().len();
        let rss_before_kb = rss_kb();
        let started = Instant::now();
        let mut admitted = 0;
        let mut rss_cap_filled_kb = 0;
        for i in 0..FLOOD {
            if i == CAP_FILLED_AT {
                rss_cap_filled_kb = rss_kb();
            }
            let e = entry(&format!("flood-{i}"));
            admitted += usize::from(e.is_ok());
            drop(e);
        }
        let flood_time = started.elapsed();
        let rss_after_kb = rss_kb();

        let started = Instant::now();
        let all = metrics::all();
        let all_time = started.elapsed();
        let flood_names: std::collections::HashSet<&str> = all
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| name.starts_with("flood-"))
            .collect();
        let first_names_got_the_nodes =
            (0..flood_names.len()).all(|i| flood_names.contains(format!("flood-{i}").as_str()));
        let flood = Flood {
            nodes_before,
            admitted,
            rss_before_kb,
            rss_cap_filled_kb,
            rss_after_kb,
            flood_time,
            all_len: all.len(),
            flood_nodes: flood_names.len(),
            first_names_got_the_nodes,
            all_time,
            overflow: metrics::overflow(),
        };
        println!("flood of {FLOOD} distinct names: {flood:?}");
        println!(
            "flood: RSS {} kB -> {} kB after {CAP_FILLED_AT} names (cap full) -> {} kB after \
             {FLOOD}, growth {} kB ({:.1} MB), of which {} kB over the last {} names; flood took \
             {:?}; metrics::all() returned {} entries in {:?}",
            flood.rss_before_kb,
            flood.rss_cap_filled_kb,
            flood.rss_after_kb,
            flood.rss_growth_kb(),
            flood.rss_growth_kb() as f64 / 1024.0,
            flood.rss_after_kb.saturating_sub(flood.rss_cap_filled_kb),
            FLOOD - CAP_FILLED_AT,
            flood.flood_time,
            flood.all_len,
            flood.all_time
        );
        flood
    })
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_million_distinct_names_grow_rss_by_less_than_64_mb() {
    crate::own_process::assert_alone();
    let flood = flooded();
    let growth = flood.rss_growth_kb();
    println!(
        "RSS growth over {FLOOD} names: {growth} kB ({:.1} MB; limit {} MB)",
        growth as f64 / 1024.0,
        FLOOD_RSS_LIMIT_KB / 1024
    );
    assert!(
        growth < FLOOD_RSS_LIMIT_KB,
        "{FLOOD} distinct names through entry() grew RSS by {growth} kB ({:.1} MB; \
         {} kB -> {} kB), limit {} MB",
        growth as f64 / 1024.0,
        flood.rss_before_kb,
        flood.rss_after_kb,
        FLOOD_RSS_LIMIT_KB / 1024
    );
    assert_eq!(
        flood.admitted, FLOOD,
        "every flooded entry passes (no rules apply to them)"
    );
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn after_the_flood_all_lists_at_most_the_cap_and_overflow_counts_the_rest() {
    crate::own_process::assert_alone();
    let flood = flooded();
    println!(
        "metrics::all() after the flood: {} entries ({} flood names) in {:?}; \
         overflow: {:?}",
        flood.all_len, flood.flood_nodes, flood.all_time, flood.overflow
    );
    assert_eq!(
        flood.nodes_before, 0,
        "no node exists before the flood: {flood:?}"
    );
    assert_eq!(
        flood.flood_nodes, DEFAULT_MAX_RESOURCES,
        "the flood fills the cap exactly: {flood:?}"
    );
    assert!(
        flood.first_names_got_the_nodes,
        "the first {} names got the nodes: {flood:?}",
        flood.flood_nodes
    );
    assert_eq!(
        flood.all_len, flood.flood_nodes,
        "metrics::all() lists the flood's nodes and nothing else: {flood:?}"
    );
    let expected = (FLOOD - flood.flood_nodes) as f64;
    assert_eq!(
        flood.overflow.pass_qps, expected,
        "the overflow's last second (all {FLOOD} entries at one frozen mock time) counts the \
         {FLOOD} flooded entries minus the {} that got a node: {:?}",
        flood.flood_nodes, flood.overflow
    );
    assert_eq!(flood.overflow.block_qps, 0.0, "{:?}", flood.overflow);
    assert_eq!(
        flood.overflow.complete_qps, expected,
        "every overflow entry was dropped: {:?}",
        flood.overflow
    );
    assert_eq!(flood.overflow.concurrency, 0, "{:?}", flood.overflow);
}

#[sentinel_runtime::sentinel(resource = "defined-after-flood", qps = 2, fallback = defined_busy)]
fn defined_after_flood() -> bool {
    true
}

fn defined_busy(_err: BlockError) -> bool {
    false
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn after_the_flood_defined_and_rule_named_resources_get_their_node_and_rules() {
    crate::own_process::assert_alone();
    const NAMED: &str = "named-after-flood";
    const DEFINED: &str = "defined-after-flood";
    flooded();
    let _clock = MockClock::install();
    assert!(
        capped_nodes() >= registry::max_resources(),
        "the cap is full: {} capped nodes, cap {}",
        capped_nodes(),
        registry::max_resources()
    );
    let unnamed = entry("cap-unnamed-after-flood").map(drop);
    assert!(unnamed.is_ok(), "an overflow entry passes: {unnamed:?}");
    assert!(
        metrics::snapshot("cap-unnamed-after-flood").is_none(),
        "a new name without rules gets no node once the cap is full"
    );

    // The attribute's resource: its default rule qps = 2 applies, at a frozen time.
    let calls: Vec<bool> = (0..5).map(|_| defined_after_flood()).collect();
    assert_eq!(
        calls,
        [true, true, false, false, false],
        "`{DEFINED}` (qps = 2) after the flood filled the cap, 5 calls at one frozen mock time"
    );
    let s = metrics::snapshot(DEFINED).expect("the attribute's resource has its own node");
    assert_eq!((s.pass_qps, s.block_qps), (2.0, 3.0), "{DEFINED}: {s:?}");

    // A name that loaded rules mention; its entries before the rules were loaded went to the
    // overflow (the cap was full), which must not keep it from its node once they are.
    drop(entry(NAMED).expect("no rules yet: an overflow entry"));
    assert!(
        metrics::snapshot(NAMED).is_none(),
        "`{NAMED}` before its rules are loaded: no node (the cap is full)"
    );
    rules::load_flow_rules(vec![FlowRule::qps(NAMED, 3.0)]).unwrap();
    let entries: Vec<_> = (0..6).map(|_| entry(NAMED)).collect();
    let passed: Vec<bool> = entries.iter().map(Result::is_ok).collect();
    drop(entries);
    assert_eq!(
        passed,
        [true, true, true, false, false, false],
        "`{NAMED}` (loaded qps = 3) after the flood filled the cap, 6 calls held at once at one \
         frozen mock time"
    );
    let s = metrics::snapshot(NAMED).expect("a rule-named resource has its own node");
    assert_eq!((s.pass_qps, s.block_qps), (3.0, 3.0), "{NAMED}: {s:?}");
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn lowering_and_raising_the_cap_works_as_documented() {
    crate::own_process::assert_alone();
    flooded();
    let clock = MockClock::install();
    let overflow_before = metrics::overflow().pass_qps;
    assert_eq!(
        overflow_before, 0.0,
        "a fresh mock hour: the overflow's window is empty"
    );
    let existing = "flood-0";
    assert!(
        metrics::snapshot(existing).is_some(),
        "{existing} has a node"
    );

    // Lowered below the nodes already created: those stay, new names are refused, rule-named
    // names still get theirs.
    registry::set_max_resources(10);
    assert_eq!(registry::max_resources(), 10);
    for _ in 0..4 {
        drop(entry(existing).expect("no rules on the flood's nodes"));
    }
    let s = metrics::snapshot(existing).expect("kept after lowering the cap");
    assert_eq!(
        s.pass_qps, 4.0,
        "{existing}'s entries still count in its own node after lowering the cap to 10: {s:?}"
    );
    drop(entry("cap-lowered-new").expect("overflow entries pass"));
    assert!(
        metrics::snapshot("cap-lowered-new").is_none(),
        "cap lowered to 10 below {} nodes: a new name gets no node",
        capped_nodes()
    );
    assert_eq!(metrics::overflow().pass_qps, 1.0, "counted in the overflow");

    registry::set_max_resources(0);
    assert_eq!(registry::max_resources(), 0);
    rules::load_flow_rules(vec![FlowRule::qps("named-at-cap-zero", 1.0)]).unwrap();
    let passed: Vec<bool> = {
        let entries: Vec<_> = (0..3).map(|_| entry("named-at-cap-zero")).collect();
        entries.iter().map(Result::is_ok).collect()
    };
    assert_eq!(
        passed,
        [true, false, false],
        "cap 0: a rule-named resource still gets its node and its rule (qps = 1)"
    );
    assert!(metrics::snapshot("named-at-cap-zero").is_some());
    rules::load_flow_rules(vec![]).unwrap();

    // Raised: exactly as many new names as the new room get a node.
    let created = capped_nodes();
    registry::set_max_resources(created + 3);
    assert_eq!(registry::max_resources(), created + 3);
    let got_node: Vec<bool> = (0..5)
        .map(|i| {
            let name = format!("cap-raised-{i}");
            drop(entry(&name).expect("no rules"));
            metrics::snapshot(&name).is_some()
        })
        .collect();
    assert_eq!(
        got_node,
        [true, true, true, false, false],
        "cap raised from {created} created nodes to {}: which of 5 new names got a node",
        created + 3
    );
    assert_eq!(capped_nodes(), created + 3);
    assert_eq!(
        metrics::overflow().pass_qps,
        3.0,
        "the 2 refused names joined the overflow (1 before)"
    );

    registry::set_max_resources(DEFAULT_MAX_RESOURCES);
    assert_eq!(registry::max_resources(), DEFAULT_MAX_RESOURCES);
    drop(entry("cap-after-restore").expect("overflow entries pass"));
    assert!(
        metrics::snapshot("cap-after-restore").is_none(),
        "back to the default cap, still full ({} created)",
        capped_nodes()
    );
    clock.advance(Duration::from_secs(2));
}
