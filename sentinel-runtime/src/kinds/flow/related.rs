//! A rule on one resource that counts another resource's traffic (Sentinel's RELATE strategy).

use std::sync::{Arc, OnceLock};

use crate::slot::threshold::Threshold;
use crate::stat::NodeStats;

/// Finds a resource's statistics by name; given by the rule loader, so this layer needs neither
/// the registry nor the node type.
pub(crate) type Resolve = fn(&str) -> Option<&'static NodeStats>;

/// Blocks while the related resource passed at least `threshold` calls in its last second.
/// The related node is looked up until it exists (calls pass meanwhile), then kept.
#[derive(Debug)]
pub(crate) struct RelatedGate {
    /// The related resource's name, freed with the gate when a reload replaces it.
    pub(crate) related: Arc<str>,
    node: OnceLock<&'static NodeStats>,
    resolve: Resolve,
    pub(crate) threshold: Threshold,
}

impl RelatedGate {
    pub(crate) fn new(related: &str, threshold: f64, resolve: Resolve) -> RelatedGate {
        RelatedGate {
            related: Arc::from(related),
            node: OnceLock::new(),
            resolve,
            threshold: Threshold::new(threshold),
        }
    }

    #[inline]
    pub(crate) fn admits(&self, now: u64, count: u32) -> bool {
        let node = match self.node.get() {
            Some(node) => node,
            None => match (self.resolve)(&self.related) {
                Some(node) => self.node.get_or_init(|| node),
                None => return true, // no traffic on it yet
            },
        };
        node.passes(now) + u64::from(count) <= self.threshold.limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_gate_frees_the_related_name() {
        // A reload replaces the gate: the related name it holds goes with it.
        let gate = RelatedGate::new("related-name", 10.0, |_| None);
        let name = Arc::downgrade(&gate.related);
        assert!(gate.admits(0, 1), "no traffic on the related resource yet");
        drop(gate);
        assert!(name.upgrade().is_none(), "the name is freed with its gate");
    }
}
