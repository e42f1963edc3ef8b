//! Several functions guarded with the same `resource` name: every definition's rules apply to
//! every call of the resource (before, the first function called silently won).

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError};

#[sentinel(resource = "shared-orders", qps = 3, fallback = busy)]
fn place(id: u32) -> Option<u32> {
    Some(id)
}

#[sentinel(resource = "shared-orders", qps = 5, fallback = busy)]
fn amend(id: u32) -> Option<u32> {
    Some(id)
}

fn busy(_: u32, _: BlockError) -> Option<u32> {
    None
}

#[test]
fn every_definition_of_a_shared_resource_applies_to_every_call() {
    let _clock = MockClock::install();
    // The 5-per-second definition is called first; the 3-per-second one joins at its first call.
    assert_eq!(amend(1), Some(1));
    assert_eq!(place(2), Some(2));
    let mut passed = 2;
    for i in 0..10 {
        passed += u32::from(amend(i).is_some());
        passed += u32::from(place(i).is_some());
    }
    assert_eq!(
        passed, 3,
        "both rules apply to both functions: the tighter (3 per second) wins"
    );
    let stats = metrics::snapshot("shared-orders").unwrap();
    assert_eq!((stats.pass_qps, stats.block_qps), (3.0, 19.0));
}
