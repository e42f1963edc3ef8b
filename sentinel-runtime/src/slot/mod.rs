//! The slot chain: ordered rule checks that stop at the first block, then the statistics.
//!
//! Every entry runs the check slots in ascending order; the first that blocks stops the chain,
//! every check that had already admitted the call is cancelled (so a rejected call is never
//! counted as a pass), and the call is counted as a block. An admitted call is counted as a pass;
//! its [`Entry`](crate::Entry)'s drop records the exit.
//!
//! Built in, in this order (Sentinel's): the authority rules at [`AUTHORITY_SLOT_ORDER`], the
//! system rules (inbound entries only) at [`SYSTEM_SLOT_ORDER`], the flow checks (concurrency,
//! then QPS) at [`FLOW_SLOT_ORDER`], the hotspot checks at [`HOTSPOT_SLOT_ORDER`], the circuit
//! breakers at [`CIRCUIT_BREAKER_SLOT_ORDER`] and the outlier checks (endpoints ejected for
//! their errors) at [`OUTLIER_SLOT_ORDER`]. A user adds a check with [`register_check_slot`];
//! with none registered the chain costs nothing beyond the built-in checks.
//!
//! Inside the crate this module holds only what several kinds share (the QPS ring, the
//! parameter table, the concurrency counter, the cluster's leases, custom slots and the stage
//! order numbers, which come from the list of block kinds in `block_kinds.rs`). Each kind of
//! rule is a folder of `kinds/` (`authority`, `system`, `flow`, `hotspot`, `circuit_breaker`,
//! `outlier`) with its stage's check and release and the builder of its part of the `Chain`;
//! `kinds/table.rs` lists them, and `kinds/stages.rs` runs their stages in order (and walks them
//! back to give reservations back).
//!
//! # Panics in user code
//!
//! A check slot may panic. Whatever it panics in, everything the chain had reserved for the call
//! (QPS passes, a concurrency place, a half-open breaker's probe, the earlier custom slots'
//! reservations through their [`CheckSlot::cancel`]) is given back exactly once while the panic
//! unwinds, and the panic then reaches the caller of the entry. A panic inside a
//! [`CheckSlot::cancel`] is contained (it is reported by the panic hook, printed to stderr by
//! default) so that the remaining reservations are still given back.

pub(crate) mod cluster;
pub(crate) mod concurrency;
pub(crate) mod custom;
pub(crate) mod order;
pub(crate) mod param_table;
pub(crate) mod qps_ring;
pub(crate) mod succession;
mod target;
pub(crate) mod threshold;

pub(crate) use concurrency::ConcurrencyCounter;
pub(crate) use custom::{has_custom, install_node_marker, SlotList};
pub use custom::{register_check_slot, CheckSlot, SlotContext};
pub use order::*;
pub(crate) use target::Target;
