//! A user's check slot runs at its order, and a block after the flow check cancels the flow
//! check's reservation. Own test binary: registering a slot is process-wide.

use std::sync::atomic::{AtomicU32, Ordering};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::slot::{register_check_slot, CheckSlot, SlotContext, FLOW_SLOT_ORDER};
use sentinel_runtime::{entry, metrics, BlockError, BlockKind};

/// Blocks the first `n` calls to "custom-after" that reach it.
struct BlockFirst(AtomicU32);

impl CheckSlot for BlockFirst {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource() != "custom-after" {
            return Ok(());
        }
        let left = self.0.load(Ordering::SeqCst);
        if left > 0 {
            self.0.store(left - 1, Ordering::SeqCst);
            return Err(BlockError::custom(ctx.resource(), "warming", 0.0));
        }
        Ok(())
    }
}

/// Counts the calls it sees, and blocks "custom-before" outright.
struct Gatekeeper(AtomicU32);

impl CheckSlot for Gatekeeper {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        if ctx.resource() == "custom-before" {
            return Err(BlockError::custom(ctx.resource(), "closed", 0.0));
        }
        Ok(())
    }
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn custom_slots_run_in_order_and_a_later_block_cancels_earlier_reservations() {
    crate::own_process::assert_alone();
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("custom-after", 1.0),
        FlowRule::qps("custom-before", 1.0),
    ])
    .unwrap();
    register_check_slot(FLOW_SLOT_ORDER + 10, BlockFirst(AtomicU32::new(2)));
    register_check_slot(FLOW_SLOT_ORDER - 10, Gatekeeper(AtomicU32::new(0)));

    // Flow admits, then the later custom slot blocks twice: the flow pass is cancelled each time,
    // so the third call still finds the qps = 1 budget unused.
    let first = entry("custom-after").unwrap_err();
    assert_eq!(
        (first.kind(), first.reason()),
        (BlockKind::Custom, Some("warming"))
    );
    assert!(entry("custom-after").is_err());
    assert!(
        entry("custom-after").is_ok(),
        "cancelled reservations were returned"
    );
    assert_eq!(entry("custom-after").unwrap_err().kind(), BlockKind::Flow);
    let s = metrics::snapshot("custom-after").unwrap();
    assert_eq!((s.pass_qps, s.block_qps), (1.0, 3.0));

    // The earlier slot blocks before the flow check, which therefore reserves nothing.
    assert_eq!(
        entry("custom-before").unwrap_err().kind(),
        BlockKind::Custom
    );
    rules::load_flow_rules(vec![FlowRule::qps("custom-before", 1.0)]).unwrap();
}

/// Blocks the first call to "custom-probe" that reaches it (after the circuit breakers).
struct BlockOnce(AtomicU32);

impl CheckSlot for BlockOnce {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource() == "custom-probe" && self.0.swap(0, Ordering::SeqCst) == 1 {
            return Err(BlockError::custom(ctx.resource(), "later check", 0.0));
        }
        Ok(())
    }
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn a_probe_blocked_by_a_later_slot_gives_its_place_back() {
    crate::own_process::assert_alone();
    use sentinel_runtime::breaker::CircuitState;
    use sentinel_runtime::rules::CircuitBreakerRule;
    use sentinel_runtime::slot::CIRCUIT_BREAKER_SLOT_ORDER;
    use std::time::Duration;

    let clock = MockClock::install();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count("custom-probe", 1)
        .min_requests(1)
        .recovery(Duration::from_secs(1))])
    .unwrap();
    entry("custom-probe").unwrap().set_error();
    assert_eq!(
        metrics::snapshot("custom-probe").unwrap().circuit,
        Some(CircuitState::Open)
    );
    register_check_slot(CIRCUIT_BREAKER_SLOT_ORDER + 1, BlockOnce(AtomicU32::new(1)));
    clock.advance(Duration::from_secs(1));
    // The breaker admits this call as its only probe; the later slot blocks it.
    assert_eq!(entry("custom-probe").unwrap_err().kind(), BlockKind::Custom);
    // Sentinel #1638: the probe never ran, so the breaker must not stay half-open waiting.
    let probe = entry("custom-probe").expect("the blocked probe's place was given back");
    drop(probe);
    assert_eq!(
        metrics::snapshot("custom-probe").unwrap().circuit,
        Some(CircuitState::Closed)
    );
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}
