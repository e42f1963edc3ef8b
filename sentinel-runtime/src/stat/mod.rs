//! Sliding-window statistics: [`LeapArray`] of [`MetricBucket`]s, and the per-thread sharded
//! statistics every resource node keeps.

mod bucket;
mod fast_div;
mod leap_array;
mod node_stats;
pub(crate) mod word;

pub use bucket::{MetricBucket, MetricEvent};
pub(crate) use fast_div::FastDiv;
pub(crate) use leap_array::Position;
pub use leap_array::{LeapArray, WindowShapeError};
pub(crate) use node_stats::{NodeStats, SecondTotals, WindowTotals};
