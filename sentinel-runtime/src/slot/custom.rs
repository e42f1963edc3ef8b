//! Check slots of the user's: the [`CheckSlot`] trait, what a slot sees of a call
//! ([`SlotContext`]), and the process-wide list of registered slots, kept sorted by order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::target::Target;
use crate::error::BlockError;
use crate::stat::circuit_state::CircuitState;
use crate::stat::ResourceStats;

/// What a check slot sees of the call being entered.
#[derive(Debug)]
pub struct SlotContext<'a> {
    pub(crate) target: Target<'a>,
    /// The state of the resource's most open circuit breaker, if it has any.
    pub(crate) circuit: Option<CircuitState>,
    pub(crate) now: u64,
    pub(crate) count: u32,
}

impl SlotContext<'_> {
    /// The resource being entered.
    pub fn resource(&self) -> &'static str {
        self.target.name
    }

    /// The resource's statistics over its second-level window, as
    /// [`metrics::snapshot`](crate::metrics::snapshot) gives them.
    pub fn stats(&self) -> ResourceStats {
        ResourceStats::from_totals(self.target.stats.window(self.now), self.circuit)
            .with_running(self.target.stats.totals())
    }

    /// How many passes the call asks for.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The time of the entry on the runtime clock, in nanoseconds (for slots after the flow
    /// checks: the time the call counts at).
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
///
/// A panic in `check` reaches the caller of the entry after everything reserved for the call was
/// given back (see the [module docs](super)).
pub trait CheckSlot: Send + Sync + 'static {
    /// Admits the call, or says why not.
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError>;

    /// A call this slot admitted will not run after all (a later check blocked it, a check
    /// panicked, or an async caller's future was dropped while it waited for its throttling
    /// turn): undo whatever `check` reserved. Asked only of the slots that admitted the call.
    fn cancel(&self, ctx: &SlotContext<'_>) {
        let _ = ctx;
    }
}

/// A registered slot and its order.
pub(crate) type Registered = (i32, Arc<dyn CheckSlot>);

/// The registered slots as a registration left them, sorted by order (a shared snapshot).
#[derive(Clone, Default)]
pub(crate) struct SlotList(Arc<Vec<Registered>>);

impl SlotList {
    /// The slots, sorted by order.
    pub(crate) fn slots(&self) -> &[Registered] {
        &self.0
    }
}

impl std::fmt::Debug for SlotList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotList")
            .field("len", &self.0.len())
            .finish()
    }
}

/// The registered slots, replaced whole by a registration: a check runs the slots of the list
/// it took, holding no lock while they run (a slot's check may enter a resource, whose check
/// takes the list again while a registration waits for the lock).
static CUSTOM: RwLock<Option<SlotList>> = RwLock::new(None);
static HAS_CUSTOM: AtomicBool = AtomicBool::new(false);

/// Adds a check to every resource's chain, run in ascending `order` (the built-in checks are at
/// [`AUTHORITY_SLOT_ORDER`](super::AUTHORITY_SLOT_ORDER),
/// [`SYSTEM_SLOT_ORDER`](super::SYSTEM_SLOT_ORDER), [`FLOW_SLOT_ORDER`](super::FLOW_SLOT_ORDER),
/// [`HOTSPOT_SLOT_ORDER`](super::HOTSPOT_SLOT_ORDER),
/// [`CIRCUIT_BREAKER_SLOT_ORDER`](super::CIRCUIT_BREAKER_SLOT_ORDER) and
/// [`OUTLIER_SLOT_ORDER`](super::OUTLIER_SLOT_ORDER); a custom slot with the
/// same order as a built-in one runs after it).
pub fn register_check_slot(order: i32, slot: impl CheckSlot) {
    let mut custom = CUSTOM.write().unwrap_or_else(PoisonError::into_inner);
    let mut slots = custom
        .as_ref()
        .map_or_else(Vec::new, |l| l.slots().to_vec());
    let at = slots.partition_point(|(o, _)| *o <= order);
    slots.insert(at, (order, Arc::new(slot)));
    *custom = Some(SlotList(Arc::new(slots)));
    HAS_CUSTOM.store(true, Ordering::Release);
    drop(custom);
    // Every node made before now runs the chain from now on; nodes made later read the flag
    // above when they are made (the node's `CHECKS_CUSTOM`).
    let mark = *NODE_MARKER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(mark) = mark {
        mark();
    }
}

/// How a registration marks every node made so far (this layer does not see nodes): installed
/// by the registry before it makes its first node. Behind a lock, so that a registration that
/// finds none installed said a slot is registered before the registry made any node.
static NODE_MARKER: Mutex<Option<fn()>> = Mutex::new(None);

/// Installs how a registration marks every node made so far (see [`NODE_MARKER`]).
pub(crate) fn install_node_marker(mark: fn()) {
    *NODE_MARKER.lock().unwrap_or_else(PoisonError::into_inner) = Some(mark);
}

/// Whether any custom check slot is registered (then every entry runs the chain). Entries
/// decide whether to run the chain by their node's copy of it (`ResourceNode::runs_custom`);
/// the stage runner reads this one.
#[inline(always)]
pub(crate) fn has_custom() -> bool {
    HAS_CUSTOM.load(Ordering::Acquire)
}

/// The registered slots, sorted by order: the list in force now (a later registration makes a
/// new one).
pub(crate) fn registered() -> SlotList {
    let custom = CUSTOM.read().unwrap_or_else(PoisonError::into_inner);
    custom.clone().unwrap_or_default()
}
