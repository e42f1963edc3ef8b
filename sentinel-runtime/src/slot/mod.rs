//! The slot chain: ordered rule checks that stop at the first block, then the statistics.
//!
//! Every entry runs the check slots in ascending order; the first that blocks stops the chain,
//! every check that had already admitted the call is cancelled (so a rejected call is never
//! counted as a pass), and the call is counted as a block. An admitted call is counted as a pass;
//! its [`Entry`](crate::Entry)'s drop records the exit.
//!
//! Built in, in this order (Sentinel's): the authority rules at [`AUTHORITY_SLOT_ORDER`], the
//! system rules (inbound entries only) at [`SYSTEM_SLOT_ORDER`], the flow checks (concurrency,
//! then QPS) at [`FLOW_SLOT_ORDER`], the hotspot checks at [`HOTSPOT_SLOT_ORDER`] and the circuit
//! breakers at [`CIRCUIT_BREAKER_SLOT_ORDER`]. A user adds a check with [`register_check_slot`];
//! with none registered the chain costs nothing beyond the built-in checks.
//!
//! # Panics in user code
//!
//! A check slot may panic. Whatever it panics in, everything the chain had reserved for the call
//! (QPS passes, a concurrency place, a half-open breaker's probe, the earlier custom slots'
//! reservations through their [`CheckSlot::cancel`]) is given back exactly once while the panic
//! unwinds, and the panic then reaches the caller of the entry. A panic inside a
//! [`CheckSlot::cancel`] is contained (it is reported by the panic hook, printed to stderr by
//! default) so that the remaining reservations are still given back.

pub(crate) mod adaptive;
pub(crate) mod breaker;
pub(crate) mod cluster;
mod concurrency;
mod gate;
mod hot_top;
#[cfg(feature = "tower")]
pub(crate) use hot_top::note_text;
#[cfg(feature = "dashboard")]
pub(crate) use hot_top::text_of;
mod hotspot;
pub(crate) mod param_table;
mod qps;
pub(crate) mod qps_ring;
mod related;
mod succession;
pub(crate) mod system;
mod threshold;
mod throttle;
mod warm_up;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

pub(crate) use adaptive::{AdaptiveLimit, Outcome};
pub(crate) use breaker::{CircuitBreaker, Probe};
pub(crate) use concurrency::ConcurrencyCounter;
pub(crate) use gate::{successions as gate_successions, Gate};
pub(crate) use hotspot::{
    successions as hotspot_successions, BlockedValues, HotPass, HotPasses, HotspotGate,
};
pub(crate) use related::Resolve;
pub(crate) use system::SystemPass;

use crate::error::BlockError;
use crate::param::Params;
use crate::rules::authority::AuthorityRule;
use crate::stat::{NodeStats, ResourceStats};

/// Order of the built-in authority (origin) checks, as in Sentinel.
pub const AUTHORITY_SLOT_ORDER: i32 = -6_000;
/// Order of the built-in system checks (inbound entries), as in Sentinel.
pub const SYSTEM_SLOT_ORDER: i32 = -5_000;
/// Order of the built-in flow checks (concurrency and QPS), as in Sentinel.
pub const FLOW_SLOT_ORDER: i32 = -2_000;
/// Order of the built-in hotspot (per-parameter-value) checks: after the flow checks, before
/// the circuit breakers.
pub const HOTSPOT_SLOT_ORDER: i32 = -1_500;
/// Order of the built-in circuit breakers, as in Sentinel's degrade slot.
pub const CIRCUIT_BREAKER_SLOT_ORDER: i32 = -1_000;

/// A probe admitted by a circuit breaker: `breaker id << 32 | probe`, or 0 for none. One 8-byte
/// word, so it is written and read back whole (a struct with narrower fields is written in
/// pieces and read back as one word, which stalls store forwarding on the entry path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeTicket(u64);

impl ProbeTicket {
    /// Not a probe.
    pub(crate) const NONE: ProbeTicket = ProbeTicket(0);

    fn new(breaker: &CircuitBreaker, probe: Probe) -> ProbeTicket {
        ProbeTicket((u64::from(breaker.id()) << 32) | u64::from(probe))
    }

