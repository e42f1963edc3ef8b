//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one.

use std::hash::Hash;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::clock;
use crate::error::BlockError;
use crate::kinds::circuit_breaker::ProbeTicket;
use crate::kinds::system::check as system;
use crate::kinds::{Admission, Chain};
use crate::node::ResourceNode;
use crate::param::{ParamBuf, Params};
use crate::slot::param_table::Place;
use crate::slot::SlotList;
use crate::stat::BlockTotals;
use crate::sync::{thread_slot, thread_slot_if_assigned, Held};
use lone::{enter_lone, enter_lone_hot, lone_hotspot, lone_qps, pinned_qps};

mod exit;
mod lone;

/// Enters `resource` for one pass: `Ok(Entry)` if every rule admits the call, else the
/// [`BlockError`] of the rule that blocked it.
///
/// A resource first seen here gets a node with no rules (statistics only) unless rules were
/// loaded for it. Hold the [`Entry`] while the guarded work runs; dropping it records the exit.
///
/// How many resources get a node is bounded
/// ([`registry::set_max_resources`](crate::registry::set_max_resources), 6000 by default):
/// beyond that, a new name's entries pass unchecked and are counted in
/// [`metrics::overflow`](crate::metrics::overflow), as in Sentinel.
///
/// ```
/// let entry = sentinel_runtime::entry("doc-entry")?;
/// // ... the guarded work ...
/// drop(entry);
/// # Ok::<(), sentinel_runtime::BlockError>(())
/// ```
#[inline]
pub fn entry(resource: &str) -> Result<Entry, BlockError> {
    // Not through `EntryBuilder`: with no parameters known at compile time, the checks that
    // only parameters, origins or inbound entries need are left out of this path.
    let slot = thread_slot();
    let node = crate::registry::node_by_name_cached(resource);
    enter_in(slot, node, 1, &Params::NONE)
}

/// Options for entering a resource: `EntryBuilder::new("r").acquire(5).enter()`.
#[derive(Clone, Debug)]
#[must_use = "an EntryBuilder does nothing until `enter` is called"]
pub struct EntryBuilder<'a> {
    resource: &'a str,
    count: u32,
    params: ParamBuf,
    /// The parameters' names, by index, if given.
    param_names: Option<&'a [&'a str]>,
}

impl<'a> EntryBuilder<'a> {
    /// Entering `resource` for one pass.
    #[inline]
    pub fn new(resource: &'a str) -> EntryBuilder<'a> {
        EntryBuilder {
            resource,
            count: 1,
            params: ParamBuf::NONE,
            param_names: None,
        }
    }

    /// Adds a parameter value for hotspot rules ([`HotspotRule`](crate::rules::HotspotRule)):
    /// parameters are indexed in call order (the first is index 0). The value is hashed with the
    /// process's keyed 64-bit hasher; only the hash is kept. Up to 8 parameters (more are
    /// ignored).
    ///
    /// ```
    /// use sentinel_runtime::{rules::{self, HotspotRule}, BlockKind, EntryBuilder};
    ///
    /// rules::load_hotspot_rules(vec![HotspotRule::qps("doc-per-user", 0, 2.0)])?;
    /// let call = |user: &str| EntryBuilder::new("doc-per-user").param(user).enter();
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    /// assert!(call("alice").is_ok() && call("alice").is_ok());
    /// assert_eq!(call("alice").unwrap_err().kind(), BlockKind::HotParam); // 2 a second each
    /// assert!(call("bob").is_ok()); // bob has his own 2
    /// # rules::load_hotspot_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn param(mut self, value: &(impl Hash + ?Sized)) -> EntryBuilder<'a> {
        self.params.push(crate::param::hash(value));
        self
    }

