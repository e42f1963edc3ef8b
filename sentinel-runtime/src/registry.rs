//! Every resource node by name, and the cap on how many there are.
//!
//! Consulted by `entry(&str)`, metrics and rule loading; the attribute's static nodes never look
//! here after their first call.
//!
//! # The cap
//!
//! Every distinct name that reaches [`entry`](crate::entry) would otherwise cost a node forever:
//! a caller that builds names from request data could grow memory without bound. So the number
//! of nodes created by name is capped ([`set_max_resources`], [`DEFAULT_MAX_RESOURCES`] = 6000,
//! as in Sentinel). Beyond the cap, a new name gets no node of its own: its entries pass
//! unchecked and are counted together in [`metrics::overflow`](crate::metrics::overflow).
//!
//! The cap cannot be used against real resources: resources defined by the attribute, and names
//! that loaded rules mention, always get their node and do not count against the cap, even after
//! a flood of other names has filled it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, PoisonError, RwLock};

use crate::node::ResourceNode;

/// The default cap on resources created by name: Sentinel's.
pub const DEFAULT_MAX_RESOURCES: usize = 6_000;

static MAX: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RESOURCES);

/// Sets how many resources [`entry`](crate::entry) may create by name (not counting those the
/// attribute defines or loaded rules name). Lowering it below the number already created keeps
/// those and refuses new ones.
///
/// ```
/// sentinel_runtime::registry::set_max_resources(10_000);
/// assert_eq!(sentinel_runtime::registry::max_resources(), 10_000);
/// # sentinel_runtime::registry::set_max_resources(sentinel_runtime::registry::DEFAULT_MAX_RESOURCES);
/// ```
pub fn set_max_resources(max: usize) {
    MAX.store(max, Ordering::Release);
}

/// The cap set by [`set_max_resources`].
pub fn max_resources() -> usize {
    MAX.load(Ordering::Acquire)
}

struct Nodes {
    by_name: HashMap<&'static str, &'static ResourceNode>,
    /// Nodes created by name that count against the cap.
    capped: usize,
}

static NODES: LazyLock<RwLock<Nodes>> = LazyLock::new(|| {
    RwLock::new(Nodes {
        by_name: HashMap::new(),
        capped: 0,
    })
});

/// The node the entries beyond the cap share: never registered, never given rules.
static OVERFLOW: LazyLock<&'static ResourceNode> =
    LazyLock::new(|| ResourceNode::leak("<overflow>"));

/// The node named `name`, if one exists.
pub(crate) fn get(name: &str) -> Option<&'static ResourceNode> {
    NODES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .by_name
        .get(name)
        .copied()
}

/// The node named `name`, created (and passed to `init`) if it does not exist. A node created
/// with `capped` counts against the cap; `None` if the cap is reached.
pub(crate) fn get_or_create(
    name: &str,
    capped: bool,
    init: impl FnOnce(&'static ResourceNode),
) -> Option<&'static ResourceNode> {
    let mut nodes = NODES.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(node) = nodes.by_name.get(name) {
        return Some(node);
    }
    if capped {
        if nodes.capped >= max_resources() {
            return None;
        }
        nodes.capped += 1;
    }
    let node = ResourceNode::leak(name);
    init(node);
    nodes.by_name.insert(node.name(), node);
    Some(node)
}

/// The shared node of the entries beyond the cap.
pub(crate) fn overflow() -> &'static ResourceNode {
    &OVERFLOW
}

/// Every node, in no particular order.
pub(crate) fn all() -> Vec<&'static ResourceNode> {
    NODES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .by_name
        .values()
        .copied()
        .collect()
}
