//! Support for the code `#[sentinel]` generates. **Not a stable API**: anything here may change
//! in any release; call the documented API instead.

use std::sync::OnceLock;

use once_cell::race::OnceRef;

pub use crate::entry::{Entry, Reservation};
pub use crate::error::BlockError;

pub use crate::kinds::circuit_breaker::attribute::{BreakerKind, BreakerSpec};
use crate::kinds::defaults::Defaults;
pub use crate::kinds::flow::attribute::FlowSpec;
use crate::kinds::flow::rule::FlowRule;
pub use crate::kinds::hotspot::attribute::HotspotSpec;
use crate::node::ResourceNode;
use crate::param::Params;

/// A rule written in the attribute, in a form a `static` can hold.
#[derive(Clone, Copy, Debug)]
pub enum DefaultRule {
    /// `qps = N`.
    Qps(f64),
    /// `concurrency = N`.
    Concurrency(u32),
    /// `concurrency = "adaptive"`.
    AdaptiveConcurrency,
    /// `qps = N` with shaping options (`window`, `strict`, `warm_up`, `max_wait`, `relate`).
    Flow(FlowSpec),
    /// `breaker(...)`.
    Breaker(BreakerSpec),
    /// `hotspot(...)`.
    Hotspot(HotspotSpec),
}

/// The keyed 64-bit hash of a parameter value of the attribute's `params` or `hotspot(...)`:
/// the same hash [`EntryBuilder::param`](crate::EntryBuilder::param) takes.
#[inline]
pub fn param_hash<T: ParamValue + ?Sized>(value: &T) -> u64 {
    crate::param::hash(value)
}

/// A value a hotspot limit can count: anything `Hash`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a hotspot parameter: it does not implement `Hash`",
    label = "this argument is hashed for `params`/`hotspot(...)`, but `{Self}` is not `Hash`",
    note = "each distinct value is limited by its hash: derive or implement `Hash` for `{Self}`, or name another argument"
)]
pub trait ParamValue: std::hash::Hash {}

impl<T: std::hash::Hash + ?Sized> ParamValue for T {}

/// The `static` node of a guarded function: built on its first call, then entered without any
/// lookup, lock or allocation.
#[derive(Debug)]
pub struct StaticNode {
    name: &'static str,
    defaults: &'static [DefaultRule],
    /// The names of the attribute's parameters, by index.
    param_names: &'static [&'static str],
    /// The default rules are shadow rules (`shadow = true`).
    shadow: bool,
    /// The node once built: read with one load on every call.
    ready: OnceRef<'static, ResourceNode>,
    /// Builds the node exactly once (a second caller waits for the first).
    node: OnceLock<&'static ResourceNode>,
}

impl StaticNode {
    /// A node named `name` whose default rules are `defaults`.
    pub const fn new(name: &'static str, defaults: &'static [DefaultRule]) -> StaticNode {
        StaticNode {
            name,
            defaults,
            param_names: &[],
            shadow: false,
            ready: OnceRef::new(),
            node: OnceLock::new(),
        }
    }

