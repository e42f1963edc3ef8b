//! The checks in force on a resource ([`Chain`]), built from its rules by each kind's builder,
//! and what they decide for an admitted call ([`Admission`]).

use std::sync::Arc;

use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::circuit_breaker::{CircuitBreaker, ProbeTicket};
use crate::kinds::flow::related::Resolve;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::flow::{AdaptiveLimit, Gate, OriginGate, QpsGate};
use crate::kinds::hotspot::gate::{HotPass, HotPasses, HotspotGate};
use crate::kinds::hotspot::rule::HotspotRule;
use crate::kinds::system::check::SystemPass;
use crate::param::Params;
use crate::slot::param_table;
use crate::slot::ConcurrencyCounter;
pub(crate) use crate::slot::Target;
use crate::stat::NodeStats;

/// The checks in force on a resource, as the entry path reads them. Each field is one kind's
/// part, built by that kind's `build` (see [`Chain::build`]) and checked by its stage.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    /// The authority rules (by origin), checked first.
    pub(crate) authority: Vec<AuthorityRule>,
    /// The smallest concurrency rule's limit (and its threshold as given), if any.
    pub(crate) concurrency: Option<(u64, f64)>,
    /// The adaptive concurrency limit, if an adaptive rule is in force.
    pub(crate) adaptive: Option<Arc<AdaptiveLimit>>,
    /// The QPS checks, in order.
    pub(crate) gates: Vec<Arc<Gate>>,
    /// The QPS checks of rules with an origin (at most 64), after `gates`.
    pub(crate) origin_gates: Vec<Arc<OriginGate>>,
    /// The hotspot (per-parameter-value) checks, after the flow checks.
    pub(crate) hotspots: Vec<HotspotGate>,
    /// The circuit breakers, checked after the hotspot checks.
    pub(crate) breakers: Vec<Arc<CircuitBreaker>>,
    /// Whether the chain is a single check and nothing else: an entry then only asks that
    /// check, without the stage runner, when it is not inbound or no system rule is in force,
    /// custom slots do not run on the node and the resource does not count its calls inside (all read
    /// at the entry; see [`Chain::lone_qps`] and [`Chain::lone_hotspot`]).
    pub(crate) lone: Lone,
}

/// What [`Chain::lone`] says the chain is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Lone {
    /// Anything else: the stage runner runs.
    #[default]
    No,
    /// One exact QPS gate (`gates[0]`).
    Qps,
    /// One hotspot gate (`hotspots[0]`) limiting a rate, with no wait and no cluster part.
    Hotspot,
}

/// A resource's rules in force, by kind, as the manager hands them to [`Chain::build`] (all
/// validated and naming the resource).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChainRules<'a> {
    pub(crate) authority: &'a [AuthorityRule],
    pub(crate) flow: &'a [FlowRule],
    pub(crate) hotspot: &'a [HotspotRule],
    pub(crate) breakers: &'a [CircuitBreakerRule],
}

/// What a builder may read of the resource: the time, its statistics (a new QPS gate starts
/// with the passes already admitted in its window) and how to find another resource's
/// statistics (a rule that relates to another resource).
#[derive(Clone, Copy)]
pub(crate) struct BuildContext<'a> {
    pub(crate) now: u64,
    pub(crate) stats: &'a NodeStats,
    pub(crate) resolve: Resolve,
}

impl Chain {
    /// Starts loading what the hotspot checks will read of the call's parameters (their
    /// tables' lines, over a large table misses to memory), so that the misses overlap the work
    /// before the checks. Only a hint: the checks are the same without it.
    #[inline(always)]
    pub(crate) fn prefetch_params(&self, params: &Params) {
        for gate in &self.hotspots {
            gate.prefetch(params);
        }
    }

    /// The lone exact QPS gate, if the chain is that and nothing else (the entry's shortcut:
    /// no stage runner, no admission record; the same checks and the same counts).
    #[inline(always)]
    pub(crate) fn lone_qps(&self) -> Option<&QpsGate> {
        if self.lone != Lone::Qps {
            return None;
        }
        self.gates.first()?.as_qps()
    }

    /// The gate of [`lone_qps`](Self::lone_qps), shared (the node pins it).
    pub(crate) fn lone_qps_gate(&self) -> Option<&Arc<Gate>> {
        self.lone_qps()?;
        self.gates.first()
    }

    /// The lone hotspot gate, if the chain is that and nothing else (as [`lone_qps`]).
    ///
    /// [`lone_qps`]: Self::lone_qps
    #[inline(always)]
    pub(crate) fn lone_hotspot(&self) -> Option<&HotspotGate> {
        if self.lone != Lone::Hotspot {
            return None;
        }
        self.hotspots.first()
    }

    /// Sets [`lone`](Self::lone) from what the chain holds (called by the builder).
    pub(crate) fn mark_lone(&mut self) {
        let nothing_else = self.authority.is_empty()
            && self.origin_gates.is_empty()
            && self.concurrency.is_none()
            && self.adaptive.is_none()
            && self.breakers.is_empty();
        self.lone = match (self.gates.as_slice(), self.hotspots.as_slice()) {
            ([gate], []) if nothing_else && gate.as_qps().is_some() => Lone::Qps,
            ([], [gate]) if nothing_else && gate.is_plain_rate() => Lone::Hotspot,
            _ => Lone::No,
        };
    }

    /// No checks at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.authority.is_empty()
            && self.concurrency.is_none()
            && self.adaptive.is_none()
            && self.gates.is_empty()
            && self.origin_gates.is_empty()
            && self.hotspots.is_empty()
            && self.breakers.is_empty()
    }

    /// Whether the chain needs the resource's count of calls inside.
    pub(crate) fn counts_inside(&self) -> bool {
        self.concurrency.is_some() || self.adaptive.is_some()
    }
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
}

/// [`Admission::inbound`]: the call is inbound traffic.
pub(crate) const INBOUND_CALL: u64 = 1;

impl Admission {
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
    pub(crate) chain: &'a Chain,
    pub(crate) counter: &'a ConcurrencyCounter,
    pub(crate) params: &'a Params<'a>,
    pub(crate) count: u32,
    /// `chain.gates[..gates]` admitted the call (at `out.at`).
    pub(crate) gates: usize,
    pub(crate) out: &'a mut Admission,
}
