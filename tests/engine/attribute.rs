//! `#[sentinel]` as users write it: every supported form, driven with the MockClock.
//!
//! Each test installs the MockClock first, which also serialises the tests of this binary.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind};

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("the guarded function has been called")
}

/// A waker that does nothing (`Waker::noop` needs Rust 1.85; the MSRV is 1.80).
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls a future once on a no-op waker.
fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    fut.poll(&mut Context::from_waker(&waker))
}

/// Runs a future to completion on a current-thread runtime.
fn block_on<F: Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
        .block_on(fut)
}

// ---- sync functions and fallbacks ----

#[sentinel(resource = "attr-orders", qps = 2, fallback = orders_busy)]
fn place_order(id: u64, qty: u32) -> String {
    format!("placed {id} x{qty}")
}

fn orders_busy(id: u64, qty: u32, err: BlockError) -> String {
    format!("busy {id} x{qty}: {:?}", err.kind())
}

#[test]
fn the_fallback_gets_the_arguments_and_the_block_error() {
    let _clock = MockClock::install();
    assert_eq!(place_order(1, 2), "placed 1 x2");
    assert_eq!(place_order(2, 3), "placed 2 x3");
    assert_eq!(place_order(3, 4), "busy 3 x4: Flow");
    let s = stats("attr-orders");
    assert_eq!((s.pass_qps, s.block_qps, s.complete_qps), (2.0, 1.0, 2.0));
}

#[derive(Debug, PartialEq)]
enum AppError {
    Busy(BlockKind),
    Parse,
}

impl From<BlockError> for AppError {
    fn from(e: BlockError) -> Self {
        AppError::Busy(e.kind())
    }
}

#[sentinel(resource = "attr-parse", qps = 3)]
fn parse(input: &str) -> Result<u32, AppError> {
    if input.is_empty() {
        return Err(AppError::Parse); // early return behaves as before
    }
    let n: u32 = input.parse().map_err(|_| AppError::Parse)?; // and so does `?`
    Ok(n * 2)
}

#[test]
fn a_result_function_returns_the_block_as_its_error_and_counts_err_as_error() {
    let _clock = MockClock::install();
    assert_eq!(parse("21"), Ok(42));
    assert_eq!(parse(""), Err(AppError::Parse));
    assert_eq!(parse("x"), Err(AppError::Parse));
    assert_eq!(parse("1"), Err(AppError::Busy(BlockKind::Flow)));
    let s = stats("attr-parse");
    assert_eq!((s.pass_qps, s.block_qps, s.error_qps), (3.0, 1.0, 2.0));
}

#[sentinel(resource = "attr-io", concurrency = 1)]
fn read_config(nested: bool) -> std::io::Result<u8> {
    if nested {
        // Inside the only slot, a nested call is blocked and comes back as an io::Error.
        let err = read_config(false).expect_err("the only slot is taken");
        let block = err.get_ref().and_then(|e| e.downcast_ref::<BlockError>());
        assert_eq!(block.map(BlockError::kind), Some(BlockKind::Concurrency));
    }
    Ok(7)
}

#[test]
fn io_result_functions_need_no_fallback() {
    let _clock = MockClock::install();
    assert_eq!(read_config(true).unwrap(), 7);
    assert_eq!(stats("attr-io").concurrency, 0);
}

#[sentinel(resource = "attr-panics", concurrency = 1, fallback = never_called)]
fn explode(code: u8) -> u8 {
    panic!("boom {code}");
}

fn never_called(_code: u8, _err: BlockError) -> u8 {
    0
}

#[test]
fn a_panic_keeps_unwinding_counts_an_error_and_releases_the_slot() {
    let _clock = MockClock::install();
    let caught = catch_unwind(AssertUnwindSafe(|| explode(1)));
    let message = caught.expect_err("the panic propagates");
    assert_eq!(
        message.downcast_ref::<String>().map(String::as_str),
        Some("boom 1")
    );
    let s = stats("attr-panics");
    assert_eq!((s.error_qps, s.concurrency), (1.0, 0));
    assert!(
        catch_unwind(AssertUnwindSafe(|| explode(2))).is_err(),
        "admitted again, not 0"
    );
}

#[sentinel(resource = "attr-rollback")]
fn rollback() -> Result<(), BlockError> {
    Ok(())
}

/// Rolls back when dropped, also while a panic unwinds past it.
struct Transaction;

impl Drop for Transaction {
    fn drop(&mut self) {
        assert_eq!(rollback(), Ok(()));
    }
}