    /// Names the parameters, by index (the first name is parameter 0), so that hotspot rules can
    /// name them ([`HotspotRule::qps_by_name`](crate::rules::HotspotRule::qps_by_name),
    /// `param:` in rule files) instead of counting positions. A resource learns its names from
    /// its first entry that gives them (later entries' names are not read): give the same names
    /// on every entry of a resource.
    ///
    /// ```
    /// use sentinel_runtime::{rules::{self, HotspotRule}, BlockKind, EntryBuilder};
    ///
    /// rules::load_hotspot_rules(vec![HotspotRule::qps_by_name("doc-named", "user", 1.0)])?;
    /// let call = |region: &str, user: &str| {
    ///     EntryBuilder::new("doc-named").param_names(&["region", "user"]).param(region).param(user).enter()
    /// };
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    /// assert!(call("eu", "alice").is_ok());
    /// assert_eq!(call("us", "alice").unwrap_err().kind(), BlockKind::HotParam); // per user
    /// assert!(call("eu", "bob").is_ok());
    /// # rules::load_hotspot_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn param_names(mut self, names: &'a [&'a str]) -> EntryBuilder<'a> {
        self.param_names = Some(names);
        self
    }

    /// Names the caller (an upstream application, a tenant) for authority rules
    /// ([`AuthorityRule`](crate::rules::AuthorityRule)). Without it, the entry takes the origin
    /// of the scope it runs in ([`context`](crate::context)), if any.
    pub fn origin(mut self, origin: &str) -> EntryBuilder<'a> {
        self.params.set_origin(origin);
        self
    }

    /// Marks the entry as **inbound** traffic (a request this process serves, not a call it
    /// makes): system rules ([`SystemRule`](crate::rules::SystemRule)) check inbound entries
    /// only, and the process's inbound statistics count them
    /// ([`metrics::inbound`](crate::metrics::inbound)). The tower layer's entries are inbound;
    /// the attribute takes `inbound = true`.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, SystemRule};
    /// use sentinel_runtime::{BlockKind, EntryBuilder};
    ///
    /// rules::load_system_rules(vec![SystemRule::new().concurrency(1)])?;
    /// let first = EntryBuilder::new("doc-inbound").inbound().enter().unwrap();
    /// let second = EntryBuilder::new("doc-inbound").inbound().enter();
    /// assert_eq!(second.unwrap_err().kind(), BlockKind::System);
    /// assert!(EntryBuilder::new("doc-outbound").enter().is_ok(), "not inbound: not limited");
    /// drop(first);
    /// # rules::load_system_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn inbound(mut self) -> EntryBuilder<'a> {
        self.params.set_inbound();
        self
    }

    /// Asks for `count` passes at once (a batch); 0 is taken as 1. A batch larger than a QPS
    /// rule's threshold is blocked at once. Under a concurrency rule
    /// ([`FlowRule::concurrency`](crate::rules::FlowRule::concurrency)) the batch holds `count`
    /// places while it is inside, and is blocked if the places held plus `count` exceed the
    /// limit (as Sentinel's `DefaultController` decides); its exit gives them all back.
    #[inline]
    pub fn acquire(mut self, count: u32) -> EntryBuilder<'a> {
        self.count = count.max(1);
        self
    }

    /// Runs the slot chain: `Ok(Entry)` if admitted. On a resource with a throttling rule, a
    /// call whose turn is not yet due **sleeps this thread** until it is: in async code use
    /// [`enter_async`](Self::enter_async), which awaits its turn without blocking the executor.
    #[inline]
    pub fn enter(self) -> Result<Entry, BlockError> {
        let slot = thread_slot();
        let node = crate::registry::node_by_name_cached(self.resource);
        self.teach_names(node);
        enter_in(slot, node, self.count, &self.params.view())
    }

    /// Teaches `node` the parameters' names, if given and it does not know them yet.
    #[inline]
    fn teach_names(&self, node: &ResourceNode) {
        if let Some(names) = self.param_names {
            if !node.knows_param_names() {
                let names: Vec<Option<&str>> = names.iter().copied().map(Some).collect();
                crate::registry::learn_param_names(node, &names);
            }
        }
    }

    /// Runs the slot chain like [`enter`](Self::enter), but a call whose throttling turn is not
    /// yet due **awaits** it on a timer (a tokio timer with the default `tokio` feature) instead
    /// of sleeping the thread, so an executor's worker stays free for other tasks meanwhile.
    ///
    /// The future is `Send` and borrows nothing (the resource is resolved when this is called).
    /// Dropping it while it waits gives back everything the checks reserved for the call.
    ///
    /// ```
    /// # async fn handler() -> Result<(), sentinel_runtime::BlockError> {
    /// use sentinel_runtime::EntryBuilder;
    /// let entry = EntryBuilder::new("doc-async").enter_async().await?;
    /// // ... the guarded work ...
    /// drop(entry);
    /// # Ok(())
    /// # }
    /// ```
    pub fn enter_async(
        self,
    ) -> impl std::future::Future<Output = Result<Entry, BlockError>> + Send + 'static {
        let node = crate::registry::node_by_name(self.resource);
        self.teach_names(node);
        let (count, params) = (self.count, self.params);
        async move {
            let reservation = reserve_with(node, count, false, &params.view())?;
            wait_turn(&reservation).await;
            Ok(reservation.into_entry())
        }
    }
}