    fn is_some(self) -> bool {
        self.0 != 0
    }

    /// The probe, if `breaker` admitted it.
    #[inline]
    pub(crate) fn for_breaker(self, breaker: &CircuitBreaker) -> Option<Probe> {
        (self.is_some() && self.0 >> 32 == u64::from(breaker.id())).then_some(self.0 as Probe)
    }
}

/// The checks in force on a resource, as the entry path reads them.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    /// The authority rules (by origin), checked first.
    pub(crate) authority: Vec<AuthorityRule>,
    /// The smallest concurrency rule's limit (and its threshold as given), if any.
    pub(crate) concurrency: Option<(u64, f64)>,
    /// The adaptive concurrency limit, if an adaptive rule is in force.
    pub(crate) adaptive: Option<Arc<AdaptiveLimit>>,
    /// The QPS checks, in order.
    pub(crate) gates: Vec<Arc<Gate>>,
    /// The hotspot (per-parameter-value) checks, after the flow checks.
    pub(crate) hotspots: Vec<HotspotGate>,
    /// The circuit breakers, checked after the hotspot checks.
    pub(crate) breakers: Vec<Arc<CircuitBreaker>>,
}

impl Chain {
    /// Starts loading what the hotspot checks will read of the call's parameters (their
    /// tables' lines, over a large table misses to memory), so that the misses overlap the work
    /// before the checks. Only a hint: the checks are the same without it.
    #[inline(always)]
    pub(crate) fn prefetch_params(&self, params: &Params) {
        for gate in &self.hotspots {
            gate.prefetch(params);
        }
    }

    /// No checks at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.authority.is_empty()
            && self.concurrency.is_none()
            && self.adaptive.is_none()
            && self.gates.is_empty()
            && self.hotspots.is_empty()
            && self.breakers.is_empty()
    }
}

/// What the chain decided for an admitted call.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    /// The time the call counts at (the entry's clock reading, or later if a QPS window had
    /// already moved past it).
    pub(crate) at: u64,
    /// When the caller's throttling turn comes, on the precise clock (0: pass now).
    pub(crate) turn: u64,
    /// The probe ticket, if a half-open breaker admitted the call as its probe.
    pub(crate) probe: ProbeTicket,
    /// 1 if the call took a place in the node's concurrency counter (a whole word: see
    /// `entry::enter`).
    pub(crate) counted: u64,
    /// What each hotspot gate (by index in the chain) admitted.
    pub(crate) hot: HotPasses,
    /// [`INBOUND_CALL`] for inbound traffic, else 0.
    pub(crate) inbound: u64,
    /// What the system check reserved (`counted`: the call took a place in the system rules'
    /// count of inbound calls inside).
    pub(crate) system: SystemPass,
}

/// [`Admission::inbound`]: the call is inbound traffic.
pub(crate) const INBOUND_CALL: u64 = 1;

impl Admission {
    /// The places the call took in hotspot concurrency counters, which its exit gives back.
    #[inline]
    pub(crate) fn inside(&self) -> impl Iterator<Item = (usize, param_table::Slot)> + '_ {
        self.hot.iter().filter_map(|&(i, pass)| match pass {
            HotPass::Inside(slot) => Some((i, slot)),
            _ => None,
        })
    }
}

impl Admission {
    /// A call with no checks, admitted at `at`.
    #[inline]
    pub(crate) fn at(at: u64) -> Admission {
        Admission {
            at,
            ..Admission::default()
        }
    }
}

/// The resource a call enters, as the checks see it: its name, its statistics and the checks
/// in force (never the node type or the registry: see the layering in the crate docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) name: &'static str,
    pub(crate) stats: &'a NodeStats,
}

/// What a check slot sees of the call being entered.
#[derive(Debug)]
pub struct SlotContext<'a> {
    target: Target<'a>,
    chain: &'a Chain,
    now: u64,
    count: u32,
}

