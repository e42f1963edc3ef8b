//! Every resource node by name: read-mostly, consulted only by `entry(&str)`, metrics and rule
//! loading. The attribute's static nodes never look here after their first call.

use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock};

use crate::node::ResourceNode;

static NODES: LazyLock<RwLock<HashMap<&'static str, &'static ResourceNode>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// The node named `name`, if one exists.
pub(crate) fn get(name: &str) -> Option<&'static ResourceNode> {
    NODES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .copied()
}

/// The node named `name`, created (and passed to `init`) if it does not exist.
pub(crate) fn get_or_create(
    name: &str,
    init: impl FnOnce(&'static ResourceNode),
) -> &'static ResourceNode {
    let mut nodes = NODES.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(node) = nodes.get(name) {
        return node;
    }
    let node = ResourceNode::leak(name);
    init(node);
    nodes.insert(node.name(), node);
    node
}

/// Every node, in no particular order.
pub(crate) fn all() -> Vec<&'static ResourceNode> {
    NODES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .copied()
        .collect()
}