/// Enters `node` for `count` passes: runs the slot chain and returns the guard. A throttled call
/// sleeps this thread until its turn (under a [`MockClock`](crate::clock::MockClock), the wait
/// moves the mock clock forward instead).
#[inline]
pub(crate) fn enter(node: &'static ResourceNode, count: u32) -> Result<Entry, BlockError> {
    enter_in(thread_slot_if_assigned(), node, count, &Params::NONE)
}

/// [`enter`] for a caller that read its thread's slot: `slot` is
/// [`thread_slot_if_assigned`] (a thread without its slot yet takes it here) or
/// [`thread_slot`].
#[inline(always)]
pub(crate) fn enter_in(
    slot: usize,
    node: &'static ResourceNode,
    count: u32,
    params: &Params,
) -> Result<Entry, BlockError> {
    let inbound = params.is_inbound();
    if !(node.is_checked() || inbound && system::is_active()) {
        let now = clock::now_nanos();
        count_pass(node, slot, now, count, inbound);
        let ending = Ending::new(params, false);
        return Ok(Entry::unchecked(node, count, now, inbound, ending));
    }
    enter_checked(slot, node, count, params)
}

/// [`enter_in`] through the slot chain (out of line: the unchecked entry above stays small
/// enough to inline into its caller).
#[inline(never)]
fn enter_checked(
    slot: usize,
    node: &'static ResourceNode,
    count: u32,
    params: &Params,
) -> Result<Entry, BlockError> {
    // `move` closures: they capture values, not the addresses of locals. A thread without a
    // hazard word free reads the chain in a call of its own, with these values as arguments:
    // a closure handed to such a call would be passed by address, its values stored on every
    // call for that rare path.
    let slot = crate::sync::assigned(slot);
    // A lone QPS gate the node keeps pinned needs no read of the chain.
    if let Some(gate) = pinned_qps(node, params) {
        return match params.is_inbound() {
            false => enter_lone::<false>(slot, node, gate, count, params, false),
            true => enter_lone::<true>(slot, node, gate, count, params, false),
        };
    }
    node.with_chain_in_or(
        slot,
        move |chain| enter_held(slot, node, &chain, count, params),
        move || enter_unhazarded(slot, node, count, params),
    )
}

/// [`enter_checked`] for a thread without a hazard word free (no slot, or reads nested too
/// deep): the chain read through the shared count of such readers.
#[cold]
#[inline(never)]
fn enter_unhazarded(
    slot: usize,
    node: &'static ResourceNode,
    count: u32,
    params: &Params,
) -> Result<Entry, BlockError> {
    node.with_chain_in(slot, |chain| enter_held(slot, node, &chain, count, params))
}

/// [`enter_checked`] with the chain read.
#[inline(always)]
fn enter_held(
    slot: usize,
    node: &'static ResourceNode,
    chain: &Held<'_, Chain>,
    count: u32,
    params: &Params,
) -> Result<Entry, BlockError> {
    // Each shortcut in two copies, inbound or not, so that the common one (not inbound) tests
    // nothing more for it.
    if let Some(gate) = lone_qps(node, chain, params) {
        return match params.is_inbound() {
            false => enter_lone::<false>(slot, node, gate, count, params, false),
            true => enter_lone::<true>(slot, node, gate, count, params, false),
        };
    }
    if let Some(gate) = lone_hotspot(node, chain, params) {
        let ask = (count, false);
        return match params.is_inbound() {
            false => enter_lone_hot::<Entry, false>(slot, node, chain, gate, ask, params),
            true => enter_lone_hot::<Entry, true>(slot, node, chain, gate, ask, params),
        };
    }
    enter_chain(slot, node, chain, count, params)
}

