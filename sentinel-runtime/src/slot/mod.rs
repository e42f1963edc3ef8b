//! The slot chain: ordered rule checks that stop at the first block, then the statistics.
//!
//! Every entry runs the check slots in ascending order; the first that blocks stops the chain,
//! every check that had already admitted the call is cancelled (so a rejected call is never
//! counted as a pass), and the call is counted as a block. An admitted call is counted as a pass;
//! its [`Entry`](crate::Entry)'s drop records the exit.
//!
//! Built in: the flow checks at [`FLOW_SLOT_ORDER`] and the circuit breakers at
//! [`CIRCUIT_BREAKER_SLOT_ORDER`] (Sentinel's orders). Later checks (hotspot, system) take their
//! own order numbers the same way.
//! A user adds a check with [`register_check_slot`]; with none registered the chain costs nothing
//! beyond the built-in checks.

pub(crate) mod breaker;
mod gate;
mod qps;
mod related;
mod throttle;
mod warm_up;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

pub(crate) use breaker::{CircuitBreaker, Probe};
pub(crate) use gate::{Gate, GateShape};
pub(crate) use related::Resolve;

use crate::error::BlockError;
use crate::node::{ActiveRules, ResourceNode};

/// Order of the built-in flow checks (QPS and concurrency), as in Sentinel.
pub const FLOW_SLOT_ORDER: i32 = -2_000;
/// Order of the built-in circuit breakers, as in Sentinel's degrade slot.
pub const CIRCUIT_BREAKER_SLOT_ORDER: i32 = -1_000;

/// A probe admitted by a breaker of the node's rule set: `(index + 1) << 32 | probe`, or 0 for
/// none. One 8-byte word, so it is written and read back whole (a struct with narrower fields is
/// written in pieces and read back as one word, which stalls store forwarding on the entry path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeTicket(u64);

impl ProbeTicket {
    /// Not a probe.
    pub(crate) const NONE: ProbeTicket = ProbeTicket(0);

    fn new(index: usize, probe: Probe) -> ProbeTicket {
        ProbeTicket(((index as u64 + 1) << 32) | u64::from(probe))
    }

    fn is_some(self) -> bool {
        self.0 != 0
    }

    /// The probe, if the breaker at `index` admitted it.
    #[inline]
    pub(crate) fn for_breaker(self, index: usize) -> Option<Probe> {
        (self.0 >> 32 == index as u64 + 1).then_some(self.0 as Probe)
    }

    fn get(self) -> Option<(usize, Probe)> {
        self.is_some()
            .then(|| ((self.0 >> 32) as usize - 1, self.0 as Probe))
    }
}

/// What the chain decided for an admitted call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The probe ticket, if a half-open breaker admitted the call as its probe.
    pub(crate) probe: ProbeTicket,
    /// When the caller's throttling turn comes, on the precise clock (0: pass now).
    pub(crate) turn: u64,
}

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

/// Adds a check to every resource's chain, run in ascending `order` (the built-in checks are at
/// [`FLOW_SLOT_ORDER`] and [`CIRCUIT_BREAKER_SLOT_ORDER`]; a custom slot with the same order as a
/// built-in one runs after it).
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
) -> Result<Admission, BlockError> {
    if HAS_CUSTOM.load(Ordering::Acquire) {
        return check_with_custom(node, rules, now, count);
    }
    check_built_in(node, rules, now, count)
}

/// The flow gates, then the circuit breakers.
#[inline]
fn check_built_in(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
) -> Result<Admission, BlockError> {
    let turn = check_gates(node, rules, now, count)?;
    if rules.breakers.is_empty() {
        return Ok(Admission {
            probe: ProbeTicket::NONE,
            turn,
        });
    }
    let probe =
        check_breakers(node, rules, now).inspect_err(|_| cancel_gates(rules.gates, now, count))?;
    Ok(Admission { probe, turn })
}

