//! What the chain decided for an admitted call and what rides with it to its exit: the shared
//! records the stages wrote ([`Reserved`]) and each kind's ticket ([`Tickets`]), as
//! [`Admission`]; what the chain's shadow part decided ([`ShadowPass`]).

use std::ops::{Deref, DerefMut};

use super::call::Reserved;
use super::tickets::Tickets;

/// What the chain decided for an admitted call: what the stages reserved (read through
/// `Deref`: `admission.at`, `admission.counted`, ...) and the kinds' tickets.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    pub(crate) reserved: Reserved,
    /// What each kind's check left with the call until its exit.
    pub(crate) tickets: Tickets,
}

impl Deref for Admission {
    type Target = Reserved;

    #[inline(always)]
    fn deref(&self) -> &Reserved {
        &self.reserved
    }
}

impl DerefMut for Admission {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Reserved {
        &mut self.reserved
    }
}

impl Admission {
    /// An admission at `at` that holds nothing yet.
    #[inline(always)]
    pub(crate) fn at(at: u64) -> Admission {
        Admission {
            reserved: Reserved {
                at,
                ..Reserved::default()
            },
            tickets: Tickets::default(),
        }
    }

    /// Whether the call holds something its exit must give back or report (a place inside, a
    /// probe, hotspot places, a place in the shadow system rules' count, a kind's ticket): a
    /// shadow admission that holds nothing is dropped at once.
    pub(crate) fn holds(&self) -> bool {
        self.reserved.holds() || self.tickets.any()
    }
}

/// What a chain's shadow part decided for a call its enforced part admitted (see
/// `stages::check_shadow`). Kept apart from the [`Admission`], so that entries of chains
/// without a shadow part (the lone-gate shortcuts above all) carry nothing more.
#[derive(Debug, Default)]
pub(crate) struct ShadowPass {
    /// What the shadow part reserved for the call that its exit gives back or reports to (a
    /// place inside, a breaker's probe, hotspot places, a kind's ticket); `None` when it holds
    /// nothing.
    pub(crate) held: Option<Box<Admission>>,
    /// The shadow part would have blocked the call: its breakers and adaptive limit do not
    /// learn the call's outcome (for them, it never ran).
    pub(crate) blocked: bool,
}

impl ShadowPass {
    /// Whether the exit has anything to do for the shadow part.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_none() && !self.blocked
    }
}