    /// The node with its parameters named (`params = [user, region]`: `"user"` is parameter 0),
    /// for hotspot rules that name them.
    pub const fn with_params(mut self, param_names: &'static [&'static str]) -> StaticNode {
        self.param_names = param_names;
        self
    }

    /// The node with its default rules in shadow mode (`shadow = true`): evaluated and counted,
    /// never enforced.
    pub const fn shadow(mut self) -> StaticNode {
        self.shadow = true;
        self
    }

    /// The node, built and registered on the first call.
    #[inline]
    pub fn node(&self) -> &'static ResourceNode {
        match self.ready.get() {
            Some(node) => node,
            None => self.built(),
        }
    }

    /// The node, built by the first caller; then read through `ready`.
    #[cold]
    #[inline(never)]
    fn built(&self) -> &'static ResourceNode {
        let node = *self.node.get_or_init(|| self.init());
        // Every caller sets the same node: a caller that finds it set already is done.
        let _ = self.ready.set(node);
        node
    }

    fn init(&self) -> &'static ResourceNode {
        // The attribute checks every value at compile time against the same limits, so this
        // keeps them all; should one still fail (a limit changed without the attribute), it is
        // reported, never dropped silently, and can never panic here.
        let mut defaults = Defaults::default();
        let (name, shadow) = (self.name, self.shadow);
        for d in self.defaults {
            match d {
                DefaultRule::Qps(t) => defaults.flow.push(FlowRule::qps(name, *t).shadow(shadow)),
                DefaultRule::Concurrency(c) => defaults
                    .flow
                    .push(FlowRule::concurrency(name, *c).shadow(shadow)),
                DefaultRule::AdaptiveConcurrency => defaults
                    .flow
                    .push(FlowRule::adaptive_concurrency(name).shadow(shadow)),
                DefaultRule::Flow(spec) => defaults.flow.push(spec.rule(name).shadow(shadow)),
                DefaultRule::Breaker(spec) => defaults
                    .circuit_breaker
                    .push(spec.rule(name).shadow(shadow)),
                DefaultRule::Hotspot(spec) => defaults.hotspot.push(spec.rule(name).shadow(shadow)),
            }
        }
        for error in defaults.validated() {
            eprintln!("sentinel: a default rule of the attribute was not put in force: {error}");
        }
        let node = crate::manager::defined_node(self.name, &defaults);
        // Also without params: the resource is then known to supply none, and a rule naming
        // one is refused at load.
        let names: Vec<Option<&str>> = self.param_names.iter().copied().map(Some).collect();
        crate::registry::learn_param_names(node, &names);
        node
    }

    /// Enters the node for one pass.
    #[inline(always)]
    pub fn enter(&self) -> Result<Entry, BlockError> {
        crate::entry::enter(self.node(), 1)
    }

    /// Admission for an `async fn`: await [`wait_for_turn`], then
    /// [`Reservation::into_entry`]. The entry counts as abandoned if the future is dropped
    /// before [`finished`] is called on it.
    #[inline]
    pub fn reserve_async(&self) -> Result<Reservation, BlockError> {
        crate::entry::reserve(self.node(), 1, true)
    }

    /// [`enter`](Self::enter) for a guarded function's sync call, whose code calls
    /// [`returned`] on the entry when the body returns: dropped without that, the entry counts
    /// as the body's panic (the exit does not ask whether the thread is unwinding).
    #[inline(always)]
    pub fn enter_guarded(&self) -> Result<Entry, BlockError> {
        crate::entry::enter_in(
            crate::sync::thread_slot_if_assigned(),
            self.node(),
            1,
            &Params::GUARDED,
        )
    }

    /// [`enter_guarded`](Self::enter_guarded) with the entry's parameters, as [`param_hash`]es
    /// in index order.
    #[inline]
    pub fn enter_guarded_with(&self, params: &[u64]) -> Result<Entry, BlockError> {
        let params = Params::of(params).guarded();
        crate::entry::enter_in(
            crate::sync::thread_slot_if_assigned(),
            self.node(),
            1,
            &params,
        )
    }

    /// [`enter_guarded_with`](Self::enter_guarded_with) for an inbound entry (the attribute's
    /// `inbound = true`).
    #[inline]
    pub fn enter_guarded_inbound(&self, params: &[u64]) -> Result<Entry, BlockError> {
        let params = Params::of(params).inbound().guarded();
        crate::entry::enter_in(
            crate::sync::thread_slot_if_assigned(),
            self.node(),
            1,
            &params,
        )
    }

    /// [`reserve_async_with`](Self::reserve_async_with) for an inbound entry.
    #[inline]
    pub fn reserve_async_inbound(&self, params: &[u64]) -> Result<Reservation, BlockError> {
        let params = Params::of(params).inbound();
        crate::entry::reserve_with(self.node(), 1, true, &params)
    }

    /// [`reserve_async`](Self::reserve_async) with the entry's parameters, as [`param_hash`]es
    /// in index order.
    #[inline]
    pub fn reserve_async_with(&self, params: &[u64]) -> Result<Reservation, BlockError> {
        crate::entry::reserve_with(self.node(), 1, true, &Params::of(params))
    }
}

