//! Every resource node by name, and the cap on how many there are.
//!
//! Consulted by `entry(&str)`, metrics and rule loading; the attribute's static nodes never look
//! here after their first call.
//!
//! # Lookups take no lock
//!
//! Nodes live in a name table (`sync::NameTable`): a lookup hashes the name with a keyed hash
//! and probes an insert-only open-addressing table with atomic loads (no lock, no write to
//! shared memory).
//! Nodes are never removed, so a name found stays valid. Creating a node takes a lock; it is
//! rare (bounded by the cap).
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

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, PoisonError, RwLock};

use crate::node::ResourceNode;
use crate::sync::NameTable;

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

struct Registry {
    /// The keyed hash of names (seeded once per process, so a client cannot aim for
    /// collisions).
    hasher: foldhash::fast::RandomState,
    nodes: NameTable<ResourceNode, AtomicU64>,
    /// Nodes created by name that count against the cap (changed only under the table's
    /// writer lock).
    capped: AtomicUsize,
}

impl Registry {
    #[inline(always)]
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    // Before the first node is made (see `ResourceNode`'s `CHECKS_CUSTOM`).
    crate::slot::install_node_marker(mark_custom);
    Registry {
        hasher: foldhash::fast::RandomState::default(),
        nodes: NameTable::new(16),
        capped: AtomicUsize::new(0),
    }
});

/// The node the entries beyond the cap share: never registered, never given rules.
static OVERFLOW: LazyLock<&'static ResourceNode> = LazyLock::new(|| {
    // The registration of a slot marks this node too: its marker is installed first.
    LazyLock::force(&REGISTRY);
    ResourceNode::leak("<overflow>")
});

/// A custom check slot was registered: every node made so far runs the chain from now on.
/// The list is taken under the registry's writer lock, under which nodes are made: a node
/// missing from it was made after, and read the registration's flag when it was made.
fn mark_custom() {
    for node in REGISTRY.nodes.all_settled() {
        node.mark_custom();
    }
    overflow().mark_custom();
}

/// The node named `name`, if one exists. Takes no lock and writes no memory.
#[inline]
pub(crate) fn get(name: &str) -> Option<&'static ResourceNode> {
    let registry = &*REGISTRY;
    registry.nodes.get(registry.hash(name), name)
}

/// The node named `name`, created (and passed to `init`) if it does not exist. A node created
/// with `capped` counts against the cap; `None` if the cap is reached.
pub(crate) fn get_or_create(
    name: &str,
    capped: bool,
    init: impl FnOnce(&'static ResourceNode),
) -> Option<&'static ResourceNode> {
    let registry = &*REGISTRY;
    registry.nodes.get_or_insert(registry.hash(name), name, || {
        if capped {
            // Under the table's writer lock: no other creation races this count.
            let created = registry.capped.load(Ordering::Relaxed);
            if created >= max_resources() {
                return None;
            }
            registry.capped.store(created + 1, Ordering::Relaxed);
        }
        let node = ResourceNode::leak(name);
        init(node);
        Some(node)
    })
}

/// How the rule manager creates a node by name: `(name, known_only)` -> the node, `None` if
/// the cap refuses it or, with `known_only`, if no loaded rule names it.
pub(crate) type CreateHook = fn(&str, bool) -> Option<&'static ResourceNode>;

/// The manager's creation, once it is in use. Creation by name holds the read side, so a
/// creation that started without the hook has finished (and a load after the installation
/// sees its node) before the hook is in place.
static CREATE_HOOK: RwLock<Option<CreateHook>> = RwLock::new(None);

/// Installs the rule manager's creation of nodes by name (see [`CreateHook`]).
pub(crate) fn install_create_hook(hook: CreateHook) {
    *CREATE_HOOK.write().unwrap_or_else(PoisonError::into_inner) = Some(hook);
}

/// How the rule manager puts a node's named hotspot rules in force once the node learned its
/// parameters' names (see [`learn_param_names`]).
pub(crate) type NamesHook = fn(&ResourceNode);

/// The manager's hook for learned names, once it is in use (before that no rule is loaded, and
/// the first load reads the names the node has by then).
static NAMES_HOOK: RwLock<Option<NamesHook>> = RwLock::new(None);

/// Installs the rule manager's reaction to learned parameter names (see [`NamesHook`]).
pub(crate) fn install_names_hook(hook: NamesHook) {
    *NAMES_HOOK.write().unwrap_or_else(PoisonError::into_inner) = Some(hook);
}

/// Teaches `node` its parameters' names (by index; `None`: unnamed), as entries by name and the
/// tower layer know them; when that taught it anything, the manager's hook puts any hotspot rule
/// naming a parameter in force. Entries call this only while the node knows no names yet.
#[cold]
pub(crate) fn learn_param_names<S: AsRef<str>>(node: &ResourceNode, names: &[Option<S>]) {
    if node.learn_param_names(names) {
        let hook = *NAMES_HOOK.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(names_learned) = hook {
            names_learned(node);
        }
    }
}

/// Creates `name` through the manager's hook, or plainly (capped) before it is installed.
fn create(name: &str, known_only: bool) -> Option<&'static ResourceNode> {
    let hook = CREATE_HOOK.read().unwrap_or_else(PoisonError::into_inner);
    match *hook {
        Some(create) => create(name, known_only),
        None if known_only => None,
        None => get_or_create(name, true, |_| {}),
    }
}

