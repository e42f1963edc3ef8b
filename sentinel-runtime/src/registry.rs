//! Every resource node by name, and the cap on how many there are.
//!
//! Consulted by `entry(&str)`, metrics and rule loading; the attribute's static nodes never look
//! here after their first call.
//!
//! # Lookups take no lock
//!
//! The table is an immutable open-addressing array behind a published pointer: a lookup
//! reads the pointer (a hazard-pointer read: no lock, no write to memory other threads read),
//! hashes the name with a keyed hash, and probes. Nodes are never removed, so a name found stays
//! valid. Creating a node copies the table under a lock and publishes the copy: creation is rare
//! (bounded by the cap) and costs in proportion to the table.
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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::node::ResourceNode;
use crate::sync::{thread_slot, Published};

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

/// Whether two names are equal: an inlined compare (names are short; a call to `memcmp` cost
/// more than the rest of the lookup). Differences are OR-ed together rather than returned early,
/// which also keeps the compiler from turning the loops back into a `memcmp` call.
#[inline(always)]
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let word = |c: &[u8]| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_tail, b_tail) = (a_words.remainder(), b_words.remainder());
    let mut diff = 0u64;
    for (x, y) in a_words.zip(b_words) {
        diff |= word(x) ^ word(y);
    }
    for (x, y) in a_tail.iter().zip(b_tail) {
        diff |= u64::from(x ^ y);
    }
    diff == 0
}

/// An immutable open-addressing table: `slots.len()` is a power of two, at most half full.
#[derive(Debug)]
struct Table {
    slots: Box<[Option<(u64, &'static ResourceNode)>]>,
    len: usize,
}

impl Table {
    fn with_capacity(slots: usize) -> Table {
        Table {
            slots: vec![None; slots.next_power_of_two().max(16)].into_boxed_slice(),
            len: 0,
        }
    }

    #[inline]
    fn get(&self, hash: u64, name: &str) -> Option<&'static ResourceNode> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            match self.slots[i] {
                None => return None,
                Some((h, node)) if h == hash && same_name(node.name(), name) => return Some(node),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// A copy with `node` added (and room to spare).
    fn with(&self, hash: u64, node: &'static ResourceNode) -> Table {
        let mut table = Table::with_capacity(if (self.len + 1) * 2 > self.slots.len() {
            self.slots.len() * 2
        } else {
            self.slots.len()
        });
        for (h, n) in self.slots.iter().flatten() {
            table.insert(*h, n);
        }
        table.insert(hash, node);
        table
    }

    fn insert(&mut self, hash: u64, node: &'static ResourceNode) {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some((hash, node));
        self.len += 1;
    }
}

struct Registry {
    /// The keyed hash of names (seeded once per process, so a client cannot aim for
    /// collisions).
    hasher: foldhash::fast::RandomState,
    table: Published<Table>,
    /// Serialises creation; counts the nodes created by name that count against the cap.
    writer: Mutex<usize>,
}

impl Registry {
    #[inline(always)]
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry {
    hasher: foldhash::fast::RandomState::default(),
    table: Published::new(Arc::new(Table::with_capacity(16))),
    writer: Mutex::new(0),
});

/// The node the entries beyond the cap share: never registered, never given rules.
static OVERFLOW: LazyLock<&'static ResourceNode> =
    LazyLock::new(|| ResourceNode::leak("<overflow>"));

/// The node named `name`, if one exists. Takes no lock.
#[inline]
pub(crate) fn get(name: &str) -> Option<&'static ResourceNode> {
    get_in(thread_slot(), name)
}

/// [`get`] for a caller that knows its thread slot.
#[inline]
pub(crate) fn get_in(slot: usize, name: &str) -> Option<&'static ResourceNode> {
    let registry = &*REGISTRY;
    let hash = registry.hash(name);
    registry.table.read_in(slot, |table| table.get(hash, name))
}

/// The node named `name`, created (and passed to `init`) if it does not exist. A node created
/// with `capped` counts against the cap; `None` if the cap is reached.
pub(crate) fn get_or_create(
    name: &str,
    capped: bool,
    init: impl FnOnce(&'static ResourceNode),
) -> Option<&'static ResourceNode> {
    let hash = REGISTRY.hash(name);
    let mut created_capped = REGISTRY
        .writer
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(node) = REGISTRY.table.read(|table| table.get(hash, name)) {
        return Some(node);
    }
    if capped {
        if *created_capped >= max_resources() {
            return None;
        }
        *created_capped += 1;
    }
    let node = ResourceNode::leak(name);
    init(node);
    let table = REGISTRY.table.read(|table| table.with(hash, node));
    REGISTRY.table.replace(Arc::new(table));
    Some(node)
}

/// The shared node of the entries beyond the cap.
pub(crate) fn overflow() -> &'static ResourceNode {
    &OVERFLOW
}

/// Every node, in no particular order.
pub(crate) fn all() -> Vec<&'static ResourceNode> {
    REGISTRY
        .table
        .read(|table| table.slots.iter().flatten().map(|(_, n)| *n).collect())
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

    #[test]
    fn names_compare_byte_for_byte() {
        for (a, b, same) in [
            ("", "", true),
            ("a", "a", true),
            ("a", "b", false),
            ("GET:/users/{id}", "GET:/users/{id}", true),
            ("GET:/users/{id}", "GET:/users/{ix}", false),
            ("GET:/users/{id}", "GET:/users/{id", false),
            ("12345678", "12345678", true),
            ("12345678", "12345679", false),
            ("1234567890abcdefX", "1234567890abcdefY", false),
        ] {
            assert_eq!(same_name(a, b), same, "{a:?} vs {b:?}");
        }
    }
}