impl SlotContext<'_> {
    /// The resource being entered.
    pub fn resource(&self) -> &'static str {
        self.target.name
    }

    /// The resource's statistics over its second-level window, as
    /// [`metrics::snapshot`](crate::metrics::snapshot) gives them.
    pub fn stats(&self) -> ResourceStats {
        let circuit = self.chain.breakers.iter().map(|b| b.state()).max();
        ResourceStats::from_totals(self.target.stats.window(self.now), circuit)
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
/// given back (see the [module docs](self)).
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
/// [`AUTHORITY_SLOT_ORDER`], [`SYSTEM_SLOT_ORDER`], [`FLOW_SLOT_ORDER`], [`HOTSPOT_SLOT_ORDER`]
/// and [`CIRCUIT_BREAKER_SLOT_ORDER`]; a custom slot with the same order as a built-in one runs
/// after it).
pub fn register_check_slot(order: i32, slot: impl CheckSlot) {
    let mut custom = CUSTOM.write().unwrap_or_else(PoisonError::into_inner);
    let at = custom.partition_point(|(o, _)| *o <= order);
    custom.insert(at, (order, Arc::new(slot)));
    HAS_CUSTOM.store(true, Ordering::Release);
}

/// Whether any custom check slot is registered (then every entry runs the chain).
#[inline(always)]
pub(crate) fn has_custom() -> bool {
    HAS_CUSTOM.load(Ordering::Acquire)
}

/// Everything reserved so far for one call; dropped armed (a block returned early, or a panic
/// unwinding), it gives all of it back.
struct Reserved<'a> {
    chain: &'a Chain,
    counter: &'a ConcurrencyCounter,
    count: u32,
    counted: bool,
    /// `chain.gates[..gates]` admitted the call, counting it at `at`.
    gates: usize,
    at: u64,
    probe: ProbeTicket,
    /// What the hotspot gates admitted (by index in the chain).
    hot: HotPasses,
    /// What the system check reserved.
    system: SystemPass,
    params: &'a Params,
    /// The first `custom` registered slots admitted the call.
    custom: usize,
    custom_slots: &'a [Registered],
    ctx: Option<&'a SlotContext<'a>>,
    armed: bool,
}

impl Reserved<'_> {
    fn cancel_gates(&mut self) {
        for gate in &self.chain.gates[..self.gates] {
            gate.cancel(self.at, self.count);
        }
        self.gates = 0;
    }
}

impl Drop for Reserved<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.armed {
            self.release();
        }
    }
}

impl Reserved<'_> {
    /// Gives back everything reserved (once: it leaves nothing reserved).
    fn release(&mut self) {
        self.armed = false;
        if let Some(ctx) = self.ctx {
            for (_, slot) in self.custom_slots[..self.custom].iter().rev() {
                // A panicking cancel must not stop the other reservations from being given back
                // (nor abort the process while another panic unwinds).
                let _ = catch_unwind(AssertUnwindSafe(|| slot.cancel(ctx)));
            }
        }
        self.custom = 0;
        if self.system != SystemPass::default() {
            system::cancel(std::mem::take(&mut self.system), self.count);
        }
        release_probe(self.chain, self.probe);
        self.probe = ProbeTicket::NONE;
        for (i, pass) in self.hot.drain_latest_first() {
            if let Some(gate) = self.chain.hotspots.get(i) {
                gate.cancel(pass, self.count);
            }
        }
        self.cancel_gates();
        if self.counted {
            self.counter.release();
            self.counted = false;
        }
    }
}