/// The flow gates: the latest throttling turn among them (0: none). On a block, the gates that
/// had admitted are cancelled.
#[inline]
fn check_gates(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
) -> Result<u64, BlockError> {
    let mut turn = 0;
    for (i, gate) in rules.gates.iter().enumerate() {
        match gate.try_enter(node.name(), now, count) {
            Ok(t) => turn = turn.max(t),
            Err(block) => {
                cancel_gates(&rules.gates[..i], now, count);
                return Err(block);
            }
        }
    }
    Ok(turn)
}

/// Undoes every check's admission of a call that will not run after all (an async caller's
/// future dropped while waiting for its throttling turn).
pub(crate) fn cancel(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
    admission: Admission,
) {
    release_probe(rules, admission.probe);
    cancel_gates(rules.gates, now, count);
    if HAS_CUSTOM.load(Ordering::Acquire) {
        let custom = CUSTOM.read().unwrap_or_else(PoisonError::into_inner);
        cancel_custom(&custom, &SlotContext { node, now, count });
    }
}

/// The circuit breakers; at most one makes the call its probe. On a block, that probe is given
/// back.
fn check_breakers(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
) -> Result<ProbeTicket, BlockError> {
    let mut ticket = ProbeTicket::NONE;
    for (i, breaker) in rules.breakers.iter().enumerate() {
        match breaker.try_enter(node.name(), now, ticket.is_some()) {
            Ok(None) => {}
            Ok(Some(probe)) => ticket = ProbeTicket::new(i, probe),
            Err(block) => {
                release_probe(rules, ticket);
                return Err(block);
            }
        }
    }
    Ok(ticket)
}

fn release_probe(rules: &ActiveRules, ticket: ProbeTicket) {
    if let Some((i, probe)) = ticket.get() {
        if let Some(breaker) = rules.breakers.get(i) {
            breaker.release_probe(probe);
        }
    }
}

fn cancel_gates(gates: &[&Gate], now: u64, count: u32) {
    for gate in gates {
        gate.cancel(now, count);
    }
}

/// Runs custom slots in order; on a block, cancels the ones of this group that had admitted.
fn run_custom(slots: &[Registered], ctx: &SlotContext<'_>) -> Result<(), BlockError> {
    for (i, (_, slot)) in slots.iter().enumerate() {
        if let Err(block) = slot.check(ctx) {
            cancel_custom(&slots[..i], ctx);
            return Err(block);
        }
    }
    Ok(())
}

fn cancel_custom(slots: &[Registered], ctx: &SlotContext<'_>) {
    slots.iter().rev().for_each(|(_, s)| s.cancel(ctx));
}

/// The chain with custom slots interleaved by order: before the flow gates, between them and the
/// breakers, after the breakers. A block anywhere cancels everything that admitted before it.
#[cold]
fn check_with_custom(
    node: &ResourceNode,
    rules: &ActiveRules,
    now: u64,
    count: u32,
) -> Result<Admission, BlockError> {
    let custom = CUSTOM.read().unwrap_or_else(PoisonError::into_inner);
    let ctx = SlotContext { node, now, count };
    let flow_at = custom.partition_point(|(o, _)| *o < FLOW_SLOT_ORDER);
    let breaker_at = custom.partition_point(|(o, _)| *o < CIRCUIT_BREAKER_SLOT_ORDER);
    let (before, between, after) = (
        &custom[..flow_at],
        &custom[flow_at..breaker_at],
        &custom[breaker_at..],
    );
    run_custom(before, &ctx)?;
    let undo_before = |block| {
        cancel_custom(before, &ctx);
        block
    };
    let turn = check_gates(node, rules, now, count).map_err(undo_before)?;
    let undo_gates = |block| {
        cancel_gates(rules.gates, now, count);
        undo_before(block)
    };
    run_custom(between, &ctx).map_err(undo_gates)?;
    let undo_between = |block| {
        cancel_custom(between, &ctx);
        undo_gates(block)
    };
    let probe = check_breakers(node, rules, now).map_err(undo_between)?;
    run_custom(after, &ctx).map_err(|block| {
        release_probe(rules, probe);
        undo_between(block)
    })?;
    Ok(Admission { probe, turn })
}
