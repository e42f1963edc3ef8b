//! The exit of an [`Entry`], recorded when it is dropped: the common exit (a guarded
//! function's sync call holding nothing) inline, every other one out of line.

use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;

use super::guard::{
    Entry, COUNTED, COUNT_SHIFT, ERROR, HELD, INBOUND, PENDING, RUNNING, SHADOW_BLOCKED,
    SYSTEM_COUNTED, WATCH_PANIC,
};
use crate::clock;
use crate::kinds::chain::Shadow;
use crate::kinds::circuit_breaker::ProbeTicket;
use crate::kinds::flow::adaptive::AdaptiveLimit;
use crate::kinds::flow::Outcome;
use crate::kinds::system::check as system;
use crate::kinds::{Admission, Exit};
use crate::node::{REPORTS_ADAPTIVE, REPORTS_BREAKERS};

impl Drop for Entry {
    #[inline]
    fn drop(&mut self) {
        let now = clock::now_nanos();
        let flags = self.flags.load(Ordering::Relaxed);
        let reports = self.node.reports_exits();
        // One test of both (a bitwise or, not `||`: no second branch, no flags in registers).
        if (u64::from(reports) | (flags & (WATCH_PANIC | INBOUND | HELD | COUNTED))) != 0 {
            // Out of line, a tail call: the common exit keeps its few values in registers and
            // has no call after the clock's that would need registers saved.
            return self.exit_other(now, flags, reports);
        }
        // A guarded function's sync call (it does not ask whether the thread is unwinding:
        // its body that did not return is the panic) with nothing reserved to give back (no
        // count of calls inside: `REPORTS_COUNTED`): the statistics are all.
        self.record_exit(now, flags, flags & (ERROR | RUNNING) != 0);
    }
}

impl Entry {
    /// Every exit but the common one of [`Drop`]: an entry whose exit asks whether the thread
    /// is unwinding, or that is inbound, holds something or reports to something. Only picks
    /// the exit, each a tail call, so that none pays for the registers another needs.
    #[inline(never)]
    fn exit_other(&mut self, now: u64, flags: u64, reports: u8) {
        if reports == 0 && flags & (HELD | COUNTED | SYSTEM_COUNTED) == 0 {
            if flags & INBOUND != 0 {
                return self.exit_inbound(now, flags);
            }
            return self.exit_watching(now, flags);
        }
        self.exit_reporting(now, flags, reports);
    }

    /// Whether the call failed: marked an error, or a panic in the guarded code, not one that
    /// was already unwinding when it was entered (a guarded body that did not return, or the
    /// thread unwinding if the exit is to ask).
    #[inline(always)]
    fn failed(flags: u64) -> (bool, bool) {
        let panicking = flags & (RUNNING | WATCH_PANIC) != 0
            && (flags & RUNNING != 0 || std::thread::panicking());
        (flags & ERROR != 0 || panicking, panicking)
    }

    /// The exit of an entry that holds nothing, reports to nothing and is not inbound, but
    /// asks whether the thread is unwinding (one made by name, `WATCH_PANIC`): statistics
    /// only, as the common exit. (An unwinding thread's exit is a call of its own, so that
    /// the common one saves no registers for it.)
    #[inline(never)]
    fn exit_watching(&mut self, now: u64, flags: u64) {
        if flags & WATCH_PANIC != 0 && std::thread::panicking() {
            return self.exit_unwinding(now, flags);
        }
        self.record_exit(now, flags, flags & (ERROR | RUNNING) != 0);
    }

    /// [`exit_watching`](Self::exit_watching)'s exit of a call that panicked: an error.
    #[cold]
    #[inline(never)]
    fn exit_unwinding(&mut self, now: u64, flags: u64) {
        self.record_exit(now, flags, true);
    }

    /// The resource's statistics of the exit (the common exit's, and the by-name one's).
    #[inline(always)]
    fn record_exit(&mut self, now: u64, flags: u64, error: bool) {
        let rt_us = now.saturating_sub(self.start) / 1_000;
        let count = (flags >> COUNT_SHIFT) as u32;
        self.node.stats().on_exit(now, count, rt_us, error);
    }

    /// The exit of an inbound entry that holds nothing and reports to nothing (every entry a
    /// tower layer makes while no system rule counts the calls inside): [`exit_reporting`]'s
    /// steps for it, without testing for the others.
    ///
    /// [`exit_reporting`]: Self::exit_reporting
    #[inline(never)]
    fn exit_inbound(&mut self, now: u64, flags: u64) {
        let rt_us = now.saturating_sub(self.start) / 1_000;
        let (error, _) = Self::failed(flags);
        let count = (flags >> COUNT_SHIFT) as u32;
        self.node.stats().on_exit(now, count, rt_us, error);
        system::inside().exit(0);
        crate::stat::inbound().on_exit(now, count, rt_us, error);
    }