#[test]
fn a_call_that_succeeds_while_another_panic_unwinds_is_no_error() {
    let _clock = MockClock::install();
    let caught = catch_unwind(|| {
        let _tx = Transaction;
        panic!("the request failed");
    });
    assert!(caught.is_err());
    let s = stats("attr-rollback");
    assert_eq!(
        (s.complete_qps, s.error_qps, s.concurrency),
        (1.0, 0.0, 0),
        "the rollback ran to completion: the panic was not its own"
    );
}

#[sentinel]
fn statistics_only(x: u8) -> Result<u8, BlockError> {
    Ok(x)
}

#[test]
fn no_arguments_means_statistics_under_the_default_name() {
    let _clock = MockClock::install();
    for i in 0..5 {
        assert_eq!(statistics_only(i), Ok(i));
    }
    let name = concat!(module_path!(), "::", "statistics_only");
    assert_eq!(name, "engine::attribute::statistics_only");
    assert_eq!(stats(name).pass_qps, 5.0);
}

#[test]
fn loaded_rules_override_the_attribute_and_unloading_restores_it() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("attr-override", 1.0)]).unwrap();
    let calls = || (0..5).filter(|_| overridable().is_ok()).count();
    assert_eq!(calls(), 1, "the loaded qps = 1 wins over the attribute's 4");
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        calls(),
        3,
        "back to the attribute's qps = 4: one of its 4 was used"
    );
}

#[sentinel(resource = "attr-override", qps = 4)]
fn overridable() -> Result<(), BlockError> {
    Ok(())
}

// ---- generics, lifetimes, impl Trait, unsafe ----

#[sentinel(resource = "attr-generic", qps = 100, fallback = first_busy)]
fn first<'a, T>(items: &'a [T], _hint: impl AsRef<str>) -> Option<&'a T>
where
    T: PartialEq,
{
    items.first()
}

fn first_busy<T: PartialEq>(_: &[T], _: impl AsRef<str>, _: BlockError) -> Option<&T> {
    None
}

#[sentinel(resource = "attr-impl-trait", qps = 1, fallback = shown_busy)]
fn shown(n: u8) -> impl std::fmt::Display {
    format!("n={n}")
}

fn shown_busy(_: u8, _: BlockError) -> String {
    "busy".to_owned()
}

/// # Safety
/// `p` must point to a readable `u8`.
#[sentinel(resource = "attr-unsafe", qps = 10, fallback = read_busy)]
unsafe fn read(p: *const u8) -> u8 {
    // SAFETY: the caller guarantees `p` is readable.
    unsafe { *p }
}

unsafe fn read_busy(_: *const u8, _: BlockError) -> u8 {
    0
}

#[test]
fn generic_lifetime_impl_trait_and_unsafe_functions() {
    let _clock = MockClock::install();
    assert_eq!(first(&[3, 4], "hint"), Some(&3));
    assert_eq!(first(&["a"], String::from("h")), Some(&"a"));
    assert_eq!(shown(7).to_string(), "n=7");
    assert_eq!(shown(8).to_string(), "busy");
    let byte = 9u8;
    // SAFETY: `&byte` is a valid pointer to a u8.
    assert_eq!(unsafe { read(&byte) }, 9);
    assert_eq!(
        stats("attr-generic").pass_qps,
        2.0,
        "one node for every instantiation"
    );
}

// ---- methods ----

#[derive(Debug, Default)]
struct Counter {
    hits: Vec<u32>,
}

impl Counter {
    #[sentinel(resource = "attr-ref", qps = 1, fallback = Self::busy_ref)]
    fn peek(&self, at: usize) -> Option<u32> {
        self.hits.get(at).copied()
    }

    fn busy_ref(&self, _at: usize, _: BlockError) -> Option<u32> {
        None
    }

    /// Returns a borrow of `self`: the body's borrow outlives the guard's closure.
    #[sentinel(resource = "attr-mut", qps = 1)]
    fn push(&mut self, v: u32) -> Result<&mut Vec<u32>, BlockError> {
        self.hits.push(v);
        Ok(&mut self.hits)
    }

    #[sentinel(resource = "attr-owned", fallback = Self::busy_owned)]
    fn into_len(self) -> usize {
        self.hits.len()
    }

    fn busy_owned(self, _: BlockError) -> usize {
        usize::MAX
    }

