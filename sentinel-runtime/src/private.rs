//! Support for the code `#[sentinel]` generates. **Not a stable API**: anything here may change
//! in any release; call the documented API instead.

use std::sync::OnceLock;

pub use crate::entry::Entry;
pub use crate::error::BlockError;
use crate::node::ResourceNode;
use crate::rules::FlowRule;

/// A rule written in the attribute, in a form a `static` can hold.
#[derive(Clone, Copy, Debug)]
pub enum DefaultRule {
    /// `qps = N`.
    Qps(f64),
    /// `concurrency = N`.
    Concurrency(u32),
}

/// The `static` node of a guarded function: built on its first call, then entered without any
/// lookup, lock or allocation.
#[derive(Debug)]
pub struct StaticNode {
    name: &'static str,
    defaults: &'static [DefaultRule],
    node: OnceLock<&'static ResourceNode>,
}

impl StaticNode {
    /// A node named `name` whose default rules are `defaults`.
    pub const fn new(name: &'static str, defaults: &'static [DefaultRule]) -> StaticNode {
        StaticNode {
            name,
            defaults,
            node: OnceLock::new(),
        }
    }

    /// The node, built and registered on the first call.
    #[inline]
    pub fn node(&self) -> &'static ResourceNode {
        self.node.get_or_init(|| self.init())
    }

    #[cold]
    fn init(&self) -> &'static ResourceNode {
        // The attribute checks its values at compile time; keep only rules that validate, so a
        // bad default can never panic here.
        let defaults: Vec<FlowRule> = self
            .defaults
            .iter()
            .map(|d| match *d {
                DefaultRule::Qps(t) => FlowRule::qps(self.name, t),
                DefaultRule::Concurrency(c) => FlowRule::concurrency(self.name, c),
            })
            .filter(|r| r.validate().is_ok())
            .collect();
        crate::rules::node(self.name, &defaults)
    }

    /// Enters the node for one pass.
    #[inline]
    pub fn enter(&self) -> Result<Entry, BlockError> {
        self.node().enter(1)
    }
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

/// The error a guarded `Result` function returns when blocked: `E::from(block)`. Generic, so no
/// "useless conversion" lint fires in the user's crate when `E` is `BlockError` itself.
#[inline]
pub fn blocked_err<T, E: From<BlockError>>(block: BlockError) -> Result<T, E> {
    Err(E::from(block))
}