/// The entry through the stage runner.
#[inline(never)]
fn enter_chain(
    slot: usize,
    node: &'static ResourceNode,
    chain: &Held<'_, Chain>,
    count: u32,
    params: &Params,
) -> Result<Entry, BlockError> {
    // Before the clock is read: the hotspot tables' misses overlap the reading.
    chain.prefetch_params(params);
    let now = clock::now_nanos();
    let mut admission = Admission::default();
    // The entry is built here, as the result: no copy of a larger value on the way out (a
    // copied struct read back whole after narrower writes stalls store forwarding, measured on
    // this path).
    match crate::kinds::check(
        node.target(),
        chain,
        node.counter(),
        now,
        count,
        params,
        &mut admission,
    ) {
        Ok(_) if admission.turn == 0 => {
            count_pass(node, slot, admission.at, count, admission.inbound != 0);
            let ending = Ending::new(params, false);
            Ok(Entry::new(node, count, &mut admission, ending, || {
                Some(chain.to_arc())
            }))
        }
        Ok(slots) => Ok(wait_for_turn(Waiting::new(
            node,
            chain.to_arc(),
            count,
            (admission, slots),
            Ending::new(params, false),
        ))),
        Err(block) => {
            on_block(node, now, count, params, &block);
            Err(block)
        }
    }
}

/// Counts an admitted call's pass on its node (and, if inbound, in the inbound statistics).
#[inline(always)]
fn count_pass(node: &'static ResourceNode, slot: usize, at: u64, count: u32, inbound: bool) {
    if inbound {
        crate::stat::inbound().on_pass_in(slot, at, count);
    }
    node.stats().on_pass_in(slot, at, count);
}

/// Counts a blocked call on its node (and, if inbound, in the inbound statistics).
#[cold]
fn on_block(
    node: &'static ResourceNode,
    now: u64,
    count: u32,
    params: &Params,
    block: &BlockError,
) {
    node.on_block(now, count, block.kind());
    if params.is_inbound() {
        crate::stat::inbound().on_block(now, count, BlockTotals::index_of(block.kind()));
    }
}

/// Waits, without blocking the executor's thread, for a reserved call's throttling turn (at once
/// if it has none). Under a [`MockClock`](crate::clock::MockClock) the mock clock then moves to
/// the turn.
pub(crate) async fn wait_turn(reservation: &Reservation) {
    let wait = reservation.wait_nanos();
    if wait > 0 {
        crate::timer::sleep(std::time::Duration::from_nanos(wait)).await;
        clock::catch_up_mock(reservation.turn());
    }
}

/// Sleeps this thread until a throttled call's turn, then enters it.
#[cold]
#[inline(never)]
fn wait_for_turn(waiting: Waiting) -> Entry {
    clock::sleep_until(waiting.admission.turn);
    Reservation(Inner::Waiting(Box::new(waiting))).into_entry()
}

/// Runs the slot chain without waiting: the admitted call, to be turned into an [`Entry`] once
/// its throttling turn (if any) has come. `cancellable` marks an entry held by a future, which
/// counts as abandoned (not as a verdict) if dropped before it is marked finished.
#[inline]
pub(crate) fn reserve(
    node: &'static ResourceNode,
    count: u32,
    cancellable: bool,
) -> Result<Reservation, BlockError> {
    reserve_with(node, count, cancellable, &Params::NONE)
}

/// [`reserve_with`] for one cancellable inbound pass without parameters (the tower layer's
/// request on a plain configuration): a node without checks (and no system rule in force)
/// is entered inline, as a guarded function's is; any other through [`reserve_with`].
#[cfg(feature = "tower")]
#[inline]
pub(crate) fn reserve_inbound(node: &'static ResourceNode) -> Result<Reservation, BlockError> {
    if !(node.is_checked() || system::is_active()) {
        let slot = thread_slot();
        let now = clock::now_nanos();
        count_pass(node, slot, now, 1, true);
        let ending = Ending::new(&Params::INBOUND, true);
        let entry = Entry::unchecked(node, 1, now, true, ending);
        return Ok(Reservation(Inner::Ready(entry)));
    }
    reserve_with(node, 1, true, &Params::INBOUND)
}

