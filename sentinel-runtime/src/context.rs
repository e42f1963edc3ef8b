//! Origin scopes: who is calling, for authority rules, without passing it to every entry.
//!
//! An entry's origin is the one given to [`EntryBuilder::origin`](crate::EntryBuilder::origin),
//! else the innermost scope's: [`with_origin`] for sync code, [`WithOrigin::with_origin`] for a
//! future (set around each of its polls, the way `tracing::Instrument` sets a span, so it holds
//! across `.await` on a multi-thread runtime, whichever thread polls). Entries made by the
//! attribute take the scope's origin too. Scopes nest: the innermost wins, and leaving it
//! restores the outer one, also when the code inside panics. (Sentinel Java's thread-local
//! context ignored the origin of a nested context.)
//!
//! ```
//! use sentinel_runtime::context::{self, WithOrigin};
//!
//! context::with_origin("billing", || {
//!     assert_eq!(context::origin().as_deref(), Some("billing"));
//!     context::with_origin("ops", || assert_eq!(context::origin().as_deref(), Some("ops")));
//!     assert_eq!(context::origin().as_deref(), Some("billing"));
//! });
//! assert_eq!(context::origin(), None);
//!
//! let call = async { context::origin() }.with_origin("mobile-app");
//! # let waker = std::task::Waker::noop();
//! # let mut call = std::pin::pin!(call);
//! # let got = std::future::Future::poll(call.as_mut(), &mut std::task::Context::from_waker(&waker));
//! # assert_eq!(got, std::task::Poll::Ready(Some("mobile-app".into())));
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

thread_local! {
    static ORIGIN: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Restores the outer scope's origin when a scope ends, however it ends.
struct Restore(Option<Arc<str>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take();
        let _ = ORIGIN.try_with(|o| *o.borrow_mut() = outer);
    }
}

fn enter(origin: Arc<str>) -> Restore {
    let outer = ORIGIN
        .try_with(|o| o.borrow_mut().replace(origin))
        .ok()
        .flatten();
    Restore(outer)
}

/// Runs `f` with `origin` as the origin of the entries it makes (unless they name their own).
pub fn with_origin<R>(origin: impl Into<Arc<str>>, f: impl FnOnce() -> R) -> R {
    let _restore = enter(origin.into());
    f()
}

/// The origin of the innermost scope on this thread, if any.
pub fn origin() -> Option<Arc<str>> {
    ORIGIN.try_with(|o| o.borrow().clone()).ok().flatten()
}

/// Runs a future with an origin: see [`WithOrigin::with_origin`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Origined<F> {
    origin: Arc<str>,
    inner: F,
}

impl<F: Future> Future for Origined<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self`, `Origined`
        // has no `Drop` impl and is `Unpin` only when `F` is (the auto impl), and `origin` is
        // never pinned (only cloned).
        let this = unsafe { self.get_unchecked_mut() };
        let _restore = enter(Arc::clone(&this.origin));
        // SAFETY: see above: `inner` stays where it is for as long as `self` is pinned.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        inner.poll(cx)
    }
}

/// Gives a future an origin scope that holds across its `.await`s.
pub trait WithOrigin: Future + Sized {
    /// This future, run with `origin` as the origin of the entries it makes: the scope is set
    /// around each poll, on whichever thread polls.
    fn with_origin(self, origin: impl Into<Arc<str>>) -> Origined<Self> {
        Origined {
            origin: origin.into(),
            inner: self,
        }
    }
}

impl<F: Future> WithOrigin for F {}