    #[sentinel(resource = "attr-arc", qps = 5, fallback = Self::busy_arc)]
    fn shared(self: Arc<Self>, extra: u32) -> u32 {
        self.hits.iter().sum::<u32>() + extra
    }

    fn busy_arc(self: Arc<Self>, _: u32, _: BlockError) -> u32 {
        0
    }
}

trait Greeter {
    fn greet(&self, name: &str) -> String;
}

impl Greeter for Counter {
    #[sentinel(resource = "attr-trait", qps = 1, fallback = greet_busy)]
    fn greet(&self, name: &str) -> String {
        format!("hello {name}")
    }
}

fn greet_busy(_: &Counter, name: &str, _: BlockError) -> String {
    format!("later {name}")
}

#[test]
fn methods_with_every_receiver_and_trait_impls() {
    let _clock = MockClock::install();
    let mut c = Counter::default();
    c.push(5).unwrap().push(6);
    assert_eq!(c.push(7).unwrap_err().kind(), BlockKind::Flow);
    assert_eq!(c.peek(1), Some(6));
    assert_eq!(
        c.peek(1),
        None,
        "second call blocked: Self::busy_ref answered"
    );
    assert_eq!(c.greet("ann"), "hello ann");
    assert_eq!(c.greet("bob"), "later bob");
    let arc = Arc::new(Counter { hits: vec![1, 2] });
    assert_eq!(arc.clone().shared(10), 13);
    assert_eq!(Counter { hits: vec![1] }.into_len(), 1);
}

// ---- async ----

#[sentinel(resource = "attr-async", concurrency = 1, fallback = fetch_busy)]
async fn fetch(key: u32, gate: tokio::sync::oneshot::Receiver<()>) -> Result<u32, String> {
    gate.await.map_err(|_| "gate dropped".to_owned())?;
    Ok(key * 10)
}

async fn fetch_busy(
    key: u32,
    _: tokio::sync::oneshot::Receiver<()>,
    err: BlockError,
) -> Result<u32, String> {
    tokio::task::yield_now().await; // an async fallback is awaited
    Err(format!(
        "busy {key}: {}",
        err.kind() == BlockKind::Concurrency
    ))
}

#[sentinel(resource = "attr-async-plain", concurrency = 1, fallback = plain_busy)]
async fn hold(gate: tokio::sync::oneshot::Receiver<()>) -> &'static str {
    let _ = gate.await;
    "done"
}

fn plain_busy(_: tokio::sync::oneshot::Receiver<()>, _: BlockError) -> &'static str {
    "plain fallback"
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[test]
fn async_functions_hold_the_guard_inside_the_future() {
    let _clock = MockClock::install();
    let (open, gate) = tokio::sync::oneshot::channel();
    let (_open2, gate2) = tokio::sync::oneshot::channel();
    block_on(async move {
        let mut first = pin!(assert_send(fetch(1, gate)));
        assert!(
            poll_once(first.as_mut()).is_pending(),
            "waiting at the gate"
        );
        assert_eq!(
            stats("attr-async").concurrency,
            1,
            "the guard is inside the future"
        );
        assert_eq!(fetch(2, gate2).await, Err("busy 2: true".to_owned()));
        open.send(()).unwrap();
        assert_eq!(first.await, Ok(10));
    });
    assert_eq!(stats("attr-async").concurrency, 0);
}

#[test]
fn a_future_dropped_half_way_releases_its_slot_and_plain_fallbacks_work_in_async() {
    let _clock = MockClock::install();
    let (_keep, gate) = tokio::sync::oneshot::channel();
    let (_keep2, gate2) = tokio::sync::oneshot::channel();
    let mut held = Box::pin(hold(gate));
    assert!(poll_once(held.as_mut()).is_pending());
    assert_eq!(block_on(async { hold(gate2).await }), "plain fallback");
    assert_eq!(stats("attr-async-plain").concurrency, 1);
    drop(held); // cancelled at its await point
    assert_eq!(
        stats("attr-async-plain").concurrency,
        0,
        "dropping the future released it"
    );
    let (open, gate3) = tokio::sync::oneshot::channel();
    open.send(()).unwrap();
    assert_eq!(block_on(hold(gate3)), "done");
}

// An `async fn`'s `return`s coerce to its declared type, as they do without the attribute: two
// boxed types behind one `dyn` return type, and `.into()` into the declared error type.
#[sentinel(resource = "attr-async-coerce", qps = 2)]
async fn describe_async(n: u32) -> Result<Box<dyn std::fmt::Display>, Box<dyn std::error::Error>> {
    if n == 0 {
        return Err("zero".into());
    }
    if n == 1 {
        return Ok(Box::new("one"));
    }
    Ok(Box::new(n))
}

