//! A system concurrency limit loaded while inbound calls are inside counts them, and their exits
//! give the places back. One test in its own process: the system's count of calls inside, once
//! started by a rule, never stops, so this must be its first start.

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, SystemRule};
use sentinel_runtime::{BlockError, BlockKind, Entry, EntryBuilder};

const R: &str = "sys-seed";

fn inbound() -> Result<Entry, BlockError> {
    EntryBuilder::new(R).inbound().enter()
}

fn blocked_by(r: Result<Entry, BlockError>) -> Option<(BlockKind, String)> {
    r.err()
        .map(|e| (e.kind(), e.reason().unwrap_or_default().to_owned()))
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_system_concurrency_rule_loaded_while_inbound_calls_are_inside_counts_them() {
    crate::own_process::assert_alone();
    let _clock = MockClock::install();
    let before: Vec<Entry> = (0..3).map(|_| inbound().expect("no rule yet")).collect();
    rules::load_system_rules(vec![SystemRule::new().concurrency(3)]).unwrap();
    let system = Some((BlockKind::System, "concurrency".to_owned()));
    assert_eq!(
        blocked_by(inbound()),
        system,
        "3 calls inside when concurrency = 3 was loaded: another call"
    );
    drop(before);
    // Had an exit not given back its place, fewer than 3 would pass now.
    let after: Vec<Entry> = (0..3)
        .map(|i| inbound().unwrap_or_else(|e| panic!("call {i} after all exited: {e}")))
        .collect();
    assert_eq!(blocked_by(inbound()), system, "3 calls inside again");
    drop(after);
    rules::load_system_rules(vec![]).unwrap();
}
