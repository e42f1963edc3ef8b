//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one.

use std::hash::Hash;

use crate::clock;
use crate::error::BlockError;
use crate::node::ResourceNode;
use crate::param::{ParamBuf, Params};
use crate::slot::{self, system, Admission, Chain};
use crate::sync::{thread_slot, thread_slot_if_assigned, Held};
use guard::Ending;
use lone::{enter_lone, enter_lone_hot, lone_hotspot, lone_qps, pinned_qps};
use record::{count_pass, on_block};
use reservation::{wait_for_turn, Inner, Waiting};

mod exit;
mod guard;
mod lone;
mod record;
mod reservation;

pub use guard::Entry;
pub(crate) use reservation::wait_turn;
pub use reservation::Reservation;

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
    match slot::check(
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
        let checked = slot::check(
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
