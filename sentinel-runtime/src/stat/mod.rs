//! Sliding-window statistics: [`LeapArray`] and the per-thread sharded statistics every
//! resource node keeps.

mod bucket;
pub(crate) mod circuit_state;
mod fast_div;
mod inbound;
mod leap_array;
mod node_stats;
mod resource_stats;
pub(crate) mod ring;
pub(crate) mod shadow;
pub(crate) mod word;

pub use bucket::MetricEvent;
pub(crate) use bucket::NO_MIN;
pub(crate) use fast_div::FastDiv;
pub(crate) use inbound::inbound;
pub use leap_array::{LeapArray, WindowShapeError};
pub(crate) use node_stats::{NodeStats, SecondTotals, WindowTotals};
pub(crate) use resource_stats::avg_rt_ms;
pub use resource_stats::{BlockTotals, ResourceStats};
