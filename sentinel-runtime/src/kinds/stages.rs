//! The stage list and its runner: every entry runs the built-in stages in order (the custom
//! slots merged in by their order numbers); the first block stops the run, and everything the
//! stages and slots before it reserved is given back by walking the same list back.
//!
//! A stage is a kind of check: its [`Kind::check`] checks the call, records what it reserved
//! in the [`Call`] and its ticket in the admission's [`Tickets`], and its
//! [`Kind::release`] gives that back. The list is the table of kinds, sorted by each kind's
//! [`Kind::ORDER`].

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::clock;
use crate::error::BlockError;
use crate::kinds::admission::{Admission, ShadowPass};
use crate::kinds::call::{Call, Target};
use crate::kinds::chain::{Chain, Shadow};
use crate::kinds::kind::Kind;
use crate::kinds::table::kinds_table;
use crate::kinds::tickets::Tickets;
use crate::param::Params;
use crate::slot::concurrency::ConcurrencyCounter;
use crate::slot::custom::{self, Registered, SlotContext, SlotList};

/// A built-in stage: where custom slots fall around it, its kind's check (which sets its
/// kind's ticket), and what gives back what its check reserved (also after the check itself
/// blocked half-way; a no-op when it reserved nothing), taking its kind's ticket back.
#[derive(Clone, Copy)]
pub(crate) struct Stage {
    pub(crate) order: i32,
    pub(crate) check: fn(&Chain, &mut Call<'_>, &mut Tickets) -> Result<(), BlockError>,
    pub(crate) release: fn(&Chain, &mut Call<'_>, &mut Tickets),
}

/// Defines [`STAGES`] from the table of kinds.
macro_rules! define_stages {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// The built-in stages, in the order they run (Sentinel's: by each kind's order).
        pub(crate) const STAGES: [Stage; [$(stringify!($name)),*].len()] = by_order([$(
            Stage {
                order: <$kind as Kind>::ORDER,
                check: |chain, call, tickets| {
                    <$kind as Kind>::check(&chain.$name, call, &mut tickets.$name)
                },
                release: |chain, call, tickets| {
                    let ticket = ::core::mem::take(&mut tickets.$name);
                    <$kind as Kind>::release(&chain.$name, call, ticket)
                },
            },
        )*]);
    };
}

kinds_table!(define_stages);

/// Defines [`process_wide_shadow`] from the table of kinds.
macro_rules! define_process_wide_shadow {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// Whether process-wide shadow rules (system rules) check a call with `params`, so
        /// that its shadow stages run even on a resource without shadow rules of its own.
        #[inline(always)]
        fn process_wide_shadow(params: &Params) -> bool {
            false $( || <$kind as Kind>::shadow_checks(params) )*
        }
    };
}

kinds_table!(define_process_wide_shadow);

/// `stages` sorted by order (a stable insertion sort, at compile time).
const fn by_order<const N: usize>(mut stages: [Stage; N]) -> [Stage; N] {
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && stages[j - 1].order > stages[j].order {
            let held = stages[j - 1];
            stages[j - 1] = stages[j];
            stages[j] = held;
            j -= 1;
        }
        i += 1;
    }
    stages
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
    let Admission { reserved, tickets } = out;
    reserved.at = now;
    let mut call = Call {
        target,
        counter,
        params,
        count,
        gates: 0,
        out: reserved,
    };
    if custom::has_custom() {
        return check_with_custom(chain, &mut call, tickets);
    }
    // No user code runs in the built-in stages, so no guard is needed against a panic: a block
    // gives back what was reserved explicitly.
    for (i, stage) in STAGES.iter().enumerate() {
        if let Err(block) = (stage.check)(chain, &mut call, tickets) {
            release_stages(chain, &mut call, tickets, i + 1);
            return Err(block);
        }
    }
    Ok(None)
}

/// Runs the chain's shadow part, if it has one, for a call its enforced part admitted (see
/// [`run_shadow`]); the entry path calls it after [`check`] admitted the call. A chain without
/// one runs [`Shadow::process_wide`] instead while process-wide shadow rules (system rules)
/// check the call.
#[inline(always)]
pub(crate) fn check_shadow(
    target: Target<'_>,
    chain: &Chain,
    count: u32,
    params: &Params,
    admitted: &Admission,
) -> ShadowPass {
    match &chain.shadow {
        Some(shadow) => run_shadow(target, shadow, count, params, admitted.at),
        None if process_wide_shadow(params) => {
            run_shadow(target, Shadow::process_wide(), count, params, admitted.at)
        }
        None => ShadowPass::default(),
    }
}