/// Waits, without blocking the executor's thread, for a throttled call's turn. With the
/// `tokio` feature (default) this is a tokio timer; without it, a helper thread wakes the task.
#[inline]
pub async fn wait_for_turn(reservation: &Reservation) {
    crate::entry::wait_turn(reservation).await;
}

/// The guarded sync function's body returned (it did not unwind): see
/// [`StaticNode::enter_guarded`].
#[inline(always)]
pub fn returned(entry: &mut Entry) {
    entry.returned();
}

/// The guarded `async fn`'s body ran to completion.
#[inline]
pub fn finished(entry: &Entry) {
    entry.finish();
}

/// Runs the body of a guarded function that returns a `Result`, so its value can be inspected.
/// Taking `FnOnce` lets the body return borrows of captured `&mut self`.
#[inline(always)]
pub fn call_once<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// The value an async function's fallback returned: a future to await, or a plain value.
/// `Fallback(f).resolve()` picks the inherent method for a future, else [`ResolveValue`].
#[derive(Debug)]
pub struct Fallback<T>(pub T);

impl<F: core::future::Future> Fallback<F> {
    /// An `async fn` fallback: its future.
    #[inline]
    pub fn resolve(self) -> F {
        self.0
    }
}

/// A plain fallback of an async function: its value, ready.
pub trait ResolveValue<T> {
    /// The value as a ready future.
    fn resolve(self) -> core::future::Ready<T>;
}

impl<T> ResolveValue<T> for Fallback<T> {
    #[inline]
    fn resolve(self) -> core::future::Ready<T> {
        core::future::ready(self.0)
    }
}

/// What a blocked call asks of the types around it (documented in the public module).
pub use crate::fallback::{BlockArg, BlockedValue, FromBlockError};

/// A `Result` return type, however it is spelled: what `is_error = f` inspects.
#[diagnostic::on_unimplemented(
    message = "`is_error` decides which `Err` values count as errors, so the function must return a `Result`, not `{Self}`",
    label = "`is_error` needs a `Result` return type",
    note = "remove `is_error`, or return a `Result` (any alias of `Result` works)"
)]
pub trait ResultValue {
    /// The `Err` type.
    type Error;
    /// The `Err` value, if this is one.
    fn error(&self) -> Option<&Self::Error>;
}

impl<T, E> ResultValue for Result<T, E> {
    type Error = E;
    #[inline]
    fn error(&self) -> Option<&E> {
        self.as_ref().err()
    }
}

/// A guarded function's return value, asked whether it is an `Err`:
/// `Outcome(&value).failed()` picks the inherent method for any `Result` (whatever its
/// spelling), else [`NotAResult::failed`], which is `false`.
#[derive(Debug)]
pub struct Outcome<'a, T>(pub &'a T);

impl<T, E> Outcome<'_, Result<T, E>> {
    /// A `Result`: `Err` counts as an error.
    #[inline]
    pub fn failed(&self) -> bool {
        self.0.is_err()
    }
}

/// Any other return value: never an error by itself (a panic still is).
pub trait NotAResult {
    /// `false`.
    #[inline]
    fn failed(&self) -> bool {
        false
    }
}

impl<T> NotAResult for Outcome<'_, T> {}

/// Ties the value of a blocked call to the type the body returned, for functions returning
/// `impl Trait` (whose type the generated code cannot name).
pub struct ReturnSlot<T>(core::marker::PhantomData<fn() -> T>);

impl<T> core::fmt::Debug for ReturnSlot<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ReturnSlot")
    }
}

