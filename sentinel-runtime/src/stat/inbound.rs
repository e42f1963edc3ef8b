//! The process-wide statistics of inbound traffic (Sentinel's `ENTRY_NODE`): the passes, blocks
//! and exits of every inbound entry, whatever its resource. The system rules' check reads them
//! (`crate::kinds::system::check`), and [`metrics::inbound`](crate::metrics::inbound) reports them.

use super::NodeStats;

/// A plain static (its constructor is a `const fn`): each read is its address, with no test of
/// a lazy initialization on the inbound pass and exit.
static INBOUND: NodeStats = NodeStats::new();

/// The inbound traffic's statistics.
#[inline]
pub(crate) fn inbound() -> &'static NodeStats {
    &INBOUND
}