/// Runs the checks for one entry at `now`, writing what they decided into `out`. On a block (or a panic in a custom slot), everything
/// already reserved is given back.
#[inline]
pub(crate) fn check(
    node: Target<'_>,
    chain: &Chain,
    counter: &ConcurrencyCounter,
    now: u64,
    count: u32,
    params: &Params,
    out: &mut Admission,
) -> Result<(), BlockError> {
    if HAS_CUSTOM.load(Ordering::Acquire) {
        *out = check_with_custom(node, chain, counter, now, count, params)?;
        return Ok(());
    }
    // No user code runs in the built-in checks, so no guard is needed against a panic: a block
    // gives back what was reserved explicitly.
    let mut reserved = Reserved {
        chain,
        counter,
        count,
        counted: false,
        gates: 0,
        at: now,
        probe: ProbeTicket::NONE,
        hot: HotPasses::default(),
        system: SystemPass::default(),
        params,
        custom: 0,
        custom_slots: &[],
        ctx: None,
        armed: false,
    };
    if !chain.authority.is_empty() {
        check_authority(node.name, chain, params)?;
    }
    let inbound = params.is_inbound();
    if inbound {
        check_system(node.name, &mut reserved)?;
    }
    let mut turn = match check_flow(node.name, &mut reserved) {
        Ok(turn) => turn,
        Err(block) => {
            reserved.release();
            return Err(block);
        }
    };
    if !chain.hotspots.is_empty() {
        match check_hotspots(node.name, &mut reserved) {
            Ok(t) => turn = turn.max(t),
            Err(block) => {
                reserved.release();
                return Err(block);
            }
        }
    }
    if !chain.breakers.is_empty() {
        if let Err(block) = check_breakers(node.name, &mut reserved) {
            reserved.release();
            return Err(block);
        }
    }
    // Written field by field into the caller's admission: a moved struct is copied with wide
    // loads that stall on the narrower stores that built it (measured on this path).
    out.at = reserved.at;
    out.turn = turn;
    out.probe = reserved.probe;
    out.counted = u64::from(reserved.counted);
    // The hotspot passes outlive the checks only where something is still to give back: a
    // place in a concurrency counter (at exit), or a rate reservation while the call waits for
    // its turn (if the wait is abandoned). Not moved otherwise (a moved pass is copied with
    // wide loads that stall on the narrower stores that built it).
    if !reserved.hot.is_empty() && (turn != 0 || reserved.hot.holds_places()) {
        out.hot = std::mem::take(&mut reserved.hot);
    }
    if inbound {
        out.inbound = INBOUND_CALL;
        out.system = std::mem::take(&mut reserved.system);
    }
    Ok(())
}

/// The authority rules: the call's origin (the entry's own, else its scope's) must pass each.
/// Nothing is reserved, so a block gives nothing back.
#[cold]
fn check_authority(
    resource: &'static str,
    chain: &Chain,
    params: &Params,
) -> Result<(), BlockError> {
    let scoped;
    let origin = match params.origin() {
        Some(origin) => Some(origin),
        None => {
            scoped = crate::context::origin();
            scoped.as_deref()
        }
    };
    match chain.authority.iter().find(|rule| !rule.admits(origin)) {
        Some(_) => Err(BlockError::authority(resource, origin)),
        None => Ok(()),
    }
}

/// The system check of an inbound call, when system rules are in force: what it reserved is
/// in `r.system` (given back by `r` on a later block).
#[inline]
fn check_system(resource: &'static str, r: &mut Reserved<'_>) -> Result<(), BlockError> {
    if system::is_active() {
        r.system = system::try_enter(resource, r.at, r.count)?;
        r.at = r.at.max(r.system.gated_at);
    }
    Ok(())
}

/// The hotspot checks: the latest waiting turn among them (0: none).
fn check_hotspots(resource: &'static str, r: &mut Reserved<'_>) -> Result<u64, BlockError> {
    let mut turn = 0;
    for (i, gate) in r.chain.hotspots.iter().enumerate() {
        let pass = gate
            .try_enter(resource, r.params, r.at, r.count)
            .inspect_err(|_| gate.note_block(r.params, r.at, r.count))?;
        if let HotPass::Rate { turn: t, .. } = pass {
            turn = turn.max(t);
        }
        if pass != HotPass::Free {
            r.hot.push(i, pass);
        }
    }
    Ok(turn)
}

