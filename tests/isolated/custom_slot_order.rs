//! Custom slots keep their order relative to the authority and system checks (Sentinel's
//! orders -6000 and -5000), and a custom block after the system check gives its reservation
//! back. Own test binary: registering a slot is process-wide.

use std::sync::Mutex;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AuthorityRule, SystemRule};
use sentinel_runtime::slot::{
    register_check_slot, CheckSlot, SlotContext, AUTHORITY_SLOT_ORDER, SYSTEM_SLOT_ORDER,
};
use sentinel_runtime::{BlockError, BlockKind, EntryBuilder};

static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
static BLOCK_NEXT: Mutex<bool> = Mutex::new(false);

/// Records that it ran; the one named "after-system" blocks once when told to.
struct Mark(&'static str);

impl CheckSlot for Mark {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource().starts_with("order-") {
            SEEN.lock().unwrap().push(self.0);
            let mut block = BLOCK_NEXT.lock().unwrap();
            if self.0 == "after-system" && *block {
                *block = false;
                return Err(BlockError::custom(ctx.resource(), "told to", 0.0));
            }
        }
        Ok(())
    }
}

fn seen() -> Vec<&'static str> {
    std::mem::take(&mut *SEEN.lock().unwrap())
}

#[test]
#[ignore = "runs alone in a child process: its wrapper in tests/isolated/main.rs"]
fn custom_slots_run_between_the_authority_and_system_checks_by_their_order() {
    crate::own_process::assert_alone();
    let _clock = MockClock::install();
    register_check_slot(AUTHORITY_SLOT_ORDER - 10, Mark("before-authority"));
    register_check_slot(SYSTEM_SLOT_ORDER - 10, Mark("before-system"));
    register_check_slot(SYSTEM_SLOT_ORDER + 10, Mark("after-system"));
    rules::load_authority_rules(vec![AuthorityRule::deny("order-auth", ["bad"])]).unwrap();

    let denied = EntryBuilder::new("order-auth").origin("bad").enter();
    assert_eq!(denied.unwrap_err().kind(), BlockKind::Authority);
    assert_eq!(seen(), vec!["before-authority"]);

    rules::load_system_rules(vec![SystemRule::new().qps(1.0)]).unwrap();
    // The slot after the system check blocks the first inbound call: the system check's pass
    // is given back, so the next call still fits in the 1 a second.
    *BLOCK_NEXT.lock().unwrap() = true;
    let blocked = EntryBuilder::new("order-sys").inbound().enter();
    assert_eq!(blocked.unwrap_err().kind(), BlockKind::Custom);
    assert_eq!(
        seen(),
        vec!["before-authority", "before-system", "after-system"]
    );
    assert!(EntryBuilder::new("order-sys").inbound().enter().is_ok());
    seen();
    let over = EntryBuilder::new("order-sys").inbound().enter();
    assert_eq!(over.unwrap_err().kind(), BlockKind::System);
    assert_eq!(
        seen(),
        vec!["before-authority", "before-system"],
        "the system check blocked before the slot after it"
    );
    rules::load_system_rules(vec![]).unwrap();
    rules::load_authority_rules(vec![]).unwrap();
}
