//! The slot chain: ordered rule checks that stop at the first block, then the statistics.
//!
//! Every entry runs the check slots in ascending order; the first that blocks stops the chain,
//! every check that had already admitted the call is cancelled (so a rejected call is never
//! counted as a pass), and the call is counted as a block. An admitted call is counted as a pass;
//! its [`Entry`](crate::Entry)'s drop records the exit.
//!
//! Built in, in this order (Sentinel's): the authority rules at [`AUTHORITY_SLOT_ORDER`], the
//! system rules (inbound entries only) at [`SYSTEM_SLOT_ORDER`], the flow checks (concurrency,
//! then QPS) at [`FLOW_SLOT_ORDER`], the hotspot checks at [`HOTSPOT_SLOT_ORDER`] and the circuit
//! breakers at [`CIRCUIT_BREAKER_SLOT_ORDER`]. A user adds a check with [`register_check_slot`];
//! with none registered the chain costs nothing beyond the built-in checks.
//!
//! Inside the crate: `stage` holds the one ordered list of built-in stages and the runner that
//! walks it (and walks it back to give reservations back); each kind's module under it
//! (`authority`, `system`, `flow`, `hotspot`, `circuit_breaker`) holds its stage's check and
//! release and the builder of its part of the `Chain` from its rules and the chain it replaces.
//!
//! # Panics in user code
//!
//! A check slot may panic. Whatever it panics in, everything the chain had reserved for the call
//! (QPS passes, a concurrency place, a half-open breaker's probe, the earlier custom slots'
//! reservations through their [`CheckSlot::cancel`]) is given back exactly once while the panic
//! unwinds, and the panic then reaches the caller of the entry. A panic inside a
//! [`CheckSlot::cancel`] is contained (it is reported by the panic hook, printed to stderr by
//! default) so that the remaining reservations are still given back.

pub(crate) mod adaptive;
mod chain;
pub(crate) mod circuit_breaker;
pub(crate) mod cluster;
mod concurrency;
mod custom;
mod gate;
mod hot_top;
mod order;
#[cfg(feature = "tower")]
pub(crate) use hot_top::note_text;
#[cfg(feature = "dashboard")]
pub(crate) use hot_top::text_of;
mod hotspot;
mod origin;
pub(crate) mod param_table;
mod qps;
pub(crate) mod qps_ring;
mod related;
mod stage;
mod succession;
pub(crate) mod system;
mod threshold;
mod throttle;
mod warm_up;

pub(crate) use adaptive::{AdaptiveLimit, Outcome};
pub(crate) use chain::{Admission, BuildContext, Chain, ChainRules, Target, INBOUND_CALL};
pub(crate) use circuit_breaker::{CircuitBreaker, ProbeTicket};
pub(crate) use concurrency::ConcurrencyCounter;
pub(crate) use custom::{has_custom, install_node_marker, SlotList};
pub use custom::{register_check_slot, CheckSlot, SlotContext};
pub(crate) use gate::Gate;
pub(crate) use hotspot::{BlockedValues, HotPass, HotspotGate};
pub use order::{
    AUTHORITY_SLOT_ORDER, CIRCUIT_BREAKER_SLOT_ORDER, FLOW_SLOT_ORDER, HOTSPOT_SLOT_ORDER,
    SYSTEM_SLOT_ORDER,
};
pub(crate) use origin::OriginGate;
pub(crate) use qps::QpsGate;
pub(crate) use related::Resolve;
pub(crate) use stage::{build, cancel, check};
