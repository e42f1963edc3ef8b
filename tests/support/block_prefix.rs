//! A check slot that blocks the resources of one name prefix and the shared node beyond the
//! cap, and the test of whether a call is blocked by it (`custom_slot_first`,
//! `custom_slot_late`).

use sentinel_runtime::slot::{CheckSlot, SlotContext};
use sentinel_runtime::{entry, BlockError, BlockKind};

/// Blocks every call to a resource whose name starts with its prefix, and every call counted
/// in the shared node beyond the cap.
pub struct BlockPrefix(pub &'static str);

impl CheckSlot for BlockPrefix {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        let name = ctx.resource();
        if name.starts_with(self.0) || name == "<overflow>" {
            return Err(BlockError::custom(name, "blocked by prefix", 0.0));
        }
        Ok(())
    }
}

/// Whether a call to `name` is blocked by a custom slot (and otherwise passes).
pub fn blocked(name: &str) -> bool {
    match entry(name) {
        Ok(_) => false,
        Err(e) => {
            assert_eq!(e.kind(), BlockKind::Custom, "{name}: {e}");
            true
        }
    }
}
