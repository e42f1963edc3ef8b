//! What the checks see of the resource a call enters ([`Target`]).

use crate::stat::NodeStats;

/// The resource a call enters, as the checks see it: its name and its statistics (never the
/// node type or the registry: see the layering in the crate docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) name: &'static str,
    pub(crate) stats: &'a NodeStats,
}