/// [`reserve`] with the entry's parameters.
pub(crate) fn reserve_with(
    node: &'static ResourceNode,
    count: u32,
    cancellable: bool,
    params: &Params,
) -> Result<Reservation, BlockError> {
    let inbound = params.is_inbound();
    let slot = thread_slot();
    if !(node.is_checked() || inbound && system::is_active()) {
        let now = clock::now_nanos();
        count_pass(node, slot, now, count, inbound);
        let ending = Ending::new(params, cancellable);
        let entry = Entry::unchecked(node, count, now, inbound, ending);
        return Ok(Reservation(Inner::Ready(entry)));
    }
    if let Some(gate) = pinned_qps(node, params) {
        let entry = match inbound {
            false => enter_lone::<false>(slot, node, gate, count, params, cancellable),
            true => enter_lone::<true>(slot, node, gate, count, params, cancellable),
        }?;
        return Ok(Reservation(Inner::Ready(entry)));
    }
    node.with_chain_in(slot, move |chain| {
        if let Some(gate) = lone_qps(node, &chain, params) {
            let entry = match inbound {
                false => enter_lone::<false>(slot, node, gate, count, params, cancellable),
                true => enter_lone::<true>(slot, node, gate, count, params, cancellable),
            }?;
            return Ok(Reservation(Inner::Ready(entry)));
        }
        if let Some(gate) = lone_hotspot(node, &chain, params) {
            let ask = (count, cancellable);
            return match inbound {
                false => {
                    enter_lone_hot::<Reservation, false>(slot, node, &chain, gate, ask, params)
                }
                true => enter_lone_hot::<Reservation, true>(slot, node, &chain, gate, ask, params),
            };
        }
        chain.prefetch_params(params);
        let now = clock::now_nanos();
        let mut admission = Admission::default();
        let checked = crate::kinds::check(
            node.target(),
            &chain,
            node.counter(),
            now,
            count,
            params,
            &mut admission,
        );
        match checked {
            Ok(_) if admission.turn == 0 => {
                count_pass(node, slot, admission.at, count, admission.inbound != 0);
                let ending = Ending::new(params, cancellable);
                let entry =
                    Entry::new(node, count, &mut admission, ending, || Some(chain.to_arc()));
                Ok(Reservation(Inner::Ready(entry)))
            }
            Ok(slots) => {
                let ending = Ending::new(params, cancellable);
                let waiting = Waiting::new(node, chain.to_arc(), count, (admission, slots), ending);
                Ok(Reservation(Inner::Waiting(Box::new(waiting))))
            }
            Err(block) => {
                on_block(node, now, count, params, &block);
                Err(block)
            }
        }
    })
}

/// A call admitted by every check, not yet entered: it may have to wait for its throttling turn
/// first. Dropped without [`into_entry`](Reservation::into_entry) (an async caller's future
/// dropped while waiting), it gives back everything the checks reserved.
#[derive(Debug)]
#[must_use = "a Reservation is given back when dropped"]
pub struct Reservation(Inner);

#[derive(Debug)]
enum Inner {
    /// No wait: the entry is made.
    Ready(Entry),
    /// A throttling turn to wait for (rare: boxed, so that the common reservation moves as the
    /// small entry it holds).
    Waiting(Box<Waiting>),
}

#[derive(Debug)]
struct Waiting {
    node: &'static ResourceNode,
    /// The checks that admitted the call, held so that a dropped wait gives back to them.
    chain: Arc<Chain>,
    count: u32,
    admission: Admission,
    /// The custom slots that admitted the call, asked to cancel it if the wait is dropped.
    slots: Option<SlotList>,
    /// How its entry's exit learns of a panic (a guarded sync call or not, held by a future or
    /// not).
    ending: Ending,
    /// The call entered: nothing to give back.
    entered: bool,
}

impl Waiting {
    fn new(
        node: &'static ResourceNode,
        chain: Arc<Chain>,
        count: u32,
        (admission, slots): (Admission, Option<SlotList>),
        ending: Ending,
    ) -> Waiting {
        Waiting {
            node,
            chain,
            count,
            admission,
            slots,
            ending,
            entered: false,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.entered {
            return;
        }
        crate::kinds::cancel(
            self.node.target(),
            &self.chain,
            self.node.counter(),
            self.count,
            std::mem::take(&mut self.admission),
            self.slots.take(),
        );
    }
}

impl Reservation {
    /// How long from now the caller must wait for its throttling turn, in nanoseconds (0: pass
    /// now).
    #[inline]
    pub fn wait_nanos(&self) -> u64 {
        match self.turn() {
            0 => 0,
            turn => turn.saturating_sub(clock::precise_nanos()),
        }
    }

    /// When the caller's turn comes, on the runtime's precise clock (0: at once).
    #[inline]
    pub fn turn(&self) -> u64 {
        match &self.0 {
            Inner::Ready(_) => 0,
            Inner::Waiting(w) => w.admission.turn,
        }
    }