    /// The exit of an entry that holds hotspot places or a place in its resource's count of
    /// calls inside, is inbound, or reports to breakers or an adaptive limit: everything
    /// [`Drop`] does for the common entry, and those.
    #[cold]
    #[inline(never)]
    fn exit_reporting(&mut self, now: u64, flags: u64, reports: u8) {
        let rt_us = now.saturating_sub(self.start) / 1_000;
        let (error, panicking) = Self::failed(flags);
        let abandoned = flags & PENDING != 0 && !panicking;
        // What was reserved and the statistics first: no user code runs before them.
        let counter = self.node.counter();
        // The calls inside as this one finishes (itself included), for an adaptive limit.
        let inside = if reports & REPORTS_ADAPTIVE != 0 {
            counter.current()
        } else {
            0
        };
        let count = (flags >> COUNT_SHIFT) as u32;
        // A counted call holds a place for each pass of its batch.
        counter.exit(if flags & COUNTED != 0 {
            u64::from(count)
        } else {
            0
        });
        // SAFETY: `held` is taken once, here, by the exit (the entry is being dropped), and
        // never read again.
        let held = unsafe { ManuallyDrop::take(&mut self.held) };
        // What the shadow part held: its probe (reported to its breaker below), and the calls
        // inside its adaptive limit as this one finishes.
        let mut shadow = (ProbeTicket::default(), None);
        if let Some(held) = held {
            for &(i, place) in &held.places {
                if let Some(gate) = held.chain.hotspot.get(i) {
                    gate.exit(place);
                }
            }
            let exit = Exit {
                resource: self.node.name(),
                now,
                error,
                abandoned,
            };
            if held.tickets.any() {
                held.tickets.exit(&held.chain, &exit);
            }
            if let Some(admission) = &held.shadow {
                let part = Shadow::of(&held.chain);
                shadow = exit_shadow(part, admission);
                // The shadow part's kinds learn the call's outcome as the enforced ones do.
                if admission.tickets.any() {
                    admission.tickets.exit(&part.chain, &exit);
                }
            }
        }
        self.node.stats().on_exit(now, count, rt_us, error);
        if flags & INBOUND != 0 {
            system::inside().exit(u64::from(flags & SYSTEM_COUNTED != 0));
            crate::stat::inbound().on_exit(now, count, rt_us, error);
        }
        if reports & (REPORTS_BREAKERS | REPORTS_ADAPTIVE) != 0 {
            // Breaker transitions run listeners: a panicking one is contained there.
            self.node.with_chain(|chain| {
                for breaker in chain.circuit_breaker.iter() {
                    let probe = self.probe.for_breaker(breaker);
                    breaker.on_exit(self.node.name(), now, rt_us, error, abandoned, probe);
                }
                let rtt = now.saturating_sub(self.start);
                if let Some(limit) = &chain.flow.adaptive {
                    sample(limit, now, rtt, inside, error, abandoned);
                }
                // The shadow part learns the outcome of the calls it would have admitted, as
                // the enforced part does.
                let Some(part) = chain
                    .shadow
                    .as_ref()
                    .filter(|_| flags & SHADOW_BLOCKED == 0)
                else {
                    return;
                };
                for breaker in part.chain.circuit_breaker.iter() {
                    let probe = shadow.0.for_breaker(breaker);
                    breaker.on_exit(self.node.name(), now, rt_us, error, abandoned, probe);
                }
                if let (Some(limit), Some(inside)) = (&part.chain.flow.adaptive, shadow.1) {
                    sample(limit, now, rtt, inside, error, abandoned);
                }
            });
        }
    }
}

/// Gives back what a chain's shadow part held for a call (its place inside, its hotspot
/// places, its place in the shadow system rules' count); returns its probe ticket and, if it held a place inside, the calls inside as this
/// one finishes (itself included), for the shadow adaptive limit.
#[cold]
fn exit_shadow(part: &Shadow, admission: &Admission) -> (ProbeTicket, Option<u64>) {
    let mut inside = None;
    if admission.counted != 0 {
        inside = Some(part.counter.current());
        part.counter.release(admission.counted);
    }
    for (i, place) in admission.inside() {
        if let Some(gate) = part.chain.hotspot.get(i) {
            gate.exit(place);
        }
    }
    system::exit_shadow(admission.system);
    (admission.probe, inside)
}

/// Reports a finished call to an adaptive limit. A cancelled call (its future dropped
/// half-way) says nothing about the limit, unless it was cut after the limit's timeout (an
/// outer timeout drops exactly the calls the limit counts as drops).
fn sample(limit: &AdaptiveLimit, now: u64, rtt: u64, inside: u64, error: bool, abandoned: bool) {
    if !abandoned || limit.timed_out(rtt) {
        let outcome = if error || abandoned {
            Outcome::Dropped
        } else {
            Outcome::Success
        };
        limit.on_sample(now, rtt, inside, outcome);
    }
}
