//! What the stages see of a call and record for it: [`Call`], and what they decided and
//! reserved for it ([`Reserved`]); what a kind's exit hook learns of the call's end ([`Exit`]);
//! what a kind's builder may read ([`BuildContext`]). The kinds' tickets, which the table
//! derives, ride beside [`Reserved`] in the `Admission` (`kinds/admission.rs`): this file is
//! below the kinds, so it names none of the table's types.

use crate::kinds::circuit_breaker::breaker::ProbeTicket;
use crate::kinds::flow::related::Resolve;
use crate::kinds::hotspot::gate::{HotPass, HotPasses};
use crate::kinds::system::check::SystemPass;
use crate::param::Params;
use crate::slot::param_table;
use crate::slot::ConcurrencyCounter;
pub(crate) use crate::slot::Target;
use crate::stat::NodeStats;

/// What a builder may read of the resource: the time, its statistics (a new QPS gate starts
/// with the passes already admitted in its window) and how to find another resource's
/// statistics (a rule that relates to another resource).
#[derive(Clone, Copy)]
pub(crate) struct BuildContext<'a> {
    /// The parameters' names the resource supplies, if it learned them (rules that name their
    /// parameter resolve it by these).
    pub(crate) param_names: Option<&'a [Option<String>]>,
    pub(crate) now: u64,
    pub(crate) stats: &'a NodeStats,
    pub(crate) resolve: Resolve,
    /// The part being built is the chain's shadow part (set by `Chain::build`): a check that
    /// reports on its own (a breaker's transitions) says it is a shadow one.
    pub(crate) shadow: bool,
}

/// What the stages decided and reserved for a call, written through [`Call::out`]: the shared
/// records that several kinds or the entry read. A kind's own per-call state is its ticket
/// ([`Kind::Ticket`](super::kind::Kind::Ticket)), kept beside this in the `Admission`.
#[derive(Debug, Default)]
pub(crate) struct Reserved {
    /// The time the call counts at (the entry's clock reading, or later if a QPS window had
    /// already moved past it).
    pub(crate) at: u64,
    /// When the caller's throttling turn comes, on the precise clock (0: pass now).
    pub(crate) turn: u64,
    /// The probe ticket, if a half-open breaker admitted the call as its probe.
    pub(crate) probe: ProbeTicket,
    /// The places the call took in the node's concurrency counter (its batch; 0: none; a
    /// whole word: see `entry::enter`).
    pub(crate) counted: u64,
    /// The origin gates (bit `i`: `origin_gates[i]`) that admitted the call.
    pub(crate) origin_passes: u64,
    /// The key of the call's origin in the origin gates (when `origin_passes` is not 0).
    pub(crate) origin_key: u64,
    /// What each hotspot gate (by index in the chain) admitted.
    pub(crate) hot: HotPasses,
    /// [`INBOUND_CALL`] for inbound traffic, else 0.
    pub(crate) inbound: u64,
    /// What the system check reserved (`counted`: the call took a place in the system rules'
    /// count of inbound calls inside).
    pub(crate) system: SystemPass,
}

/// [`Reserved::inbound`]: the call is inbound traffic.
pub(crate) const INBOUND_CALL: u64 = 1;

impl Reserved {
    /// Whether the call holds something here that its exit must give back or report (a place
    /// inside, a probe, hotspot places, a place in the shadow system rules' count).
    #[inline(always)]
    pub(crate) fn holds(&self) -> bool {
        self.counted != 0 || self.system.counted || self.probe.is_some() || self.hot.holds_places()
    }

    /// The places the call took in hotspot concurrency counters, which its exit gives back.
    #[inline]
    pub(crate) fn inside(&self) -> impl Iterator<Item = (usize, param_table::Place)> + '_ {
        self.hot.iter().filter_map(|&(i, pass)| match pass {
            HotPass::Inside(slot) => Some((i, slot)),
            _ => None,
        })
    }
}

/// One call going through the stages: what it asks for, and what the stages decided and
/// reserved so far, written in place into the caller's [`Reserved`] (a moved struct is copied
/// with wide loads that stall on the narrower stores that built it: measured on this path). A
/// kind's ticket is not in it: its check returns it, its release and exit hook receive it.
pub(crate) struct Call<'a> {
    pub(crate) target: Target<'a>,
    pub(crate) counter: &'a ConcurrencyCounter,
    pub(crate) params: &'a Params<'a>,
    pub(crate) count: u32,
    /// The flow checks' first `gates` QPS gates admitted the call (at `out.at`).
    pub(crate) gates: usize,
    pub(crate) out: &'a mut Reserved,
}

/// What the exit of an admitted call knows, for the kinds' exit hooks
/// ([`Kind::on_exit`](super::kind::Kind::on_exit)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exit {
    /// The entered resource's name.
    pub(crate) resource: &'static str,
    /// The exit's clock reading.
    pub(crate) now: u64,
    /// The call failed (an error set, or a panic of its own).
    pub(crate) error: bool,
    /// The call was abandoned (its future dropped half-way): no verdict on it.
    pub(crate) abandoned: bool,
}
