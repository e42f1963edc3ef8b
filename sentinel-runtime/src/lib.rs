//! Sentinel-style flow control for Rust: put one attribute on any function, sync or async.
//!
//! ```
//! use sentinel_runtime::{sentinel, BlockError};
//!
//! #[sentinel(resource = "orders", qps = 2, fallback = orders_busy)]
//! fn place_order(id: u64) -> String {
//!     format!("order {id} placed")
//! }
//!
//! fn orders_busy(id: u64, err: BlockError) -> String {
//!     format!("order {id} refused: {err}")
//! }
//!
//! # let _clock = sentinel_runtime::clock::MockClock::install();
//! assert_eq!(place_order(1), "order 1 placed");
//! assert_eq!(place_order(2), "order 2 placed");
//! assert!(place_order(3).starts_with("order 3 refused")); // at most 2 per second
//! ```
//!
//! The attribute (`#[sentinel]`, feature `macros`) builds a `static` resource node on the first call and wraps the
//! body in an [`Entry`] guard: every call runs the resource's checks (flow rules, circuit
//! breakers, hotspot limits, your own slots), and the guard's drop records the exit (response
//! time, error, concurrency) on every path, panics and dropped futures included. Each guarded
//! call costs one entry and one exit: no lock, no map lookup, no allocation.
//!
//! Code that is not a function uses [`entry`] / [`EntryBuilder`]; rules change at run time
//! through [`rules`]; [`metrics`] reads the statistics.
//!
//! ```
//! use sentinel_runtime::{entry, metrics, rules::{self, FlowRule}};
//!
//! rules::load_flow_rules(vec![FlowRule::qps("crate-doc", 2.0)])?;
//! let first = entry("crate-doc");
//! let second = entry("crate-doc");
//! let third = entry("crate-doc");
//! assert!(first.is_ok() && second.is_ok());
//! assert!(third.is_err()); // at most 2 per second
//! drop((first, second));
//! assert_eq!(metrics::snapshot("crate-doc").unwrap().block_qps, 1.0);
//! # rules::load_flow_rules(vec![])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Cargo features
//!
//! * `macros` (default): re-exports the `#[sentinel]` attribute.
//! * `tokio` (default): a throttled `async fn` or [`EntryBuilder::enter_async`] awaits its turn
//!   on a tokio timer; without it, on a helper thread per wait.
//! * `rule-files` (default): rules in JSON, YAML or TOML files, with Sentinel's JSON names too
//!   (`rules::load_file`, `rules::watch_file`).
//! * `tower`: `tower::SentinelLayer` for axum, tonic and hyper services, and
//!   `tower::SentinelClientLayer` for the calls a process makes through tower clients
//!   (hyper-util's client, tonic channels).
//! * `reqwest`: `reqwest::SentinelMiddleware`, a reqwest-middleware middleware for the calls a
//!   process makes with reqwest.
//! * `prometheus`: `metrics::prometheus`, a `prometheus-client` collector read at scrape time.
//! * `tracing`: rate-limited `tracing` events on target `sentinel` (blocks at `INFO`,
//!   `metrics::set_block_event_level`; breaker transitions and refused rules at `WARN`).
//! * `dashboard`: `dashboard::Dashboard`, a live page served by the process itself (loopback,
//!   behind a token).
//!
//! # Promises
//!
//! * **Exact admission.** No number of threads gets more than a rule allows: passes are reserved
//!   atomically, for any batch size ([`EntryBuilder::acquire`]), and a call counts in the window
//!   its pass is recorded in, even if its thread was delayed after reading the clock.
//! * **Exact statistics.** Counters and response-time sums are `u64`; windows store their periods
//!   in full, so they are right after any idle gap the clock can express.
//! * **Reloads never forget.** A reloaded rule counts what the resource already admitted in its
//!   window and the calls already inside ([`rules`]).
//! * **Bounded memory.** Resources created by name are capped ([`registry`]); reloads free what
//!   they replace.
//! * **Nothing leaks on panic.** Whatever user code panics (a check slot, a listener, the body),
//!   everything reserved for the call is given back exactly once ([`slot`]).
//!
//! # Layers
//!
//! Bottom up, each using only those below it: [`clock`], the errors and the list of block
//! kinds, `sync` (thread slots, hazard-pointer publication, the lock-free name table); [`stat`]
//! ([`stat::LeapArray`], per-thread statistics shards); the shared checks of [`slot`] (which see
//! a resource's name and statistics, never its node); the rules' shared data; `kinds/`, one
//! folder per kind of rule (its rule, check, stage and file shape) and the table of kinds that
//! derives the chain; [`ResourceNode`] (statistics plus the checks in force); the [`registry`]
//! of nodes by name; the rule loader; [`rules`], files and sources; [`Entry`] and the entry
//! functions; [`metrics`] and the integrations. `ARCHITECTURE.md` has the map.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block_kinds;
pub mod breaker;
pub mod clock;
pub mod cluster;
pub mod context;
#[cfg(feature = "dashboard")]
#[cfg_attr(docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
mod entry;
mod error;
#[cfg(feature = "tracing")]
mod events;
pub mod fallback;
mod kinds;
mod manager;
pub mod metrics;
mod node;
#[cfg(any(feature = "tower", feature = "reqwest"))]
mod outbound;
pub mod outlier;
mod param;
pub mod registry;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod reqwest;
mod rule_data;
pub mod rules;
pub mod slot;
pub mod stat;
mod sync;
/// The CPU usage and load the system rules read (a sampler thread while one is loaded).
pub(crate) mod system_load;
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[cfg(test)]
mod model_tests;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use entry::{entry, Entry, EntryBuilder};
pub use error::{BlockError, BlockKind, RuleError};
pub use node::ResourceNode;

