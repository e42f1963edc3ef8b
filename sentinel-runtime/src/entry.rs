//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::clock;
use crate::error::BlockError;
use crate::node::{ActiveRules, ResourceNode};
use crate::registry;
use crate::rules;

/// Enters `resource` for one pass: `Ok(Entry)` if every rule admits the call, else the
/// [`BlockError`] of the rule that blocked it.
///
/// A resource first seen here gets a node with no rules (statistics only) unless rules were
/// loaded for it. Hold the [`Entry`] while the guarded work runs; dropping it records the exit.
///
/// ```
/// let entry = sentinel_runtime::entry("doc-entry")?;
/// // ... the guarded work ...
/// drop(entry);
/// # Ok::<(), sentinel_runtime::BlockError>(())
/// ```
pub fn entry(resource: &str) -> Result<Entry, BlockError> {
    EntryBuilder::new(resource).enter()
}

/// Options for entering a resource: `EntryBuilder::new("r").acquire(5).enter()`.
#[derive(Clone, Debug)]
#[must_use = "an EntryBuilder does nothing until `enter` is called"]
pub struct EntryBuilder<'a> {
    resource: &'a str,
    count: u32,
}

impl<'a> EntryBuilder<'a> {
    /// Entering `resource` for one pass.
    pub fn new(resource: &'a str) -> EntryBuilder<'a> {
        EntryBuilder { resource, count: 1 }
    }

    /// Asks for `count` passes at once (a batch); 0 is taken as 1.
    pub fn acquire(mut self, count: u32) -> EntryBuilder<'a> {
        self.count = count.max(1);
        self
    }

    /// Runs the slot chain: `Ok(Entry)` if admitted.
    pub fn enter(self) -> Result<Entry, BlockError> {
        let node = match registry::get(self.resource) {
            Some(node) => node,
            None => rules::node(self.resource, &[]),
        };
        node.enter(self.count)
    }
}

/// An admitted call. Dropping it records the exit, exactly once, whatever path leaves the guarded
/// code: the call's concurrency is released, it is counted as complete with its response time,
/// and as an error if [`set_error`](Entry::set_error) was called or the thread is unwinding from
/// a panic. An async future that holds the entry and is dropped half-way releases it too.
#[derive(Debug)]
#[must_use = "the call counts as finished as soon as the Entry is dropped"]
pub struct Entry {
    node: &'static ResourceNode,
    rules: &'static ActiveRules,
    start: u64,
    count: u32,
    error: AtomicBool,
}

impl Entry {
    #[inline]
    pub(crate) fn new(
        node: &'static ResourceNode,
        rules: &'static ActiveRules,
        start: u64,
        count: u32,
    ) -> Entry {
        Entry {
            node,
            rules,
            start,
            count,
            error: AtomicBool::new(false),
        }
    }

    /// Marks the call as failed: it is counted as an error when the entry is dropped.
    pub fn set_error(&self) {
        self.error.store(true, Ordering::Relaxed);
    }

    /// The entered resource's name.
    pub fn resource(&self) -> &'static str {
        self.node.name()
    }

    /// The entered resource's node.
    pub fn node(&self) -> &'static ResourceNode {
        self.node
    }
}

impl Drop for Entry {
    #[inline]
    fn drop(&mut self) {
        let now = clock::now_nanos();
        let rt_us = u32::try_from(now.saturating_sub(self.start) / 1_000).unwrap_or(u32::MAX);
        let error = self.error.load(Ordering::Relaxed) || std::thread::panicking();
        for gate in self.rules.releases {
            gate.exit();
        }
        self.node.stats().on_exit(now, self.count, rt_us, error);
    }
}
