//! What an entry records on its node when it is decided: a pass or a block.

use crate::error::BlockError;
use crate::node::ResourceNode;
use crate::param::Params;
use crate::stat::BlockTotals;

/// Counts an admitted call's pass on its node (and, if inbound, in the inbound statistics).
#[inline(always)]
pub(super) fn count_pass(
    node: &'static ResourceNode,
    slot: usize,
    at: u64,
    count: u32,
    inbound: bool,
) {
    if inbound {
        crate::stat::inbound().on_pass_in(slot, at, count);
    }
    node.stats().on_pass_in(slot, at, count);
}

/// Counts a blocked call on its node (and, if inbound, in the inbound statistics).
#[cold]
pub(super) fn on_block(
    node: &'static ResourceNode,
    now: u64,
    count: u32,
    params: &Params,
    block: &BlockError,
) {
    node.on_block(now, count, block);
    if params.is_inbound() {
        crate::stat::inbound().on_block(now, count, BlockTotals::index_of_block(block));
    }
}