#[test]
fn an_async_body_returns_coerce_to_the_declared_type() {
    let _clock = MockClock::install();
    assert_eq!(block_on(describe_async(1)).unwrap().to_string(), "one");
    let Err(zero) = block_on(describe_async(0)) else {
        panic!("0 is an error")
    };
    assert_eq!(zero.to_string(), "zero");
    assert!(block_on(describe_async(7)).is_err(), "blocked after two");
    assert_eq!(stats("attr-async-coerce").error_qps, 1.0);
}

// Inner attributes of the body (`#![allow(..)]`) stay where they were written.
#[sentinel(resource = "attr-inner-attrs", qps = 1)]
fn with_inner_attribute(n: u32) -> Result<u32, BlockError> {
    #![allow(unused_variables)]
    let unused = n;
    Ok(n)
}

#[sentinel(resource = "attr-inner-attrs-async", qps = 1)]
async fn with_inner_attribute_async(n: u32) -> Result<u32, BlockError> {
    #![allow(unused_variables)]
    let unused = n;
    Ok(n)
}

#[test]
fn inner_attributes_of_the_body_are_kept() {
    let _clock = MockClock::install();
    assert_eq!(with_inner_attribute(1), Ok(1));
    assert!(with_inner_attribute(2).is_err());
    assert_eq!(block_on(with_inner_attribute_async(1)), Ok(1));
    assert!(block_on(with_inner_attribute_async(2)).is_err());
}

// ---- unsafe functions whose fallback is called directly ----

// The call of an `unsafe` fallback is unsafe: the generated code wraps it, so a crate that denies
// `unsafe_op_in_unsafe_fn` (the 2024 edition warns by default) compiles.
#[deny(unsafe_op_in_unsafe_fn)]
mod unsafe_fallbacks {
    use sentinel_runtime::{sentinel, BlockError};

    /// # Safety
    /// `p` is valid for reads.
    #[sentinel(resource = "attr-unsafe-async", qps = 1, fallback = read_async_busy)]
    pub(super) async unsafe fn read_async(p: *const u8) -> u8 {
        // SAFETY: the caller's promise.
        unsafe { *p }
    }

    /// # Safety
    /// `p` is valid for reads.
    async unsafe fn read_async_busy(p: *const u8, _: BlockError) -> u8 {
        // SAFETY: the caller's promise.
        unsafe { *p + 100 }
    }

    /// # Safety
    /// `p` is valid for reads.
    #[sentinel(resource = "attr-unsafe-impl-arg", qps = 1, fallback = read_shown_busy)]
    pub(super) unsafe fn read_shown(p: *const u8, label: impl std::fmt::Display) -> String {
        // SAFETY: the caller's promise.
        format!("{label}{}", unsafe { *p })
    }

    /// # Safety
    /// `p` is valid for reads.
    unsafe fn read_shown_busy(
        p: *const u8,
        label: impl std::fmt::Display,
        _: BlockError,
    ) -> String {
        // SAFETY: the caller's promise.
        format!("{label} busy {}", unsafe { *p })
    }

    /// A safe fallback of an `unsafe fn` is called as it is.
    #[sentinel(resource = "attr-unsafe-safe-fallback", qps = 1, fallback = safe_busy)]
    pub(super) async unsafe fn read_with_safe_fallback(p: *const u8) -> u8 {
        // SAFETY: the caller's promise.
        unsafe { *p }
    }

    async fn safe_busy(_: *const u8, _: BlockError) -> u8 {
        0
    }
}

#[test]
fn unsafe_fallbacks_called_directly_are_called_in_an_unsafe_block() {
    let _clock = MockClock::install();
    let x = 7u8;
    // SAFETY: `&x` is valid for reads.
    unsafe {
        assert_eq!(block_on(unsafe_fallbacks::read_async(&x)), 7);
        assert_eq!(block_on(unsafe_fallbacks::read_async(&x)), 107);
        assert_eq!(unsafe_fallbacks::read_shown(&x, "x"), "x7");
        assert_eq!(unsafe_fallbacks::read_shown(&x, "x"), "x busy 7");
        assert_eq!(block_on(unsafe_fallbacks::read_with_safe_fallback(&x)), 7);
        assert_eq!(block_on(unsafe_fallbacks::read_with_safe_fallback(&x)), 0);
    }
}