    /// The call passes now: counted as a pass, and guarded by the returned [`Entry`].
    #[inline(always)]
    pub fn into_entry(self) -> Entry {
        match self.0 {
            Inner::Ready(entry) => entry,
            // Out of line: the common reservation (no wait) is only its entry.
            Inner::Waiting(mut w) => enter_after_wait(&mut w),
        }
    }
}

/// The entry of a reservation that waited for its throttling turn: its pass counted now (the
/// wait, dropped after, then gives nothing back).
#[cold]
#[inline(never)]
fn enter_after_wait(w: &mut Waiting) -> Entry {
    w.entered = true;
    let now = clock::now_nanos().max(w.admission.at);
    count_pass(
        w.node,
        thread_slot(),
        now,
        w.count,
        w.admission.inbound != 0,
    );
    let mut admission = std::mem::take(&mut w.admission);
    admission.at = now;
    Entry::new(w.node, w.count, &mut admission, w.ending, || {
        Some(Arc::clone(&w.chain))
    })
}

/// [`Entry::set_error`] was called.
const ERROR: u64 = 1;
/// Held by a future that has not finished: dropped in this state, the call was abandoned.
const PENDING: u64 = 2;
/// The call took a place in the node's concurrency counter.
const COUNTED: u64 = 4;
/// The call is inbound traffic: its exit is counted in the inbound statistics too.
const INBOUND: u64 = 8;
/// The call took a place in the system rules' count of inbound calls inside.
const SYSTEM_COUNTED: u64 = 16;
/// The exit asks whether the thread is unwinding: a panic then is the call's own. Not set for
/// an entry made while the thread was already unwinding from a panic (a call in a `Drop`: the
/// exit could not tell that panic from one of the call's own, which could only be one caught
/// inside that `Drop`; such an entry is judged by [`ERROR`] alone), nor for a guarded
/// function's sync call, which has [`RUNNING`] instead.
const WATCH_PANIC: u64 = 32;
/// The entry holds places in hotspot concurrency counters.
const HELD: u64 = 64;
/// A guarded function's sync call whose body has not returned: its generated code clears this
/// when the body returns ([`Entry::returned`]), so an exit that finds it set is the body's
/// unwinding (a panic of the call's own).
const RUNNING: u64 = 128;
/// The entry's count of passes is the flags word's upper half.
const COUNT_SHIFT: u32 = 32;

/// How the exit of an entry learns that the call ended by a panic of its own (see the flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// Held by a future, which marks it finished ([`PENDING`]).
    cancellable: bool,
    /// A guarded function's sync call, which marks its body's return ([`RUNNING`]).
    guarded: bool,
}

impl Ending {
    /// The ending of an entry with `params` (a guarded function's sync call or not), held by a
    /// future or not.
    #[inline(always)]
    pub(crate) fn new(params: &Params, cancellable: bool) -> Ending {
        Ending {
            cancellable,
            guarded: params.is_guarded() && !cancellable,
        }
    }

    /// The flags that tell it, read now.
    #[inline(always)]
    fn flags(self) -> u64 {
        let mut flags = 0;
        if self.cancellable {
            flags |= PENDING;
        }
        if self.guarded {
            flags |= RUNNING;
        } else if !std::thread::panicking() {
            flags |= WATCH_PANIC;
        }
        flags
    }
}

/// An admitted call. Dropping it records the exit, exactly once, whatever path leaves the guarded
/// code: the call's concurrency is released, it is counted as complete with its response time,
/// and as an error if [`set_error`](Entry::set_error) was called or the thread is unwinding from
/// a panic (one that started after the entry: a call made while an earlier panic unwinds, in a
/// `Drop`, is judged by `set_error` alone; a `#[sentinel]` function's body that panics is an
/// error there too). An async future that holds the entry and is dropped half-way releases it
/// too.
///
/// A guarded `async fn` whose future is dropped before it finishes counts as complete but
/// neither as an error nor as a success for circuit breakers: if it was a half-open probe, the
/// probe's place is given back. If it had already run longer than a slow-request breaker's
/// `max_rt`, it counts as slow there (whatever cut it short, it was slow).
#[derive(Debug)]
#[must_use = "the call counts as finished as soon as the Entry is dropped"]
pub struct Entry {
    // Only 8-byte fields (see `enter`), five of them.
    node: &'static ResourceNode,
    start: u64,
    probe: ProbeTicket,
    /// The flags above in the lower half, the count of passes in the upper half (set once).
    flags: AtomicU64,
    /// Places taken in hotspot concurrency counters (rare: boxed, so the common entry stays
    /// small). Dropped by the exit that gives them back (the common exit, with none, runs no
    /// drop code for it).
    held: ManuallyDrop<Option<Box<HotHeld>>>,
}

