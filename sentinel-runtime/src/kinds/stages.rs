//! The stage list and its runner: every entry runs the built-in stages in order (the custom
//! slots merged in by their order numbers); the first block stops the run, and everything the
//! stages and slots before it reserved is given back by walking the same list back.
//!
//! A stage is a kind of check: a function that checks the call and records what it reserved
//! in the [`Call`], and one that gives that back. Adding a kind is one entry in [`STAGES`]
//! (plus its part of the [`Chain`](crate::kinds::Chain) and its builder).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::BlockError;
use crate::kinds::chain::{Admission, BuildContext, Call, Chain, ChainRules, Lone, Target};
use crate::param::Params;
use crate::slot::concurrency::ConcurrencyCounter;
use crate::slot::custom::{self, Registered, SlotContext, SlotList};
use crate::slot::order::{
    AUTHORITY_SLOT_ORDER, CIRCUIT_BREAKER_SLOT_ORDER, FLOW_SLOT_ORDER, HOTSPOT_SLOT_ORDER,
    SYSTEM_SLOT_ORDER,
};

use crate::kinds::authority::stage as authority;
use crate::kinds::circuit_breaker::stage as circuit_breaker;
use crate::kinds::flow::stage as flow;
use crate::kinds::hotspot::stage as hotspot;
use crate::kinds::system::stage as system;