impl<T> Default for ReturnSlot<T> {
    fn default() -> Self {
        ReturnSlot(core::marker::PhantomData)
    }
}

impl<T> ReturnSlot<T> {
    /// The body's value: fixes `T`.
    #[inline(always)]
    pub fn body(&self, value: T) -> T {
        value
    }

    /// The fallback's value, which must be the body's type.
    #[inline(always)]
    pub fn fallback<F: FallbackValue<T>>(&self, value: F) -> T {
        value.into_value()
    }

    /// Without a fallback: the block (as the error type) as the body's `Result` type.
    #[inline]
    pub fn blocked<E>(&self, error: E) -> T
    where
        T: BlockedValue<E>,
    {
        T::blocked(error)
    }
}

/// The fallback of a function returning `impl Trait` returns the body's concrete type.
#[diagnostic::on_unimplemented(
    message = "the fallback returns `{Self}`, but the guarded function's body returns `{R}`",
    label = "the fallback must return `{R}`",
    note = "a function returning `impl Trait` still returns one concrete type, here `{R}`; a fallback returning `impl Trait` of its own is a different type: declare the fallback `-> {R}`"
)]
pub trait FallbackValue<R> {
    /// The value itself.
    fn into_value(self) -> R;
}

impl<R> FallbackValue<R> for R {
    #[inline(always)]
    fn into_value(self) -> R {
        self
    }
}

/// Puts CPU-usage and load-per-core readings in place of the sampler's (`None`: the sampler's
/// again), so that tests drive the system rules' adaptive check deterministically. Only with the
/// hidden feature `__test-hooks` (this project's own tests).
#[cfg(feature = "__test-hooks")]
pub fn set_system_load(cpu_usage: Option<f64>, load_per_core: Option<f64>) {
    crate::system_load::override_readings(cpu_usage, load_per_core);
}

/// Whether the process's one-time set-up (the `membarrier` registration of the rules' published
/// chains) is done: on Linux it runs before `main`, so no call pays it. Only with the hidden
/// feature `__test-hooks`.
#[cfg(feature = "__test-hooks")]
pub fn one_time_set_up_done() -> bool {
    crate::sync::is_prepared()
}

/// One hotspot rule's per-value table alone, with no entry around it (no statistics, no rule
/// chain): for the project's benchmarks, which compare its cost with a whole guarded call's.
/// Only with the hidden feature `__test-hooks`.
#[cfg(feature = "__test-hooks")]
#[derive(Debug)]
pub struct BenchParamTable {
    table: crate::slot::param_table::ParamTable,
    interval: u64,
    tolerance: u64,
}

#[cfg(feature = "__test-hooks")]
impl BenchParamTable {
    /// A table of `capacity` values (at most 2^24, about 800 MB; more is clamped to it), each
    /// limited to `per_second` calls a second (at least 1).
    pub fn new(capacity: usize, per_second: u32) -> BenchParamTable {
        let capacity = capacity.min(1 << 24);
        let per_second = u64::from(per_second.max(1));
        let interval = 1_000_000_000u64.div_ceil(per_second);
        BenchParamTable {
            table: crate::slot::param_table::ParamTable::new(
                capacity,
                crate::slot::param_table::Full::Evict,
            ),
            interval,
            tolerance: (per_second - 1).saturating_mul(interval),
        }
    }

    /// Hashes `value` as an entry's parameter, reads the runtime clock and admits one call of
    /// the value by the GCRA (what a hotspot check does): `true` if admitted.
    pub fn acquire<T: std::hash::Hash + ?Sized>(&self, value: &T) -> bool {
        let key = crate::param::hash(value);
        // As the entry does: the table's lines asked for before the clock is read.
        self.table.prefetch_key(key);
        let now = crate::clock::now_nanos();
        matches!(
            self.table
                .acquire_rate(key, now, 1, self.interval, self.tolerance, 0),
            crate::slot::param_table::RateDecision::Pass
        )
    }
}