/// The concurrency check, then the QPS gates: the latest throttling turn among them (0: none).
#[inline]
fn check_flow(resource: &'static str, r: &mut Reserved<'_>) -> Result<u64, BlockError> {
    if r.counter.is_tracking() {
        let fixed = r.chain.concurrency.map(|(limit, _)| limit);
        let adaptive = r.chain.adaptive.as_ref().map(|a| a.limit());
        let limit = match (fixed, adaptive) {
            (Some(f), Some(a)) => Some(f.min(a)),
            (f, a) => f.or(a),
        };
        if !r.counter.try_acquire(limit) {
            if let Some(a) = &r.chain.adaptive {
                a.on_block(r.at); // ends a probe past its deadline
            }
            return Err(concurrency_block(resource, r.chain, fixed, adaptive));
        }
        r.counted = true;
    }
    let mut turn = 0;
    // A gate whose window has moved past `at` counts the call later; the gates before it then
    // check again at that time, so that every gate counts the call at the time it is recorded.
    for _round in 0..3 {
        let mut moved = false;
        for gate in r.chain.gates.iter() {
            let pass = gate.try_enter(resource, r.at, r.count)?;
            turn = turn.max(pass.turn);
            if pass.at > r.at && r.gates > 0 {
                r.cancel_gates();
                gate.cancel(pass.at, r.count);
                r.at = pass.at;
                moved = true;
                break;
            }
            r.at = r.at.max(pass.at);
            r.gates += 1;
        }
        if !moved {
            return Ok(turn);
        }
        turn = 0;
    }
    // Still moving after three rounds: the clock is racing past bucket boundaries faster than
    // the check runs. Refusing is always safe.
    r.cancel_gates();
    Err(r.chain.gates.first().map_or_else(
        || BlockError::flow(resource, 0.0, 1_000),
        |g| g.block_error(resource),
    ))
}

/// The block of a call over the concurrency limit: the fixed rule's, or the adaptive one's if
/// that is the lower.
#[cold]
fn concurrency_block(
    resource: &'static str,
    chain: &Chain,
    fixed: Option<u64>,
    adaptive: Option<u64>,
) -> BlockError {
    match adaptive {
        Some(a) if fixed.is_none_or(|f| a < f) => {
            BlockError::concurrency(resource, a as f64).because("adaptive limit")
        }
        _ => BlockError::concurrency(resource, chain.concurrency.map_or(0.0, |(_, given)| given)),
    }
}

/// The circuit breakers; at most one makes the call its probe.
fn check_breakers(resource: &'static str, r: &mut Reserved<'_>) -> Result<(), BlockError> {
    for breaker in r.chain.breakers.iter() {
        if let Some(probe) = breaker.try_enter(resource, r.at, r.probe.is_some())? {
            r.probe = ProbeTicket::new(breaker, probe);
        }
    }
    Ok(())
}

fn release_probe(chain: &Chain, ticket: ProbeTicket) {
    if ticket.is_some() {
        for breaker in &chain.breakers {
            if let Some(probe) = ticket.for_breaker(breaker) {
                breaker.release_probe(probe);
            }
        }
    }
}

/// Undoes every check's admission of a call that will not run after all (an async caller's
/// future dropped while waiting for its throttling turn).
pub(crate) fn cancel(
    node: Target<'_>,
    chain: &Chain,
    counter: &ConcurrencyCounter,
    count: u32,
    mut admission: Admission,
) {
    let custom = if HAS_CUSTOM.load(Ordering::Acquire) {
        Some(CUSTOM.read().unwrap_or_else(PoisonError::into_inner))
    } else {
        None
    };
    let ctx = SlotContext {
        target: node,
        chain,
        now: admission.at,
        count,
    };
    let slots: &[Registered] = custom.as_deref().map_or(&[], |c| c.as_slice());
    drop(Reserved {
        chain,
        counter,
        count,
        counted: admission.counted != 0,
        gates: chain.gates.len(),
        at: admission.at,
        probe: admission.probe,
        hot: std::mem::take(&mut admission.hot),
        system: admission.system,
        params: &Params::NONE,
        custom: slots.len(),
        custom_slots: slots,
        ctx: Some(&ctx),
        armed: true,
    });
}

