//! The process-wide statistics of inbound traffic (Sentinel's `ENTRY_NODE`): the passes, blocks
//! and exits of every inbound entry, whatever its resource. The system rules' check reads them
//! (`crate::kinds::system::check`), and [`metrics::inbound`](crate::metrics::inbound) reports them.

use std::sync::LazyLock;

use super::NodeStats;

static INBOUND: LazyLock<NodeStats> = LazyLock::new(NodeStats::new);

/// The inbound traffic's statistics.
#[inline]
pub(crate) fn inbound() -> &'static NodeStats {
    &INBOUND
}