/// Guards a function with a flow-control resource: `#[sentinel(resource = "x", qps = 100,
/// fallback = f)]` on any `fn`, `async fn` or method.
///
/// ```
/// use sentinel_runtime::{sentinel, BlockError};
///
/// #[sentinel(resource = "doc-orders", qps = 2, fallback = orders_busy)]
/// fn place_order(id: u64, qty: u32) -> String {
///     format!("order {id} x{qty}")
/// }
///
/// fn orders_busy(id: u64, _qty: u32, err: BlockError) -> String {
///     format!("order {id} rejected: {err}")
/// }
///
/// # let _clock = sentinel_runtime::clock::MockClock::install();
/// assert_eq!(place_order(1, 5), "order 1 x5");
/// assert_eq!(place_order(2, 5), "order 2 x5");
/// assert_eq!(
///     place_order(3, 5),
///     "order 3 rejected: resource `doc-orders` blocked by flow rule (qps 2)"
/// );
/// ```
///
/// # What it expands to
///
/// A `static`, lazily built resource node (the attribute's rules are that resource's defaults,
/// see [Rules loaded at run time](#rules-loaded-at-run-time)) and an entry guard around the body.
/// The example above is, written by hand:
///
/// ```
/// # use sentinel_runtime::BlockError;
/// # fn orders_busy(id: u64, _qty: u32, err: BlockError) -> String { String::new() }
/// fn place_order(id: u64, qty: u32) -> String {
///     use sentinel_runtime::__private::{call_once, DefaultRule, StaticNode}; // not a stable API
///     static NODE: StaticNode = StaticNode::new("doc-orders", &[DefaultRule::Qps(2.0)]);
///     match NODE.enter() {
///         Ok(entry) => {
///             // admitted: the body runs while `entry` lives, in a closure so that its
///             // `return`s and `?`s come back here
///             let result = call_once(move || -> String { format!("order {id} x{qty}") });
///             // (for a `Result`, of any spelling: `if result.is_err() { entry.set_error() }`)
///             result // the guard drops after the body
///         }
///         Err(blocked) => {
///             // the fallback's expected signature, checked where `fallback = ...` is written;
///             // its last parameter `BlockError` or `&BlockError`, as the fallback declares it
///             let fallback: fn(u64, u32, _) -> String = orders_busy;
///             fallback(id, qty, sentinel_runtime::fallback::BlockArg::block_arg(&blocked))
///         }
///     }
/// }
/// ```
///
/// Each call costs one entry and one exit: no rule building, no allocation, no map lookup.
/// The exit is recorded on every path: return, `?`, panic (counted as an error), and an async
/// future dropped half-way (the guard lives inside the future).
///
/// # Arguments
///
/// * **`resource = "name"`**: the resource's name (a non-empty string literal). Default: the
///   function's module path and name, `concat!(module_path!(), "::", "place_order")`. Several
///   functions may share one name: they are one resource, with one set of statistics, and every
///   definition's rules apply to every call of any of them (a rule two definitions both write
///   counts once).
/// * **`qps = N`**: at most `N` calls per second (integer or float literal, > 0, at most
///   2147483647): a [`FlowRule::qps`](rules::FlowRule::qps) default.
/// * **`concurrency = N`**: at most `N` calls inside at once (integer literal, 1 to
///   2147483647): a [`FlowRule::concurrency`](rules::FlowRule::concurrency) default.
/// * **`concurrency = "adaptive"`**: a limit that finds itself from the measured latency, with
///   the default [`AdaptiveConcurrency`](rules::AdaptiveConcurrency) settings: a
///   [`FlowRule::adaptive_concurrency`](rules::FlowRule::adaptive_concurrency) default. Other
///   settings come from a loaded rule for the resource (a rule file's `adaptive:` map), which
///   replaces the attribute's.
/// * **`fallback = path`**: called instead of the body when the call is blocked. It takes the
///   function's arguments in order, with exactly their types (the receiver first, for methods:
///   `&self`, `&mut self` or `self` as the function has it), then the [`BlockError`] by value
///   or by reference (`&BlockError`, for a fallback that only reads it:
///   `clippy::needless_pass_by_value` then has nothing to say), and returns the function's
///   return type: for `fn greet(&self, name: &str) -> String` it is
///   `fn busy(&self, name: &str, err: &BlockError) -> String`. A wrong signature fails to
///   compile at `fallback = ...`, naming the expected one (`expected fn pointer
///   fn(&Greeter, &str, _) -> String`, `_` the block). For an `async fn` it may be an
///   `async fn` (awaited) or a plain `fn`. `fallback = Self::busy` works inside `impl` blocks;
///   so does a generic function, whose type parameters are inferred. Arguments may be
///   irrefutable patterns (`Path(id): Path<u64>`, `(a, b): (u8, u8)`, `Point { x, y }: Point`,
///   as axum handlers write extractors): the fallback gets the argument whole, the body
///   destructured ([`fallback`] has the traits these forms rest on).
/// * **Durations** (`window`, `warm_up`, `max_wait`, a breaker's `slow_rt`, `window` and
///   `recovery`, a hotspot's `window` and `max_wait`) are strings read by the rule files'
///   grammar: numbers with units `ns`, `us`, `ms`, `s`, `m`, `h`, `d`, summed and with
///   fractions (`"1m30s"`, `"1.5s"`, `"1d"`, `"1_500ms"`), in whole milliseconds above zero. A
///   bare number (`window = 500`, `"500"`) is refused: write its unit (rule files read an
///   integer as milliseconds).
/// * **`window = "1m"`**, **`strict = true`**: the `qps` rule's window (then `qps` counts calls
///   per window: `qps = 100, window = "1m"` is 100 a minute) and the strict window mode (see
///   [`rules::FlowRule`]).
/// * **`warm_up = "10s"`** (at most 24 h), **`cold_factor = 3`** (greater than 1, at most 100):
///   the `qps` rule warms up from cold, starting at `qps / cold_factor` (default 3) and reaching
///   `qps` after the warm-up period.
/// * **`max_wait = "500ms"`** (at most 1 h): the `qps` rule throttles instead of rejecting:
///   calls pass `1 / qps` apart, waiting at most `max_wait` for their turn (a sync caller
///   sleeps; an `async fn` awaits a tokio timer, never blocking the executor's thread).
/// * **`relate = "writes"`**: the `qps` rule counts the passes of the resource `writes` instead.
/// * **`breaker(...)`**: a circuit breaker ([`rules::CircuitBreakerRule`]) as a default. One
///   strategy per `breaker(...)`, several `breaker(...)` allowed:
///   `breaker(error_ratio = 0.5, ...)`, `breaker(error_count = 20, ...)`, or
///   `breaker(slow_rt = "200ms", slow_ratio = 0.5, ...)`; then `recovery = "5s"` (required: how
///   long it stays open; at most 24 h), and optionally `min_requests = 10` (the fewest calls in
///   the window before it may open; default 5, at most 1000000000), `window = "10s"` (the
///   statistics window; default 1 s in 10 buckets), `probes = 3` (the calls admitted
///   half-open; default 1, at most 1000). At most 8 `breaker(...)` per function.
///   Durations are string literals with the units `ms`, `s`, `m`, `h`, checked at compile time;
///   a `window` (flow or breaker) is at most 4294967295 ms and has 10 buckets when 10 divides
///   its milliseconds, else 1.
/// * **`hotspot(param = user_id, qps = 10)`**: a per-value limit on one argument
///   ([`rules::HotspotRule`]): each distinct value of `user_id` gets its own limit. Exactly one
///   of `qps = N` (calls per window per value; with `burst = 5`, extra calls from idle;
///   `window = "1s"`, whole milliseconds up to 24 h; `max_wait = "100ms"`, at most 1 h, to
///   wait for a value's turn instead of being blocked; `strict = true`, at most `qps` calls of
///   a value in any interval of the window's length, see [`rules::HotspotRule::strict`]) or
///   `concurrency = N` (calls inside at once per value); `capacity = 50000` (`1..=16777216`, default 16384) bounds how many values
///   are tracked. Several `hotspot(...)` allowed, at most 8. The argument's type must implement
///   `Hash`; a block is [`BlockKind::HotParam`].
/// * **`params = [user_id, region]`**: passes these arguments as hotspot parameters without a
///   limit of the attribute's own, for [`rules::HotspotRule`]s loaded at run time.
/// * **`shadow = true`**: every rule the attribute declares (`qps`, `concurrency`,
///   `breaker(...)`, `hotspot(...)`) is a shadow rule: evaluated with its own state, and a call
///   it would refuse goes on and is counted (`metrics::snapshot(..).shadow_block_total`),
///   nothing is refused, delayed or taken (see [`rules::FlowRule::shadow`]). A loaded rule
///   without `shadow` enforces the same limit and keeps its state. `shadow` without a rule
///   fails to compile, and so does a value other than `true` or `false`. The same without the
///   attribute: `rules::load_flow_rules(vec![FlowRule::qps("x", 10.0).shadow(true)])`.
/// * **`is_error = path`**: a `fn(&E) -> bool` deciding which `Err` values of a `Result`
///   function count as errors (by default all do), like Sentinel's `exceptionsToIgnore`. `E` is
///   the error type of the `Result`, however it is spelled (an alias works).
/// * **`crate = path`**: where this crate is, for a renamed dependency (default
///   `::sentinel_runtime`).
///
/// `#[sentinel]` with no arguments is valid: statistics only, under the default name.
///
/// ```
/// use sentinel_runtime::{sentinel, BlockError};
///
/// #[derive(Debug, PartialEq)]
/// enum PayError { Declined, Timeout, Busy }
/// impl From<BlockError> for PayError {
///     fn from(_: BlockError) -> Self { PayError::Busy }
/// }
/// fn is_failure(e: &PayError) -> bool {
///     *e == PayError::Timeout // a declined card is an answer, not a failure
/// }
///
/// #[sentinel(
///     resource = "doc-pay",
///     is_error = is_failure,
///     breaker(error_count = 2, min_requests = 1, recovery = "5s")
/// )]
/// fn pay(outcome: Result<(), PayError>) -> Result<(), PayError> {
///     outcome
/// }
///
/// # let _clock = sentinel_runtime::clock::MockClock::install();
/// assert_eq!(pay(Err(PayError::Declined)), Err(PayError::Declined)); // not counted
/// assert_eq!(pay(Err(PayError::Timeout)), Err(PayError::Timeout));
/// assert_eq!(pay(Err(PayError::Timeout)), Err(PayError::Timeout)); // 2 errors: opens
/// assert_eq!(pay(Ok(())), Err(PayError::Busy));
/// ```
///
/// # Without a fallback
///
/// A function returning a `Result<T, E>` whose `E` implements `From<BlockError>` returns
/// `Err(E::from(block_error))` when blocked; `std::io::Error` implements `From<BlockError>`.
/// The type system decides what is a `Result`, not the name written: `io::Result<T>`,
/// `anyhow::Result<T>`, a crate's own `type ApiResult<T> = Result<T, AppError>` all work,
/// and a type that is merely named `Result` is not one. Any other return type needs a
/// fallback: compilation fails at the return type ("#[sentinel] needs `fallback = ...` here: a
/// blocked call must still return a `u32`"), as does a `Result` whose error type lacks
/// `From<BlockError>`.
///
/// For every spelling of `Result`, an `Err` the body returns counts as an error in the
/// statistics (and for the breakers); `is_error` narrows that down.
///
/// ```
/// use sentinel_runtime::{sentinel, BlockError};
///
/// #[derive(Debug)]
/// enum AppError { Busy(BlockError) }
/// impl From<BlockError> for AppError {
///     fn from(e: BlockError) -> Self { AppError::Busy(e) }
/// }
/// type ApiResult<T> = Result<T, AppError>;
///
/// #[sentinel(resource = "doc-lookup", concurrency = 1)]
/// fn lookup(key: &str) -> ApiResult<usize> {
///     Ok(key.len()) // an `Err` returned here counts as an error in the statistics
/// }
///
/// assert_eq!(lookup("abc").unwrap(), 3);
/// ```
///
/// # Returning `impl Trait`
///
/// A function returning `impl Trait` (axum's `impl IntoResponse`, say) still returns one
/// concrete type, and a blocked call must return that same type. A fallback declared
/// `-> impl Trait` returns another (opaque) type, which is refused at `fallback = ...` ("the
/// fallback returns `impl IntoResponse`, but the guarded function's body returns `String`"):
/// declare the fallback with the body's concrete type.
///
/// ```
/// use sentinel_runtime::{sentinel, BlockError};
///
/// trait IntoResponse {}
/// impl IntoResponse for String {}
///
/// #[sentinel(resource = "doc-handler", qps = 100, fallback = handler_busy)]
/// fn handler(name: &str) -> impl IntoResponse {
///     format!("hello {name}")
/// }
///
/// fn handler_busy(_name: &str, _err: BlockError) -> String { // not `impl IntoResponse`
///     "try again later".to_owned()
/// }
/// # let _ = handler("doc");
/// ```
///
/// # Hotspot parameters and their indexes
///
/// The arguments named by `params = [...]` and `hotspot(param = ...)` are the call's hotspot
/// parameters, **indexed in the order of their first mention** in the attribute, from 0: with
/// `params = [user_id, region], hotspot(param = tenant, qps = 5)`, `user_id` is index 0,
/// `region` 1 and `tenant` 2; with `hotspot(param = tenant, ...), params = [user_id]`, `tenant`
/// is 0. A loaded [`rules::HotspotRule`] names its parameter by that index (`param_index`). At
/// most 8 parameters. Each value is hashed as [`EntryBuilder::param`] hashes it: a `&str` and a
/// `String` argument hash alike, so they match rule exceptions and rule-file exceptions (which
/// are strings); a number does not match its decimal string.
///
/// ```
/// use sentinel_runtime::{rules::{self, HotspotRule}, sentinel, BlockError, BlockKind};
///
/// #[sentinel(resource = "doc-hot-orders", params = [region], hotspot(param = user_id, qps = 2))]
/// fn order(user_id: u64, region: &str) -> Result<(), BlockError> {
///     let _ = (user_id, region);
///     Ok(())
/// }
///
/// # let _clock = sentinel_runtime::clock::MockClock::install();
/// assert!(order(1, "eu").is_ok() && order(1, "eu").is_ok());
/// assert_eq!(order(1, "eu").unwrap_err().kind(), BlockKind::HotParam); // 2 a second per user
/// assert!(order(2, "eu").is_ok());
/// // `region` is index 0 (first mentioned), `user_id` index 1.
/// rules::load_hotspot_rules(vec![HotspotRule::qps("doc-hot-orders", 0, 0.0).exception("us", 5.0)])?;
/// assert!(order(3, "eu").is_err());
/// assert!(order(3, "us").is_ok());
/// # rules::load_hotspot_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
///
/// # Rules loaded at run time
///
/// The attribute's rules are the resource's defaults. Loading rules of one kind for the
/// resource ([`rules::load_flow_rules`] for `qps` and `concurrency`,
/// [`rules::load_circuit_breaker_rules`] for `breaker(...)`, [`rules::load_hotspot_rules`] for
/// `hotspot(...)`) replaces *all* of the attribute's
/// rules of that kind for that resource: with `qps = 100, concurrency = 1` in the attribute and
/// only a QPS rule loaded for the resource, no concurrency limit is in force. The other kind's
/// defaults stay. When the loaded rules no longer name the resource, its defaults are back in
/// force.
///
/// # Async functions and methods
///
/// ```
/// use sentinel_runtime::{sentinel, BlockError};
///
/// struct Inventory { stock: u32 }
///
/// impl Inventory {
///     #[sentinel(resource = "doc-reserve", concurrency = 4, fallback = Self::busy)]
///     async fn reserve(&self, qty: u32) -> bool {
///         qty <= self.stock
///     }
///
///     async fn busy(&self, _qty: u32, _err: BlockError) -> bool {
///         false
///     }
/// }
/// # use std::future::Future;
/// # let inv = Inventory { stock: 3 };
/// # let waker = std::task::Waker::noop();
/// # let mut fut = std::pin::pin!(inv.reserve(2));
/// # assert_eq!(fut.as_mut().poll(&mut std::task::Context::from_waker(&waker)), std::task::Poll::Ready(true));
/// ```
///
/// # Compile-time errors
///
/// Mistakes are reported together, each at the token that is wrong: an unknown or duplicate
/// argument (a near miss such as `qsp` asks "did you mean `qps`?"; a bare `"orders"` asks for
/// `resource = "orders"`), a literal of the wrong type (`qps = "100"`), a zero, negative or
/// infinite limit, a bad duration (`"5"`, `"5x"`, `"0s"`, `"1500us"`), `cold_factor <= 1`, a shaping option
/// without `qps`, a `breaker(...)` with two strategies, none, a ratio outside `0..=1` or no
/// `recovery`, a `fallback` or `is_error` that is not a path or does not match the function, a
/// missing fallback, a `const fn`, a hotspot parameter that names no argument or whose type
/// is not `Hash`, a `hotspot(...)` with both `qps` and `concurrency`, a fallback whose last
/// parameter is neither `BlockError` nor `&BlockError`, a `Result` whose error type does not
/// implement `From<BlockError>` without a fallback, a second `#[sentinel]` on one function (put
/// every rule in one attribute), or the attribute on something other than a function. Every
/// value the run-time rule validation would refuse is refused here, so no default rule can be
/// dropped when its node is built:
///
/// | argument | compile-time limit |
/// |---|---|
/// | `qps` | greater than 0, at most 2147483647 |
/// | `concurrency` | 1 to 2147483647 |
/// | `max_wait` | at most 1 h |
/// | `warm_up` | at most 24 h |
/// | `cold_factor` | greater than 1, at most 100 |
/// | `window` (flow and breaker) | 1 ms to 4294967295 ms |
/// | `recovery` | 1 ms to 24 h |
/// | `slow_rt` | 1 ms to 4294967295 ms |
/// | `error_ratio`, `slow_ratio` | 0 to 1 |
/// | `error_count` | 1 to 4294967295 |
/// | `min_requests` | 1 to 1000000000 |
/// | `probes` | 1 to 1000 |
/// | `hotspot(qps)` | 0 to 2147483647; above 0, at least one call per 292 years |
/// | `hotspot(concurrency)` | 0 to 2147483647 |
/// | `hotspot(burst)` | 0 to 2147483647, and `qps + burst` calls of `window / qps` within 292 years (at most 106750 with `qps = 1, window = "24h"`) |
/// | `hotspot(window)` | 1 ms to 24 h |
/// | `hotspot(max_wait)` | at most 1 h |
/// | `hotspot(capacity)` | 1 to 16777216 |
/// | `hotspot(burst)` with `strict = true` | below `qps` (its whole calls, at least 1) |
///
/// The function is still emitted beside the errors, so IDE features keep working.
///
/// A fallback's signature is checked as a function pointer where one can be written (not for
/// an `async fn`, whose fallback may be async or not, nor with `impl Trait` arguments, an
/// `extern` ABI, a receiver such as `self: Pin<&mut Self>`, or a `&self` method that both takes
/// another borrowed argument and returns a type hiding a lifetime, like `Iter<u8>` for
/// `Iter<'_, u8>`); elsewhere the fallback is called directly and rustc reports the call.
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use sentinel_runtime_macros::sentinel;

/// The README's Rust snippets, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