/// The chain with custom slots interleaved by order: before the flow checks, between them and
/// the breakers, after the breakers. A block or a panic anywhere gives back everything reserved
/// before it.
#[cold]
fn check_with_custom(
    node: Target<'_>,
    chain: &Chain,
    counter: &ConcurrencyCounter,
    now: u64,
    count: u32,
    params: &Params,
) -> Result<Admission, BlockError> {
    let custom = CUSTOM.read().unwrap_or_else(PoisonError::into_inner);
    let authority_at = custom.partition_point(|(o, _)| *o < AUTHORITY_SLOT_ORDER);
    let system_at = custom.partition_point(|(o, _)| *o < SYSTEM_SLOT_ORDER);
    let flow_at = custom.partition_point(|(o, _)| *o < FLOW_SLOT_ORDER);
    let hot_at = custom.partition_point(|(o, _)| *o < HOTSPOT_SLOT_ORDER);
    let breaker_at = custom.partition_point(|(o, _)| *o < CIRCUIT_BREAKER_SLOT_ORDER);
    let early = SlotContext {
        target: node,
        chain,
        now,
        count,
    };
    // The custom slots before the flow checks see the entry's reading; those after see the time
    // the call counts at. Each group is cancelled with the context it was checked with.
    let mut before = Reserved {
        chain,
        counter,
        count,
        counted: false,
        gates: 0,
        at: now,
        probe: ProbeTicket::NONE,
        hot: HotPasses::default(),
        system: SystemPass::default(),
        params,
        custom: 0,
        custom_slots: &custom[..flow_at],
        ctx: Some(&early),
        armed: true,
    };
    // `before.custom` counts the admitted prefix of `custom[..flow_at]`, run in three groups
    // around the authority and system checks.
    for (_, slot) in &custom[..authority_at] {
        slot.check(&early)?;
        before.custom += 1;
    }
    if !chain.authority.is_empty() {
        check_authority(node.name, chain, params)?;
    }
    for (_, slot) in &custom[authority_at..system_at] {
        slot.check(&early)?;
        before.custom += 1;
    }
    let inbound = if params.is_inbound() {
        check_system(node.name, &mut before)?;
        INBOUND_CALL
    } else {
        0
    };
    for (_, slot) in &custom[system_at..flow_at] {
        slot.check(&early)?;
        before.custom += 1;
    }
    let mut flow = shallow(&before);
    let mut turn = check_flow(node.name, &mut flow)?;
    let late = SlotContext {
        target: node,
        chain,
        now: flow.at,
        count,
    };
    let mut after = shallow(&flow);
    after.custom_slots = &custom[flow_at..];
    after.ctx = Some(&late);
    flow.armed = false; // `after` owns the flow reservations now
    for (_, slot) in &custom[flow_at..hot_at] {
        slot.check(&late)?;
        after.custom += 1;
    }
    turn = turn.max(check_hotspots(node.name, &mut after)?);
    for (_, slot) in &custom[hot_at..breaker_at] {
        slot.check(&late)?;
        after.custom += 1;
    }
    check_breakers(node.name, &mut after)?;
    // The slots after the breakers follow the ones between in `custom_slots`, so `after.custom`
    // keeps counting the admitted prefix.
    for (_, slot) in &custom[breaker_at..] {
        slot.check(&late)?;
        after.custom += 1;
    }
    after.armed = false;
    before.armed = false;
    Ok(Admission {
        at: after.at,
        turn,
        probe: after.probe,
        counted: u64::from(after.counted),
        hot: std::mem::take(&mut after.hot),
        inbound,
        system: before.system,
    })
}

/// A copy of `r`'s reservations (not its custom slots nor hotspot passes: `shallow` is taken
/// before the hotspot checks), armed: exactly one of `r` and the copy
/// must stay armed. (Built field by field, never as a temporary: a dropped armed copy would give
/// the reservations back.)
fn shallow<'a>(r: &Reserved<'a>) -> Reserved<'a> {
    Reserved {
        chain: r.chain,
        counter: r.counter,
        count: r.count,
        counted: r.counted,
        gates: r.gates,
        at: r.at,
        probe: r.probe,
        hot: HotPasses::default(),
        // The system check's reservation stays with the first holder (checked before the copy).
        system: SystemPass::default(),
        params: r.params,
        custom: 0,
        custom_slots: &[],
        ctx: None,
        armed: true,
    }
}
