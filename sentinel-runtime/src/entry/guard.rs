//! [`Entry`], the RAII guard of an admitted call, and what its exit needs to know.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::kinds::circuit_breaker::ProbeTicket;
use crate::kinds::tickets::Tickets;
use crate::kinds::{Admission, Chain, ShadowPass};
use crate::node::ResourceNode;
use crate::param::Params;
use crate::slot::param_table::Place;

/// [`Entry::set_error`] was called.
pub(super) const ERROR: u64 = 1;
/// Held by a future that has not finished: dropped in this state, the call was abandoned.
pub(super) const PENDING: u64 = 2;
/// The call took a place in the node's concurrency counter.
pub(super) const COUNTED: u64 = 4;
/// The call is inbound traffic: its exit is counted in the inbound statistics too.
pub(super) const INBOUND: u64 = 8;
/// The call took a place in the system rules' count of inbound calls inside.
pub(super) const SYSTEM_COUNTED: u64 = 16;
/// The exit asks whether the thread is unwinding: a panic then is the call's own. Not set for
/// an entry made while the thread was already unwinding from a panic (a call in a `Drop`: the
/// exit could not tell that panic from one of the call's own, which could only be one caught
/// inside that `Drop`; such an entry is judged by [`ERROR`] alone), nor for a guarded
/// function's sync call, which has [`RUNNING`] instead.
pub(super) const WATCH_PANIC: u64 = 32;
/// The entry holds places in hotspot concurrency counters, or a kind's ticket (see [`Held`]).
pub(super) const HELD: u64 = 64;
/// A guarded function's sync call whose body has not returned: its generated code clears this
/// when the body returns ([`Entry::returned`]), so an exit that finds it set is the body's
/// unwinding (a panic of the call's own).
pub(super) const RUNNING: u64 = 128;
/// The chain's shadow part would have blocked the call: the exit reports its outcome to no
/// shadow breaker or adaptive limit.
pub(super) const SHADOW_BLOCKED: u64 = 256;
/// The entry's count of passes is the flags word's upper half.
pub(super) const COUNT_SHIFT: u32 = 32;

/// How the exit of an entry learns that the call ended by a panic of its own (see the flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// Held by a future, which marks it finished ([`PENDING`]).
    pub(super) cancellable: bool,
    /// A guarded function's sync call, which marks its body's return ([`RUNNING`]).
    pub(super) guarded: bool,
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
    pub(super) fn flags(self) -> u64 {
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
    pub(super) node: &'static ResourceNode,
    pub(super) start: u64,
    pub(super) probe: ProbeTicket,
    /// The flags above in the lower half, the count of passes in the upper half (set once).
    pub(super) flags: AtomicU64,
    /// Places taken in hotspot concurrency counters, the kinds' tickets and what a shadow part
    /// holds for the call
    /// (rare: boxed, so the common entry stays small). Dropped by the exit that gives them back (the common exit, with none, runs no
    /// drop code for it).
    pub(super) held: ManuallyDrop<Option<Box<Held>>>,
}

/// Places an entry took in hotspot concurrency counters, the tickets the kinds' checks left
/// with it (handed to their exit hooks), and what the chain's shadow part holds for it, with
/// the checks that own them.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) chain: Arc<Chain>,
    pub(super) places: Vec<(usize, Place)>,
    pub(super) tickets: Tickets,
    /// What the chain's shadow part reserved for the call (see [`ShadowPass::held`]).
    pub(super) shadow: Option<Box<Admission>>,
}

impl Entry {
    /// The entry of a call that holds nothing for any check: no chain on its node, or a lone
    /// gate's pass (see `lone`), admitted at `at`.
    #[inline(always)]
    pub(super) fn unchecked(
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
    pub(super) fn new(
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
        let held = if admission.hot.holds_places() || admission.tickets.any() {
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

    /// Adds what the chain's shadow part decided for the call (not empty): what it holds is
    /// given back at the exit, and a call it would have blocked reports to none of its
    /// breakers.
    #[cold]
    #[inline(never)]
    pub(super) fn hold_shadow(&mut self, shadow: ShadowPass, chain: impl FnOnce() -> Arc<Chain>) {
        let flags = self.flags.get_mut();
        if shadow.blocked {
            *flags |= SHADOW_BLOCKED;
        }
        let Some(held) = shadow.held else {
            return;
        };
        *flags |= HELD;
        match &mut *self.held {
            Some(hot) => hot.shadow = Some(held),
            None => {
                *self.held = Some(Box::new(Held {
                    chain: chain(),
                    places: Vec::new(),
                    tickets: Tickets::default(),
                    shadow: Some(held),
                }));
            }
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

/// The hotspot places and the kinds' tickets of `admission`, held with an owned handle on
/// `chain`.
#[cold]
pub(super) fn hot_held(
    admission: &Admission,
    chain: impl FnOnce() -> Option<Arc<Chain>>,
) -> Option<Box<Held>> {
    let places: Vec<(usize, Place)> = admission.inside().collect();
    if places.is_empty() && !admission.tickets.any() {
        return None;
    }
    let chain = chain()?;
    Some(Box::new(Held {
        chain,
        places,
        tickets: admission.tickets,
        shadow: None,
    }))
}
