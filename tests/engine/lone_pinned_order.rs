//! A reload is seen in order by a thread: once one of its calls was checked against the new
//! rules, its later calls are too (until the next reload), whether they read the node's chain
//! or the lone QPS gate the node keeps pinned.
//!
//! The rules flip between one lone QPS rule that admits everything (its gate pinned) and the
//! same rule with a second one beside it that blocks everything (the first rule keeps its gate,
//! so the node's pins are never used up). A system rule that never blocks is in force, so an
//! inbound call reads the chain while an outbound call may take the pinned gate. An observer
//! calls inbound while the rules shut; once such a call is blocked, it calls outbound: that
//! call must be blocked too (the next reload, which opens again, waits for the observer).

use crate::reload_rounds;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule, SystemRule};

/// At most this many rounds; the first stale call ends the test.
const ROUNDS: usize = 5_000;

const R: &str = "pinned-order";

#[test]
fn after_a_call_saw_the_new_rules_a_later_call_of_its_thread_does_not_see_the_old_gate() {
    let _clock = MockClock::install();
    rules::load_system_rules(vec![SystemRule::new().concurrency(1_000_000)]).unwrap();
    let stale_in = reload_rounds::first_stale_round(
        ROUNDS,
        || rules::load_flow_rules(vec![FlowRule::qps(R, 1e9)]).unwrap(),
        || rules::load_flow_rules(vec![FlowRule::qps(R, 1e9), FlowRule::qps(R, 0.0)]).unwrap(),
        || reload_rounds::outbound_passes_after_inbound_blocked(R),
    );
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(
        stale_in, None,
        "a call admitted by the replaced lone gate after a call of the same thread was \
         blocked by the rules that replaced it"
    );
}
