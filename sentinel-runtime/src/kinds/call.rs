//! What the stages see of a call and record for it: [`Call`], and what they decided for an
//! admitted call ([`Admission`]); what a kind's builder may read ([`BuildContext`]).

use crate::kinds::circuit_breaker::breaker::ProbeTicket;
use crate::kinds::flow::related::Resolve;
use crate::kinds::hotspot::gate::{HotPass, HotPasses};
use crate::kinds::outlier::OutlierTicket;
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

/// What the chain decided for an admitted call.
#[derive(Debug, Default)]
pub(crate) struct Admission {
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
    /// The endpoint the call was admitted to by the outlier check, if tracked.
    pub(crate) outlier: OutlierTicket,
}

/// What a chain's shadow part decided for a call its enforced part admitted (see
/// `stages::check_shadow`). Kept apart from the [`Admission`], so that entries of chains
/// without a shadow part (the lone-gate shortcuts above all) carry nothing more.
#[derive(Debug, Default)]
pub(crate) struct ShadowPass {
    /// What the shadow part reserved for the call that its exit gives back or reports to (a
    /// place inside, a breaker's probe, hotspot places); `None` when it holds nothing.
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

/// [`Admission::inbound`]: the call is inbound traffic.
pub(crate) const INBOUND_CALL: u64 = 1;

impl Admission {
    /// Whether the call holds something its exit must give back or report (a place inside, a
    /// probe, hotspot places, a place in the shadow system rules' count): a shadow admission
    /// that holds nothing is dropped at once.
    pub(crate) fn holds(&self) -> bool {
        self.counted != 0
            || self.system.counted
            || self.probe.is_some()
            || self.hot.holds_places()
            || self.outlier.is_some()
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
/// reserved so far, written in place into the caller's [`Admission`] (a moved struct is copied
/// with wide loads that stall on the narrower stores that built it: measured on this path).
pub(crate) struct Call<'a> {
    pub(crate) target: Target<'a>,
    pub(crate) counter: &'a ConcurrencyCounter,
    pub(crate) params: &'a Params<'a>,
    pub(crate) count: u32,
    /// The flow checks' first `gates` QPS gates admitted the call (at `out.at`).
    pub(crate) gates: usize,
    pub(crate) out: &'a mut Admission,
}
