//! The shortcuts of a chain that is one gate and nothing else ([`Chain::lone`](crate::kinds::Chain)):
//! the entry asks that gate directly, without the stage runner and its admission record, and
//! counts and reports exactly as the runner would. A lone QPS gate that its node keeps pinned
//! ([`ResourceNode::lone_qps`]) is read without reading the chain at all.

use super::guard::{Ending, Entry};
use super::record::{count_pass, on_block};
use super::reserve::{wait_for_turn, Inner, Reservation, Waiting};
use crate::clock;
use crate::error::BlockError;
use crate::kinds::flow::QpsGate;
use crate::kinds::hotspot::{HotPass, HotspotGate};
use crate::kinds::system::check as system;
use crate::kinds::{Admission, Chain, INBOUND_CALL};
use crate::node::ResourceNode;
use crate::param::Params;
use crate::sync::Held;

/// The chain's lone exact QPS gate, if that is all an entry of `node` with `params` must ask
/// (see [`Chain::lone_qps`] and [`shortcut_allowed`]).
#[inline(always)]
pub(super) fn lone_qps<'c>(
    node: &ResourceNode,
    chain: &'c Chain,
    params: &Params,
) -> Option<&'c crate::kinds::flow::QpsGate> {
    let gate = chain.lone_qps()?;
    shortcut_allowed(node, params).then_some(gate)
}

/// The lone exact QPS gate the node keeps pinned ([`ResourceNode::lone_qps`]), if that is
/// all an entry of `node` with `params` must ask: [`lone_qps`] without reading the chain.
#[inline(always)]
pub(super) fn pinned_qps<'n>(
    node: &'n ResourceNode,
    params: &Params,
) -> Option<&'n crate::kinds::flow::QpsGate> {
    let gate = node.lone_qps()?;
    shortcut_allowed(node, params).then_some(gate)
}

/// The chain's lone hotspot gate, if that is all an entry of `node` with `params` must ask (as
/// [`lone_qps`]).
#[inline(always)]
pub(super) fn lone_hotspot<'c>(
    node: &ResourceNode,
    chain: &'c Chain,
    params: &Params,
) -> Option<&'c crate::kinds::hotspot::HotspotGate> {
    let gate = chain.lone_hotspot()?;
    shortcut_allowed(node, params).then_some(gate)
}

/// Whether the stages other than a lone gate's have nothing to do for an entry of `node` with
/// `params`, read when the entry runs, as the stages read them: the system stage only marks an
/// inbound entry as such while no system rule is in force (the shortcut marks it the same
/// way); custom slots do not run on the node ([`ResourceNode::runs_custom`]); and the resource does not count its calls inside (the
/// flow stage would take the count: read here, not when the chain was built, so that a chain
/// read just before a concurrency rule's load started the count is not taken as lone after
/// it).
#[inline(always)]
fn shortcut_allowed(node: &ResourceNode, params: &Params) -> bool {
    (!params.is_inbound() || !system::is_active())
        && !node.runs_custom()
        && !node.counter().is_tracking()
}

/// What a lone gate's admission makes: an [`Entry`] for a sync caller (which sleeps through a
/// wait), a [`Reservation`] for an async one (which awaits it).
pub(super) trait Admitted: Sized {
    /// A pass that holds nothing, counted at `at`.
    fn passed(
        node: &'static ResourceNode,
        count: u32,
        at: u64,
        inbound: bool,
        ending: Ending,
    ) -> Self;

    /// A hotspot pass that holds something (a wait, or a place), as the stage runner would make
    /// it. The gate of a chain's shortcut gives no such pass (see
    /// [`HotspotGate::is_plain_rate`](crate::kinds::hotspot::HotspotGate::is_plain_rate)); this keeps the
    /// shortcut exact whatever the gate answers.
    fn holding(hold: Holding<'_, '_>) -> Self;
}

/// A hotspot pass that holds something, and what its entry or reservation is made of.
pub(super) struct Holding<'c, 'h> {
    slot: usize,
    node: &'static ResourceNode,
    chain: &'c Held<'h, Chain>,
    count: u32,
    cancellable: bool,
    now: u64,
    pass: HotPass,
    params: &'c Params<'c>,
}

impl Holding<'_, '_> {
    /// The admission record the stage runner would have made.
    fn admission(&self) -> Admission {
        let mut admission = Admission::at(self.now);
        if self.params.is_inbound() {
            admission.inbound = INBOUND_CALL;
        }
        if let HotPass::Rate { turn, .. } = self.pass {
            admission.turn = turn;
        }
        admission.hot.push(0, self.pass);
        admission
    }

    /// The entry now (no wait), its pass counted.
    fn entry_now(&self, admission: &mut Admission) -> Entry {
        let inbound = admission.inbound != 0;
        count_pass(self.node, self.slot, self.now, self.count, inbound);
        let ending = Ending::new(self.params, self.cancellable);
        Entry::new(self.node, self.count, admission, ending, || {
            Some(self.chain.to_arc())
        })
    }

    /// The reservation's wait.
    fn waiting(&self, admission: Admission) -> Waiting {
        let chain = self.chain.to_arc();
        let ending = Ending::new(self.params, self.cancellable);
        // No custom slot checked the call (the shortcut is not taken while they run).
        Waiting::new(self.node, chain, self.count, (admission, None), ending)
    }
}

impl Admitted for Entry {
    #[inline(always)]
    fn passed(
        node: &'static ResourceNode,
        count: u32,
        at: u64,
        inbound: bool,
        ending: Ending,
    ) -> Entry {
        Entry::unchecked(node, count, at, inbound, ending)
    }