/// Places an entry took in hotspot concurrency counters, with the checks that own them.
#[derive(Debug)]
struct HotHeld {
    chain: Arc<Chain>,
    places: Vec<(usize, Place)>,
}

impl Entry {
    /// The entry of a call that holds nothing for any check: no chain on its node, or a lone
    /// gate's pass (see `lone`), admitted at `at`.
    #[inline(always)]
    fn unchecked(
        node: &'static ResourceNode,
        count: u32,
        at: u64,
        inbound: bool,
        ending: Ending,
    ) -> Entry {
        let mut flags = ending.flags();
        if inbound {
            flags |= INBOUND;
        }
        flags |= u64::from(count) << COUNT_SHIFT;
        Entry {
            node,
            start: at,
            probe: ProbeTicket::default(),
            flags: AtomicU64::new(flags),
            held: ManuallyDrop::new(None),
        }
    }

    #[inline]
    fn new(
        node: &'static ResourceNode,
        count: u32,
        admission: &mut Admission,
        ending: Ending,
        chain: impl FnOnce() -> Option<Arc<Chain>>,
    ) -> Entry {
        let mut flags = ending.flags();
        if admission.counted != 0 {
            flags |= COUNTED;
        }
        if admission.inbound != 0 {
            flags |= INBOUND;
        }
        if admission.system.counted {
            flags |= SYSTEM_COUNTED;
        }
        // Rate passes hold nothing once admitted; only concurrency places are given back.
        let held = if admission.hot.holds_places() {
            hot_held(admission, chain)
        } else {
            None
        };
        if held.is_some() {
            flags |= HELD;
        }
        flags |= u64::from(count) << COUNT_SHIFT;
        Entry {
            node,
            start: admission.at,
            probe: admission.probe,
            flags: AtomicU64::new(flags),
            held: ManuallyDrop::new(held),
        }
    }

    /// Marks the call as failed: it is counted as an error when the entry is dropped (and by
    /// circuit breakers).
    pub fn set_error(&self) {
        self.flags.fetch_or(ERROR, Ordering::Relaxed);
    }

    /// A guarded function's sync body returned (it did not unwind): see [`RUNNING`]. Through
    /// `&mut`, a plain write (no locked instruction).
    #[inline(always)]
    pub(crate) fn returned(&mut self) {
        *self.flags.get_mut() &= !RUNNING;
    }

    /// The future holding this entry ran to completion (it was not abandoned).
    pub(crate) fn finish(&self) {
        self.flags.fetch_and(!PENDING, Ordering::Relaxed);
    }

    /// [`set_error`](Entry::set_error) through `&mut` (an entry held by value): no other
    /// reference can race, so a plain write does it without a locked instruction.
    #[cfg(feature = "tower")]
    #[inline]
    pub(crate) fn set_error_mut(&mut self) {
        *self.flags.get_mut() |= ERROR;
    }

    /// [`finish`](Entry::finish) through `&mut`, as [`set_error_mut`](Entry::set_error_mut).
    #[cfg(feature = "tower")]
    #[inline]
    pub(crate) fn finish_mut(&mut self) {
        *self.flags.get_mut() &= !PENDING;
    }

    /// The entered resource's name.
    pub fn resource(&self) -> &'static str {
        self.node.name()
    }

    /// The entered resource's node.
    pub fn node(&self) -> &'static ResourceNode {
        self.node
    }

    /// When the call was admitted, on the runtime clock (nanoseconds): the time its pass is
    /// recorded at in the statistics and counted at by the QPS rules. Usually the clock's
    /// reading at the entry; later if a rule's window had already moved past that reading (the
    /// thread was delayed between reading the clock and the check).
    pub fn start_nanos(&self) -> u64 {
        self.start
    }
}

/// The hotspot places of `admission`, held with an owned handle on `chain`.
#[cold]
fn hot_held(
    admission: &Admission,
    chain: impl FnOnce() -> Option<Arc<Chain>>,
) -> Option<Box<HotHeld>> {
    let places: Vec<(usize, Place)> = admission.inside().collect();
    if places.is_empty() {
        return None;
    }
    let chain = chain()?;
    Some(Box::new(HotHeld { chain, places }))
}
