//! Entering a node: the unchecked entry, the lone-gate shortcuts, the stage runner, and the
//! reservation of a call that may have to wait for its turn.

use super::guard::{Ending, Entry};
use super::lone::{enter_lone, enter_lone_hot, lone_hotspot, lone_qps, pinned_qps};
use super::record::{count_pass, on_block};
use super::reserve::{wait_for_turn, Inner, Reservation, Waiting};
use crate::clock;
use crate::error::BlockError;
use crate::kinds::system::check as system;
use crate::kinds::{check_shadow, Admission, Chain};
use crate::node::ResourceNode;
use crate::param::Params;
use crate::sync::{thread_slot, thread_slot_if_assigned, Held};

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
pub(super) fn enter_chain(
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
    match crate::kinds::check(
        node.target(),
        chain,
        node.counter(),
        now,
        count,
        params,
        &mut admission,
    ) {
        Ok(_) if admission.turn == 0 => {
            let shadow = check_shadow(node.target(), chain, count, params, &admission);
            count_pass(node, slot, admission.at, count, admission.inbound != 0);
            let ending = Ending::new(params, false);
            let mut entry =
                Entry::new(node, count, &mut admission, ending, || Some(chain.to_arc()));
            if !shadow.is_empty() {
                entry.hold_shadow(shadow, || chain.to_arc());
            }
            Ok(entry)
        }
        Ok(slots) => {
            let shadow = check_shadow(node.target(), chain, count, params, &admission);
            let waiting = Waiting::new(
                node,
                chain.to_arc(),
                count,
                (admission, slots),
                Ending::new(params, false),
            );
            Ok(wait_for_turn(waiting.with_shadow(shadow)))
        }
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
        let checked = crate::kinds::check(
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
                let shadow = check_shadow(node.target(), &chain, count, params, &admission);
                count_pass(node, slot, admission.at, count, admission.inbound != 0);
                let ending = Ending::new(params, cancellable);
                let mut entry =
                    Entry::new(node, count, &mut admission, ending, || Some(chain.to_arc()));
                if !shadow.is_empty() {
                    entry.hold_shadow(shadow, || chain.to_arc());
                }
                Ok(Reservation(Inner::Ready(entry)))
            }
            Ok(slots) => {
                let shadow = check_shadow(node.target(), &chain, count, params, &admission);
                let ending = Ending::new(params, cancellable);
                let waiting = Waiting::new(node, chain.to_arc(), count, (admission, slots), ending);
                let waiting = waiting.with_shadow(shadow);
                Ok(Reservation(Inner::Waiting(Box::new(waiting))))
            }
            Err(block) => {
                on_block(node, now, count, params, &block);
                Err(block)
            }
        }
    })
}
