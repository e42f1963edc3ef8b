//! The slot chain: ordered rule checks that stop at the first block, then the statistics.
//!
//! Every entry runs the check slots in ascending order; the first that blocks stops the chain,
//! every check that had already admitted the call is cancelled (so a rejected call is never
//! counted as a pass), and the call is counted as a block. An admitted call is counted as a pass;
//! its [`Entry`](crate::Entry)'s drop records the exit.
//!
//! Built in: the flow checks at [`FLOW_SLOT_ORDER`] (Sentinel's order). Later checks (warm-up,
//! throttling, circuit breaking, hotspot, system) take their own order numbers the same way.
//! A user adds a check with [`register_check_slot`]; with none registered the chain costs nothing
//! beyond the built-in checks.

mod gate;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

pub(crate) use gate::{Gate, GateShape};

use crate::error::BlockError;
use crate::node::{ActiveRules, ResourceNode};

/// Order of the built-in flow checks (QPS and concurrency), as in Sentinel.
pub const FLOW_SLOT_ORDER: i32 = -2_000;

/// What a check slot sees of the call being entered.
#[derive(Debug)]
pub struct SlotContext<'a> {
    node: &'a ResourceNode,
    now: u64,
    count: u32,
}

impl SlotContext<'_> {
    /// The resource being entered.
    pub fn resource(&self) -> &'static str {
        self.node.name()
    }

    /// The node of the resource, for its statistics.
    pub fn node(&self) -> &ResourceNode {
        self.node
    }

    /// How many passes the call asks for.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The time of the entry on the runtime clock, in nanoseconds.
    pub fn now_nanos(&self) -> u64 {
        self.now
    }
}

/// A user's rule check, run in the slot chain at its order.
///
/// ```
/// use sentinel_runtime::slot::{register_check_slot, CheckSlot, SlotContext};
/// use sentinel_runtime::{entry, BlockError, BlockKind};
///
/// struct DenyAdmin;
/// impl CheckSlot for DenyAdmin {
///     fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
///         if ctx.resource() == "doc-admin" {
///             return Err(BlockError::custom(ctx.resource(), "admin is closed", 0.0));
///         }
///         Ok(())
///     }
/// }
///
/// register_check_slot(-3_000, DenyAdmin);
/// assert_eq!(entry("doc-admin").unwrap_err().kind(), BlockKind::Custom);
/// assert!(entry("doc-public").is_ok());
/// ```
pub trait CheckSlot: Send + Sync + 'static {
    /// Admits the call, or says why not.
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError>;

    /// A later check blocked a call this slot admitted: undo whatever `check` reserved.
    fn cancel(&self, ctx: &SlotContext<'_>) {
        let _ = ctx;
    }
}

type Registered = (i32, Arc<dyn CheckSlot>);

static CUSTOM: RwLock<Vec<Registered>> = RwLock::new(Vec::new());
static HAS_CUSTOM: AtomicBool = AtomicBool::new(false);

/// Adds a check to every resource's chain, run in ascending `order` (the built-in flow checks
/// are at [`FLOW_SLOT_ORDER`]; a custom slot with the same order runs after them).
pub fn register_check_slot(order: i32, slot: impl CheckSlot) {
    let mut custom = CUSTOM.write().unwrap_or_else(PoisonError::into_inner);
    let at = custom.partition_point(|(o, _)| *o <= order);
    custom.insert(at, (order, Arc::new(slot)));
    HAS_CUSTOM.store(true, Ordering::Release);
}

/// Runs the checks for one entry. On a block, every check that had admitted is cancelled.
#[inline]
pub(crate) fn check(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
) -> Result<(), BlockError> {
    if HAS_CUSTOM.load(Ordering::Acquire) {
        return check_with_custom(node, rules, now, count);
    }
    check_gates(node, rules.gates, now, count)
}

#[inline]
fn check_gates(
    node: &ResourceNode,
    gates: &[&Gate],
    now: u64,
    count: u32,
) -> Result<(), BlockError> {
    for (i, gate) in gates.iter().enumerate() {
        if let Err(block) = gate.try_enter(node.name(), now, count) {
            cancel_gates(&gates[..i], now, count);
            return Err(block);
        }
    }
    Ok(())
}

fn cancel_gates(gates: &[&Gate], now: u64, count: u32) {
    for gate in gates {
        gate.cancel(now, count);
    }
}

#[cold]
fn check_with_custom(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
) -> Result<(), BlockError> {
    let custom = CUSTOM.read().unwrap_or_else(PoisonError::into_inner);
    let ctx = SlotContext { node, now, count };
    let split = custom.partition_point(|(o, _)| *o < FLOW_SLOT_ORDER);
    let (before, after) = custom.split_at(split);
    let cancel_custom = |done: &[Registered]| done.iter().rev().for_each(|(_, s)| s.cancel(&ctx));
    for (i, (_, slot)) in before.iter().enumerate() {
        if let Err(block) = slot.check(&ctx) {
            cancel_custom(&before[..i]);
            return Err(block);
        }
    }
    if let Err(block) = check_gates(node, rules.gates, now, count) {
        cancel_custom(before);
        return Err(block);
    }
    for (i, (_, slot)) in after.iter().enumerate() {
        if let Err(block) = slot.check(&ctx) {
            cancel_custom(&after[..i]);
            cancel_gates(rules.gates, now, count);
            cancel_custom(before);
            return Err(block);
        }
    }
    Ok(())
}