/// The node of `name` for an entry by name: the existing node, else a new one with any loaded
/// rules for it in force. A name that loaded rules mention always gets its node; any other new
/// name counts against the cap on resources, and beyond it gets the shared overflow node (its
/// entries pass unchecked).
#[inline]
pub(crate) fn node_by_name(name: &str) -> &'static ResourceNode {
    match get(name) {
        Some(node) => node,
        None => create_by_name(name),
    }
}

/// The slots of each thread's cache of nodes found by name ([`node_by_name_cached`]).
const RECENT_SLOTS: usize = 16;

thread_local! {
    /// Nodes this thread recently found by name: `(address of the name's text, node)`, in the
    /// slot the address and length pick. A fixed 256 bytes per thread.
    static RECENT: std::cell::Cell<[(usize, Option<&'static ResourceNode>); RECENT_SLOTS]> =
        const { std::cell::Cell::new([(0, None); RECENT_SLOTS]) };
}

/// [`node_by_name`] through this thread's cache of recent names: a name whose text is at the
/// address a cached node was found for, and reads as that node's name, is that node (nodes are
/// never removed or renamed), with no hash or probe of the name table. A text freed and
/// written again at the same address is found by its text: a hit compares the whole name.
/// The overflow node (a name refused by the cap) is never cached: its name is not the name
/// looked up.
#[inline]
pub(crate) fn node_by_name_cached(name: &str) -> &'static ResourceNode {
    let address = name.as_ptr() as usize;
    let slot = ((address >> 3) ^ name.len()) % RECENT_SLOTS;
    let cached = RECENT.try_with(|recent| {
        let recent: &std::cell::Cell<[_]> = recent;
        recent
            .as_slice_of_cells()
            .get(slot)
            .map(std::cell::Cell::get)
    });
    if let Ok(Some((a, Some(node)))) = cached
        && a == address
        && node.name() == name
    {
        return node;
    }
    node_by_name_uncached(name, address, slot)
}

/// [`node_by_name_cached`] for a name not in the cache: the lookup, cached if it found the
/// name's own node.
#[cold]
#[inline(never)]
fn node_by_name_uncached(name: &str, address: usize, slot: usize) -> &'static ResourceNode {
    let node = node_by_name(name);
    if node.name() == name {
        let _ = RECENT.try_with(|recent| {
            let recent: &std::cell::Cell<[_]> = recent;
            if let Some(cell) = recent.as_slice_of_cells().get(slot) {
                cell.set((address, Some(node)));
            }
        });
    }
    node
}

#[cold]
fn create_by_name(name: &str) -> &'static ResourceNode {
    create(name, false).unwrap_or_else(|| overflowed(name))
}

/// The node of `name` if it exists or loaded rules name it (then it is created), else `None`:
/// no node for a name nothing knows yet (a gRPC method a client may have invented).
#[cfg(feature = "tower")]
#[inline]
pub(crate) fn known_node(name: &str) -> Option<&'static ResourceNode> {
    get(name).or_else(|| create(name, true))
}

/// The overflow node, for `name` refused by the cap (with the `tracing` feature: an event at
/// most once a second).
#[cold]
fn overflowed(name: &str) -> &'static ResourceNode {
    #[cfg(feature = "tracing")]
    {
        use std::sync::atomic::{AtomicU64, Ordering::*};
        static LAST_SECOND: AtomicU64 = AtomicU64::new(0);
        let second = crate::clock::now_nanos() / 1_000_000_000 + 1;
        let last = LAST_SECOND.load(Relaxed);
        if last < second
            && LAST_SECOND
                .compare_exchange(last, second, AcqRel, Relaxed)
                .is_ok()
        {
            tracing::warn!(
                target: "sentinel",
                resource = name,
                max_resources = max_resources(),
                overflow_passes = overflow().stats().totals().pass,
                "resource beyond the cap on resources: counted in the overflow node, unchecked"
            );
        }
    }
    #[cfg(not(feature = "tracing"))]
    let _ = name;
    overflow()
}

/// The shared node of the entries beyond the cap.
pub(crate) fn overflow() -> &'static ResourceNode {
    &OVERFLOW
}

/// Every node, in no particular order.
pub(crate) fn all() -> Vec<&'static ResourceNode> {
    REGISTRY.nodes.all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_node_it_created_and_nothing_else() {
        let names: Vec<String> = (0..300).map(|i| format!("registry-test-{i}")).collect();
        for name in &names {
            let node = get_or_create(name, false, |_| {}).expect("uncapped");
            assert_eq!(node.name(), name);
        }
        for name in &names {
            assert_eq!(get(name).map(ResourceNode::name), Some(name.as_str()));
        }
        assert!(get("registry-test-none").is_none());
        let again = get_or_create(&names[7], false, |_| panic!("created twice")).unwrap();
        assert!(std::ptr::eq(again, get(&names[7]).unwrap()));
        assert!(all().len() >= names.len());
    }

    /// One buffer written again with other names (the same address each time, as a freed name
    /// and the next one allocated there have): every lookup through the cache of recent names
    /// finds the node of the text it was given.
    #[test]
    fn a_name_at_a_cached_address_is_found_by_its_text() {
        use std::fmt::Write as _;
        let mut name = String::with_capacity(64);
        for i in 0..60 {
            name.clear();
            write!(name, "recent-name-{}", i % 7).unwrap();
            let node = node_by_name_cached(&name);
            assert_eq!(node.name(), name, "lookup {i}");
            assert!(std::ptr::eq(node, node_by_name(&name)), "lookup {i}");
        }
    }
}
