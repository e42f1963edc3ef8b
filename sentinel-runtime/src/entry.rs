//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::clock;
use crate::error::BlockError;
use crate::node::ResourceNode;
use crate::rules;
use crate::slot::{self, Admission, Chain, ProbeTicket};

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

    /// Asks for `count` passes at once (a batch); 0 is taken as 1. A batch larger than a QPS
    /// rule's threshold is blocked at once.
    pub fn acquire(mut self, count: u32) -> EntryBuilder<'a> {
        self.count = count.max(1);
        self
    }

    /// Runs the slot chain: `Ok(Entry)` if admitted. On a resource with a throttling rule, a
    /// call whose turn is not yet due **sleeps this thread** until it is (in async code, guard an
    /// `async fn` with the attribute instead: it awaits its turn without blocking the executor).
    pub fn enter(self) -> Result<Entry, BlockError> {
        enter(rules::node_by_name(self.resource), self.count)
    }
}

/// Enters `node` for `count` passes: runs the slot chain and returns the guard. A throttled call
/// sleeps this thread until its turn (under a [`MockClock`](crate::clock::MockClock), the wait
/// moves the mock clock forward instead).
#[inline]
pub(crate) fn enter(node: &'static ResourceNode, count: u32) -> Result<Entry, BlockError> {
    match reserve(node, count, false)? {
        Reservation(Inner::Ready(entry)) => Ok(entry),
        waiting => {
            clock::sleep_until(waiting.turn());
            Ok(waiting.into_entry())
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
    let now = clock::now_nanos();
    if !node.is_checked() {
        node.stats().on_pass(now, count);
        let admission = Admission {
            at: now,
            ..Admission::default()
        };
        return Ok(Reservation(Inner::Ready(Entry::new(
            node,
            count,
            admission,
            cancellable,
        ))));
    }
    let chain = node.chain();
    match slot::check(node, &chain, node.counter(), now, count) {
        Ok(admission) if admission.turn == 0 => {
            node.stats().on_pass(admission.at, count);
            Ok(Reservation(Inner::Ready(Entry::new(
                node,
                count,
                admission,
                cancellable,
            ))))
        }
        Ok(admission) => Ok(Reservation(Inner::Waiting(Waiting {
            node,
            chain: arc_swap::Guard::into_inner(chain),
            count,
            admission,
            cancellable,
            entered: false,
        }))),
        Err(block) => {
            node.stats().on_block(now, count);
            Err(block)
        }
    }
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
    /// A throttling turn to wait for.
    Waiting(Waiting),
}

#[derive(Debug)]
struct Waiting {
    node: &'static ResourceNode,
    /// The checks that admitted the call, held so that a dropped wait gives back to them.
    chain: Arc<Chain>,
    count: u32,
    admission: Admission,
    cancellable: bool,
    /// The call entered: nothing to give back.
    entered: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.entered {
            return;
        }
        slot::cancel(
            self.node,
            &self.chain,
            self.node.counter(),
            self.count,
            self.admission,
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
    #[inline]
    pub fn into_entry(self) -> Entry {
        match self.0 {
            Inner::Ready(entry) => entry,
            Inner::Waiting(mut w) => {
                w.entered = true;
                let now = clock::now_nanos().max(w.admission.at);
                w.node.stats().on_pass(now, w.count);
                let admission = Admission {
                    at: now,
                    ..w.admission
                };
                Entry::new(w.node, w.count, admission, w.cancellable)
            }
        }
    }
}

/// [`Entry::set_error`] was called.
const ERROR: u8 = 1;
/// Held by a future that has not finished: dropped in this state, the call was abandoned.
const PENDING: u8 = 2;
/// The call took a place in the node's concurrency counter.
const COUNTED: u8 = 4;

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
    start: u64,
    count: u32,
    probe: ProbeTicket,
    flags: AtomicU8,
}

impl Entry {
    #[inline]
    fn new(
        node: &'static ResourceNode,
        count: u32,
        admission: Admission,
        cancellable: bool,
    ) -> Entry {
        let mut flags = 0;
        if cancellable {
            flags |= PENDING;
        }
        if admission.counted {
            flags |= COUNTED;
        }
        Entry {
            node,
            start: admission.at,
            count,
            probe: admission.probe,
            flags: AtomicU8::new(flags),
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

    /// When the call was admitted, on the runtime clock (nanoseconds): the time its pass is
    /// recorded at in the statistics and counted at by the QPS rules. Usually the clock's
    /// reading at the entry; later if a rule's window had already moved past that reading (the
    /// thread was delayed between reading the clock and the check).
    pub fn start_nanos(&self) -> u64 {
        self.start
    }
}

impl Drop for Entry {
    #[inline]
    fn drop(&mut self) {
        let now = clock::now_nanos();
        let rt_us = now.saturating_sub(self.start) / 1_000;
        let flags = self.flags.load(Ordering::Relaxed);
        let panicking = std::thread::panicking();
        let error = flags & ERROR != 0 || panicking;
        let abandoned = flags & PENDING != 0 && !panicking;
        // What was reserved and the statistics first: no user code runs before them.
        let counter = self.node.counter();
        if flags & COUNTED != 0 {
            counter.release();
        } else if counter.is_tracking() {
            counter.release_untracked();
        }
        self.node.stats().on_exit(now, self.count, rt_us, error);
        if self.node.has_breakers() {
            // Breaker transitions run listeners: a panicking one is contained there.
            let chain = self.node.chain();
            for breaker in chain.breakers.iter() {
                let probe = self.probe.for_breaker(breaker);
                breaker.on_exit(self.node.name(), now, rt_us, error, abandoned, probe);
            }
        }
    }
}
