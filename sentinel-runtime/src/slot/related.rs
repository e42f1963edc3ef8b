//! A rule on one resource that counts another resource's traffic (Sentinel's RELATE strategy).

use std::sync::OnceLock;

use super::threshold::Threshold;
use crate::stat::NodeStats;

/// Finds a resource's statistics by name; given by the rule loader, so this layer needs neither
/// the registry nor the node type.
pub(crate) type Resolve = fn(&str) -> Option<&'static NodeStats>;

/// Blocks while the related resource passed at least `threshold` calls in its last second.
/// The related node is looked up until it exists (calls pass meanwhile), then kept.
#[derive(Debug)]
pub(crate) struct RelatedGate {
    pub(super) related: &'static str,
    node: OnceLock<&'static NodeStats>,
    resolve: Resolve,
    pub(super) threshold: Threshold,
}

impl RelatedGate {
    pub(super) fn new(related: &str, threshold: f64, resolve: Resolve) -> RelatedGate {
        RelatedGate {
            related: Box::leak(related.to_owned().into_boxed_str()),
            node: OnceLock::new(),
            resolve,
            threshold: Threshold::new(threshold),
        }
    }

    #[inline]
    pub(super) fn admits(&self, now: u64, count: u32) -> bool {
        let node = match self.node.get() {
            Some(node) => node,
            None => match (self.resolve)(self.related) {
                Some(node) => self.node.get_or_init(|| node),
                None => return true, // no traffic on it yet
            },
        };
        node.passes(now) + u64::from(count) <= self.threshold.limit()
    }
}