/// Runs a chain's shadow part for a call its enforced part admitted (at `at`, the time it
/// counts at), with an admission of its own: the shadow rules are evaluated as if enforced, and what
/// they would refuse is counted, never refused. A shadow block gives back what the shadow
/// stages before it reserved (the call is not counted as admitted in their windows); a shadow
/// throttling turn is counted as a wait the call would have made, never waited. What the
/// shadow part holds for the call (a place inside, a probe, hotspot places) is returned, for
/// the exit. A process-wide stage (system rules) checks its kind's process-wide shadow rules,
/// against their own state.
#[cold]
#[inline(never)]
fn run_shadow(
    target: Target<'_>,
    shadow: &Shadow,
    count: u32,
    params: &Params,
    at: u64,
) -> ShadowPass {
    let mut admission = Admission::at(at);
    let Admission { reserved, tickets } = &mut admission;
    let mut call = Call {
        target,
        counter: &shadow.counter,
        params,
        count,
        gates: 0,
        out: reserved,
    };
    for (i, stage) in STAGES.iter().enumerate() {
        if let Err(block) = (stage.check)(&shadow.chain, &mut call, tickets) {
            release_stages(&shadow.chain, &mut call, tickets, i + 1);
            let kind = (block.kind().index(), block.kind().label());
            target.stats.shadow().on_block(target.name, at, count, kind);
            return ShadowPass {
                held: None,
                blocked: true,
            };
        }
    }
    if admission.turn != 0 {
        // The shadow rule's schedule keeps the turn (it would have made the call wait), but
        // the call goes on now.
        let wait = admission.turn.saturating_sub(clock::precise_nanos());
        if wait > 0 {
            target.stats.shadow().on_wait(count, wait);
        }
        admission.turn = 0;
    }
    ShadowPass {
        held: admission.holds().then(|| Box::new(admission)),
        blocked: false,
    }
}

/// Gives back what a chain's shadow part reserved for a call that will not run after all (see
/// [`cancel`]): all of it when it held something for the exit; a shadow admission that held
/// nothing was dropped at the entry, and its rate passes stay counted (as a call that came and
/// went).
fn cancel_shadow(target: Target<'_>, chain: &Chain, count: u32, pass: ShadowPass) {
    let Some(mut held) = pass.held else {
        return;
    };
    let shadow = Shadow::of(chain);
    let Admission { reserved, tickets } = &mut *held;
    let mut call = Call {
        target,
        counter: &shadow.counter,
        params: &Params::NONE,
        count,
        gates: shadow.chain.flow.gates.len(),
        out: reserved,
    };
    release_stages(&shadow.chain, &mut call, tickets, STAGES.len());
}

/// Gives back what the first `ran` stages reserved, the latest first.
#[cold]
fn release_stages(chain: &Chain, call: &mut Call<'_>, tickets: &mut Tickets, ran: usize) {
    for stage in STAGES[..ran].iter().rev() {
        (stage.release)(chain, call, tickets);
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
    shadow: ShadowPass,
) {
    // The slots the call was checked with (what `check` returned): a slot registered since
    // never saw it.
    let slots: &[Registered] = custom.as_ref().map_or(&[], SlotList::slots);
    cancel_shadow(target, chain, count, shadow);
    let at = admission.at;
    let Admission { reserved, tickets } = &mut admission;
    let mut call = Call {
        target,
        counter,
        params: &Params::NONE,
        count,
        gates: chain.flow.gates.len(),
        out: reserved,
    };
    drop(Unwind {
        chain,
        call: &mut call,
        tickets,
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
    chain: &'c Chain,
    call: &'c mut Call<'a>,
    /// The kinds' tickets of the call.
    tickets: &'c mut Tickets,
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
            circuit: self.chain.circuit_breaker.iter().map(|b| b.state()).max(),
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
                (STAGES[i].release)(self.chain, self.call, self.tickets);
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
fn check_with_custom(
    chain: &Chain,
    call: &mut Call<'_>,
    tickets: &mut Tickets,
) -> Result<Option<SlotList>, BlockError> {
    let slots = custom::registered();
    let at = call.out.at;
    let mut run = Unwind {
        chain,
        call,
        tickets,
        stages: 0,
        slots: slots.slots(),
        admitted: 0,
        times: [at; STAGES.len() + 1],
        armed: true,
    };
    for stage in &STAGES {
        run.run_slots_before(Some(stage.order))?;
        run.stages += 1;
        (stage.check)(chain, run.call, run.tickets)?;
        run.times[run.stages] = run.call.out.at;
    }
    run.run_slots_before(None)?;
    run.armed = false;
    drop(run);
    // Every slot admitted the call: a cancellation asks these.
    Ok(Some(slots))
}