/// A built-in stage: where custom slots fall around it, its check, and what gives back what
/// its check reserved (also after the check itself blocked half-way; a no-op when it reserved
/// nothing).
pub(crate) struct Stage {
    pub(crate) order: i32,
    pub(crate) check: fn(&mut Call<'_>) -> Result<(), BlockError>,
    pub(crate) release: fn(&mut Call<'_>),
}

/// The built-in stages, in the order they run (Sentinel's).
pub(crate) const STAGES: [Stage; 5] = [
    Stage {
        order: AUTHORITY_SLOT_ORDER,
        check: authority::check,
        release: authority::release,
    },
    Stage {
        order: SYSTEM_SLOT_ORDER,
        check: system::check,
        release: system::release,
    },
    Stage {
        order: FLOW_SLOT_ORDER,
        check: flow::check,
        release: flow::release,
    },
    Stage {
        order: HOTSPOT_SLOT_ORDER,
        check: hotspot::check,
        release: hotspot::release,
    },
    Stage {
        order: CIRCUIT_BREAKER_SLOT_ORDER,
        check: circuit_breaker::check,
        release: circuit_breaker::release,
    },
];

/// The chain of `rules`, taking over from `old` what each kind keeps across a reload (a
/// gate's counts, a hotspot table, a breaker's state).
pub(crate) fn build(rules: &ChainRules<'_>, old: &Chain, ctx: &BuildContext<'_>) -> Chain {
    let flow = flow::build(rules.flow, old, ctx);
    let mut chain = Chain {
        authority: authority::build(rules.authority),
        concurrency: flow.concurrency,
        adaptive: flow.adaptive,
        gates: flow.gates,
        origin_gates: flow.origin_gates,
        hotspots: hotspot::build(rules.hotspot, &old.hotspots),
        breakers: circuit_breaker::build(rules.breakers, &old.breakers, ctx.now),
        lone: Lone::No,
    };
    chain.mark_lone();
    chain
}

/// Runs the stages for one entry at `now`, writing what they decided into `out` (a default
/// [`Admission`]). On a block (or a panic in a custom slot), everything already reserved is
/// given back. Admitted, it returns the custom slots that admitted the call (`None`: none
/// ran), for its [`cancel`] if it is given up.
#[inline(always)]
pub(crate) fn check(
    target: Target<'_>,
    chain: &Chain,
    counter: &ConcurrencyCounter,
    now: u64,
    count: u32,
    params: &Params,
    out: &mut Admission,
) -> Result<Option<SlotList>, BlockError> {
    out.at = now;
    let mut call = Call {
        target,
        chain,
        counter,
        params,
        count,
        gates: 0,
        out,
    };
    if custom::has_custom() {
        return check_with_custom(&mut call);
    }
    // No user code runs in the built-in stages, so no guard is needed against a panic: a block
    // gives back what was reserved explicitly.
    for (i, stage) in STAGES.iter().enumerate() {
        if let Err(block) = (stage.check)(&mut call) {
            release_stages(&mut call, i + 1);
            return Err(block);
        }
    }
    Ok(None)
}

/// Gives back what the first `ran` stages reserved, the latest first.
#[cold]
fn release_stages(call: &mut Call<'_>, ran: usize) {
    for stage in STAGES[..ran].iter().rev() {
        (stage.release)(call);
    }
}

/// Undoes every check's admission of a call that will not run after all (an async caller's
/// future dropped while waiting for its throttling turn).
pub(crate) fn cancel(
    target: Target<'_>,
    chain: &Chain,
    counter: &ConcurrencyCounter,
    count: u32,
    mut admission: Admission,
    custom: Option<SlotList>,
) {
    // The slots the call was checked with (what `check` returned): a slot registered since
    // never saw it.
    let slots: &[Registered] = custom.as_ref().map_or(&[], SlotList::slots);
    let at = admission.at;
    let mut call = Call {
        target,
        chain,
        counter,
        params: &Params::NONE,
        count,
        gates: chain.gates.len(),
        out: &mut admission,
    };
    drop(Unwind {
        call: &mut call,
        stages: STAGES.len(),
        slots,
        admitted: slots.len(),
        times: [at; STAGES.len() + 1],
        armed: true,
    });
}

/// Everything run so far for one call with custom slots; dropped armed (a block returned
/// early, or a panic unwinding), it gives all of it back, in the reverse of the order it ran.
struct Unwind<'c, 'a> {
    call: &'c mut Call<'a>,
    /// The first `stages` built-in stages ran (the last of them perhaps half-way).
    stages: usize,
    slots: &'c [Registered],
    /// The first `admitted` custom slots admitted the call.
    admitted: usize,
    /// The time the call counted at after the first `k` stages: what the custom slots after
    /// them saw as `now`, and see again when a block or a panic cancels the call during its
    /// check (a cancellation after a dropped wait gives every slot the call's time).
    times: [u64; STAGES.len() + 1],
    armed: bool,
}

impl Unwind<'_, '_> {
    /// What a custom slot sees when `stages` stages have run.
    fn context(&self, stages: usize) -> SlotContext<'_> {
        SlotContext {
            target: self.call.target,
            circuit: self.call.chain.breakers.iter().map(|b| b.state()).max(),
            now: self.times[stages],
            count: self.call.count,
        }
    }

    /// Checks custom slots up to (not including) `order`.
    fn run_slots_before(&mut self, order: Option<i32>) -> Result<(), BlockError> {
        while let Some((o, slot)) = self.slots.get(self.admitted) {
            if order.is_some_and(|order| *o >= order) {
                break;
            }
            slot.check(&self.context(self.stages))?;
            self.admitted += 1;
        }
        Ok(())
    }

    /// Gives everything back, once.
    fn release(&mut self) {
        self.armed = false;
        let (mut i, mut j) = (self.stages, self.admitted);
        while i > 0 || j > 0 {
            // The later of stage `i - 1` and slot `j - 1` ran last: a slot with a stage's order
            // runs after it.
            if j > 0 && (i == 0 || self.slots[j - 1].0 >= STAGES[i - 1].order) {
                j -= 1;
                let slot = &self.slots[j].1;
                let ctx = self.context(i);
                // A panicking cancel must not stop the other reservations from being given
                // back (nor abort the process while another panic unwinds).
                let _ = catch_unwind(AssertUnwindSafe(|| slot.cancel(&ctx)));
            } else {
                i -= 1;
                (STAGES[i].release)(self.call);
            }
        }
    }
}

impl Drop for Unwind<'_, '_> {
    fn drop(&mut self) {
        if self.armed {
            self.release();
        }
    }
}

/// The stages with the custom slots merged in by order. A block or a panic anywhere gives back
/// everything reserved before it.
#[cold]
fn check_with_custom(call: &mut Call<'_>) -> Result<Option<SlotList>, BlockError> {
    let slots = custom::registered();
    let at = call.out.at;
    let mut run = Unwind {
        call,
        stages: 0,
        slots: slots.slots(),
        admitted: 0,
        times: [at; STAGES.len() + 1],
        armed: true,
    };
    for stage in &STAGES {
        run.run_slots_before(Some(stage.order))?;
        run.stages += 1;
        (stage.check)(run.call)?;
        run.times[run.stages] = run.call.out.at;
    }
    run.run_slots_before(None)?;
    run.armed = false;
    drop(run);
    // Every slot admitted the call: a cancellation asks these.
    Ok(Some(slots))
}