// ---- arguments the body leaves unused ----

// An argument named `_request` (unused by the body) is still passed to the fallback by the
// generated code: clippy's pedantic `used_underscore_binding` must not blame the user for it.
#[deny(clippy::used_underscore_binding)]
mod underscored {
    use sentinel_runtime::{sentinel, BlockError};

    #[sentinel(resource = "attr-underscored", qps = 1, fallback = handle_busy, params = [_tenant])]
    pub(super) fn handle(_request: &str, _tenant: u32) -> &'static str {
        "handled"
    }

    fn handle_busy(request: &str, _: u32, _: BlockError) -> &'static str {
        if request.is_empty() {
            "busy"
        } else {
            "busy with a request"
        }
    }

    #[sentinel(resource = "attr-underscored-async", qps = 1, fallback = handle_busy)]
    pub(super) async fn handle_async(_request: &str, _tenant: u32) -> &'static str {
        "handled"
    }
}

#[test]
fn arguments_the_body_leaves_unused_still_reach_the_fallback() {
    let _clock = MockClock::install();
    assert_eq!(underscored::handle("r", 1), "handled");
    assert_eq!(underscored::handle("r", 1), "busy with a request");
    assert_eq!(block_on(underscored::handle_async("", 1)), "handled");
    assert_eq!(block_on(underscored::handle_async("", 1)), "busy");
}

// ---- hygiene ----

// The generated code names everything by its full path: a module without the prelude works.
mod no_prelude {
    #![no_implicit_prelude]

    use ::sentinel_runtime::{sentinel, BlockError};

    #[sentinel(resource = "attr-no-prelude-impl", qps = 1, fallback = shown_busy)]
    pub(super) fn shown(n: u32) -> impl ::std::fmt::Display {
        n
    }

    fn shown_busy(_: u32, _: BlockError) -> u32 {
        0
    }

    #[sentinel(resource = "attr-no-prelude-impl-result", qps = 1)]
    pub(super) fn parsed(n: u32) -> ::std::result::Result<impl ::std::fmt::Display, BlockError> {
        ::std::result::Result::Ok(n)
    }
}

#[test]
fn a_module_without_the_prelude_can_guard_functions() {
    let _clock = MockClock::install();
    assert_eq!(no_prelude::shown(5).to_string(), "5");
    assert_eq!(no_prelude::shown(5).to_string(), "0");
    assert!(no_prelude::parsed(1).is_ok());
    assert!(no_prelude::parsed(1).is_err());
}

// ---- generated by `macro_rules!` ----

// A macro passes its fragments (`$name:literal`, `$fallback:path`, `$arg:expr`) wrapped in
// invisible groups: the attribute reads through them.
macro_rules! guarded {
    ($name:ident, $res:literal, $qps:expr, $win:literal, $fb:path, $user:ident) => {
        #[sentinel(resource = $res, qps = $qps, window = $win, fallback = $fb, params = [$user])]
        fn $name($user: u32) -> u32 {
            $user
        }
    };
}

fn generated_busy(user: u32, err: BlockError) -> u32 {
    assert_eq!(err.kind(), BlockKind::Flow);
    user + 100
}

guarded!(generated, "attr-macro-rules", 2, "1s", generated_busy, user);

macro_rules! guarded_expr {
    ($name:ident, $resource:expr) => {
        #[sentinel(resource = $resource, qps = 1)]
        fn $name() -> Result<(), BlockError> {
            Ok(())
        }
    };
}

guarded_expr!(generated_expr, "attr-macro-rules-expr");

#[test]
fn a_function_generated_by_a_macro_rules_macro_is_guarded() {
    let _clock = MockClock::install();
    assert_eq!(generated(1), 1);
    assert_eq!(generated(2), 2);
    assert_eq!(generated(3), 103);
    assert_eq!(stats("attr-macro-rules").block_qps, 1.0);
    assert!(generated_expr().is_ok());
    assert!(generated_expr().is_err());
}

// ---- renamed crate ----

mod renamed {
    use sentinel_runtime as flow;

    #[flow::sentinel(crate = flow, resource = "attr-renamed", qps = 1)]
    pub fn ping() -> Result<(), flow::BlockError> {
        Ok(())
    }
}

#[test]
fn a_renamed_dependency_works_with_crate_path() {
    let _clock = MockClock::install();
    assert!(renamed::ping().is_ok());
    assert!(renamed::ping().is_err());
}
