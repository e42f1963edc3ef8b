//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::clock;
use crate::error::BlockError;
use crate::node::{ActiveRules, Defaults, ResourceNode};
use crate::registry;
use crate::rules;
use crate::slot::{self, Admission, ProbeTicket};

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

    /// Runs the slot chain: `Ok(Entry)` if admitted. On a resource with a throttling rule, a
    /// call whose turn is not yet due sleeps this thread until it is (in async code, guard an
    /// `async fn` with the attribute instead: it awaits its turn without blocking the executor).
    pub fn enter(self) -> Result<Entry, BlockError> {
        let node = match registry::get(self.resource) {
            Some(node) => node,
            None => rules::node(self.resource, &Defaults::default()),
        };
        node.enter(self.count)
    }
}

/// A call admitted by every check, not yet entered: it may have to wait for its throttling turn
/// first. Dropped without [`into_entry`](Reservation::into_entry) (an async caller's future
/// dropped while waiting), it gives back everything the checks reserved.
#[derive(Debug)]
#[must_use = "a Reservation is given back when dropped"]
pub struct Reservation {
    node: &'static ResourceNode,
    rules: &'static ActiveRules,
    at: u64,
    count: u32,
    admission: Admission,
    cancellable: bool,
}

impl Reservation {
    #[inline]
    pub(crate) fn new(
        node: &'static ResourceNode,
        rules: &'static ActiveRules,
        at: u64,
        count: u32,
        admission: Admission,
        cancellable: bool,
    ) -> Reservation {
        Reservation {
            node,
            rules,
            at,
            count,
            admission,
            cancellable,
        }
    }

    /// How long from now the caller must wait for its throttling turn, in nanoseconds (0: pass
    /// now).
    #[inline]
    pub fn wait_nanos(&self) -> u64 {
        match self.admission.turn {
            0 => 0,
            turn => turn.saturating_sub(clock::precise_nanos()),
        }
    }

    /// When the caller's turn comes, on the runtime's precise clock (0: at once).
    #[inline]
    pub fn turn(&self) -> u64 {
        self.admission.turn
    }

    /// The call passes now: counted as a pass, and guarded by the returned [`Entry`].
    #[inline]
    pub fn into_entry(self) -> Entry {
        let this = ManuallyDrop::new(self);
        let now = if this.admission.turn == 0 {
            this.at
        } else {
            clock::now_nanos()
        };
        this.node.stats().on_pass(now, this.count);
        Entry::new(
            this.node,
            this.rules,
            now,
            this.count,
            this.admission.probe,
            this.cancellable,
        )
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        slot::cancel(self.node, self.rules, self.at, self.count, self.admission);
    }
}

/// [`Entry::set_error`] was called.
const ERROR: u8 = 1;
/// Held by a future that has not finished: dropped in this state, the call was abandoned.
const PENDING: u8 = 2;

/// An admitted call. Dropping it records the exit, exactly once, whatever path leaves the guarded
/// code: the call's concurrency is released, it is counted as complete with its response time,
/// and as an error if [`set_error`](Entry::set_error) was called or the thread is unwinding from
/// a panic. An async future that holds the entry and is dropped half-way releases it too.
///
/// A guarded `async fn` whose future is dropped before it finishes counts as complete but
/// neither as an error nor as a success for circuit breakers: if it was a half-open probe, the
/// probe's place is given back.
#[derive(Debug)]
#[must_use = "the call counts as finished as soon as the Entry is dropped"]
pub struct Entry {
    node: &'static ResourceNode,
    rules: &'static ActiveRules,
    start: u64,
    count: u32,
    probe: ProbeTicket,
    flags: AtomicU8,
}

impl Entry {
    #[inline]
    pub(crate) fn new(
        node: &'static ResourceNode,
        rules: &'static ActiveRules,
        start: u64,
        count: u32,
        probe: ProbeTicket,
        cancellable: bool,
    ) -> Entry {
        Entry {
            node,
            rules,
            start,
            count,
            probe,
            flags: AtomicU8::new(if cancellable { PENDING } else { 0 }),
        }
    }

    /// Marks the call as failed: it is counted as an error when the entry is dropped (and by
    /// circuit breakers).
    pub fn set_error(&self) {
        self.flags.fetch_or(ERROR, Ordering::Relaxed);
    }

    /// The future holding this entry ran to completion (it was not abandoned).
    pub(crate) fn finish(&self) {
        self.flags.fetch_and(!PENDING, Ordering::Relaxed);
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
        let rt = now.saturating_sub(self.start) / 1_000;
        let rt_us = u32::try_from(rt).unwrap_or(u32::MAX);
        let flags = self.flags.load(Ordering::Relaxed);
        let panicking = std::thread::panicking();
        let error = flags & ERROR != 0 || panicking;
        let abandoned = flags & PENDING != 0 && !panicking;
        for gate in self.rules.releases {
            gate.exit();
        }
        for (i, breaker) in self.rules.breakers.iter().enumerate() {
            let probe = self.probe.for_breaker(i);
            breaker.on_exit(self.node.name(), now, rt, error, abandoned, probe);
        }
        self.node.stats().on_exit(now, self.count, rt_us, error);
    }
}