    #[cold]
    #[inline(never)]
    fn holding(hold: Holding<'_, '_>) -> Entry {
        let mut admission = hold.admission();
        if admission.turn == 0 {
            return hold.entry_now(&mut admission);
        }
        wait_for_turn(hold.waiting(admission))
    }
}

impl Admitted for Reservation {
    #[inline(always)]
    fn passed(
        node: &'static ResourceNode,
        count: u32,
        at: u64,
        inbound: bool,
        ending: Ending,
    ) -> Reservation {
        Reservation(Inner::Ready(Entry::unchecked(
            node, count, at, inbound, ending,
        )))
    }

    #[cold]
    #[inline(never)]
    fn holding(hold: Holding<'_, '_>) -> Reservation {
        let mut admission = hold.admission();
        if admission.turn == 0 {
            return Reservation(Inner::Ready(hold.entry_now(&mut admission)));
        }
        Reservation(Inner::Waiting(Box::new(hold.waiting(admission))))
    }
}

/// The entry (or reservation) of a chain that is one hotspot gate limiting a rate: the gate's
/// admission of the entry's value, then the pass counted, as the stage runner would, without
/// the runner. `INBOUND`: the entry is inbound (no system rule in force), counted in the
/// inbound statistics too.
#[inline(always)]
pub(super) fn enter_lone_hot<O: Admitted, const INBOUND: bool>(
    slot: usize,
    node: &'static ResourceNode,
    chain: &Held<'_, Chain>,
    gate: &HotspotGate,
    (count, cancellable): (u32, bool),
    params: &Params,
) -> Result<O, BlockError> {
    // The value found once; its lines asked for before the clock is read, so that the table's
    // misses overlap the reading.
    let found = gate.locate(params);
    if let Some((_, located)) = &found {
        gate.prefetch_located(located);
    }
    let now = clock::now_nanos();
    let admitted = match &found {
        Some((key, located)) => {
            gate.try_enter_key(node.name_ref(), *key, Some(located), now, count)
        }
        None => Ok(HotPass::Free),
    };
    match admitted {
        Ok(HotPass::Free | HotPass::Rate { turn: 0, .. }) => {
            count_pass(node, slot, now, count, INBOUND);
            let ending = Ending::new(params, cancellable);
            Ok(O::passed(node, count, now, INBOUND, ending))
        }
        Ok(pass) => Ok(O::holding(Holding {
            slot,
            node,
            chain,
            count,
            cancellable,
            now,
            pass,
            params,
        })),
        Err(block) => {
            lone_hot_block(node, gate, params, now, count, &block);
            Err(block)
        }
    }
}

/// Counts a call a lone hotspot gate blocked, as the runner does.
#[cold]
#[inline(never)]
fn lone_hot_block(
    node: &'static ResourceNode,
    gate: &HotspotGate,
    params: &Params,
    now: u64,
    count: u32,
    block: &BlockError,
) {
    gate.note_block(params, now, count);
    on_block(node, now, count, params, block);
}

/// The entry of a chain that is one exact QPS gate: the gate's reservation, then the pass
/// counted at the time the gate counted it, as the stage runner would, without the runner.
/// `INBOUND` as for [`enter_lone_hot`].
#[inline(always)]
pub(super) fn enter_lone<const INBOUND: bool>(
    slot: usize,
    node: &'static ResourceNode,
    gate: &QpsGate,
    count: u32,
    params: &Params,
    cancellable: bool,
) -> Result<Entry, BlockError> {
    let now = clock::now_nanos();
    match gate.try_acquire(now, count) {
        Some(at) => {
            count_pass(node, slot, at, count, INBOUND);
            let ending = Ending::new(params, cancellable);
            Ok(Entry::unchecked(node, count, at, INBOUND, ending))
        }
        None => Err(lone_block(node, gate, now, count, params)),
    }
}

/// The error of a call a lone QPS gate refused, counted as the runner counts a block.
#[cold]
#[inline(never)]
fn lone_block(
    node: &'static ResourceNode,
    gate: &QpsGate,
    now: u64,
    count: u32,
    params: &Params,
) -> BlockError {
    let block = gate.block(node.name(), now, count);
    on_block(node, now, count, params, &block);
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{self, FlowRule};

    /// An entry that read a lone chain before a concurrency rule's load started the resource's
    /// count of calls inside, and decides after it, goes through the stage runner, which takes
    /// the count (without the check of the count, the shortcut left the call uncounted).
    #[test]
    fn a_lone_chain_read_before_counting_started_is_not_taken_after_it() {
        let _clock = crate::clock::MockClock::install();
        rules::load_flow_rules(vec![FlowRule::qps("lone-read-race", 100.0)]).unwrap();
        let node = crate::registry::node_by_name("lone-read-race");
        let slot = crate::sync::thread_slot();
        let first = node.with_chain_in(slot, |chain| {
            assert!(
                lone_qps(node, &chain, &Params::NONE).is_some(),
                "a lone chain"
            );
            rules::load_flow_rules(vec![
                FlowRule::qps("lone-read-race", 100.0),
                FlowRule::concurrency("lone-read-race", 1),
            ])
            .unwrap();
            match lone_qps(node, &chain, &Params::NONE) {
                Some(gate) => enter_lone::<false>(slot, node, gate, 1, &Params::NONE, false),
                None => super::super::enter::enter_chain(slot, node, &chain, 1, &Params::NONE),
            }
        });
        let inside = node.counter().current();
        let second = crate::entry("lone-read-race").map(drop);
        drop(first);
        rules::load_flow_rules(vec![]).unwrap();
        assert_eq!(inside, 1, "the call is counted inside");
        assert!(
            second.is_err(),
            "a second call inside a limit of one is blocked"
        );
    }
}
