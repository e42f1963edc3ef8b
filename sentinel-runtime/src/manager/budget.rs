//! The memory budget of the loaded hotspot rules (part of the rule manager): each rule's table
//! is allocated whole when it is built (about 56 bytes per value of `capacity`), so a rule set is
//! refused before anything is built if its tables together would take more than the budget.
//!
//! One rule's `capacity` is bounded ([`MAX_HOTSPOT_CAPACITY`](super::MAX_HOTSPOT_CAPACITY):
//! 896 MiB), but the number of resources with hotspot rules is not: without a budget, a rule
//! file of a few dozen such rules would take every byte of the machine (an allocation the
//! process cannot survive) instead of being refused with the field at fault.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The default of [`set_max_hotspot_memory`]: 1 GiB, the tables of about 19 million values of
/// capacity in all (one rule of the largest capacity takes 896 MiB).
pub const DEFAULT_MAX_HOTSPOT_MEMORY: usize = 1 << 30;

static MAX_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_HOTSPOT_MEMORY);

/// Sets the most memory the tables of the loaded hotspot rules may take together, in bytes
/// (default [`DEFAULT_MAX_HOTSPOT_MEMORY`]). A load whose rules' tables would take more is
/// refused, naming the `capacity` of the first rule beyond the budget, and the rules in force
/// stay. Each rule's table takes about 56 bytes per value of its `capacity`
/// ([`HotspotRule::capacity`](crate::rules::HotspotRule::capacity)).
///
/// It applies to loads after the call; rules already in force are kept. Hotspot limits of the
/// attribute (`#[sentinel(hotspot(...))]`) are not counted: their capacities are in the code.
/// While a reload replaces tables, the old ones are freed once no call is using them, so for a
/// moment both may be allocated.
///
/// ```
/// use sentinel_runtime::rules::{self, HotspotRule};
///
/// rules::set_max_hotspot_memory(4 << 20); // 4 MiB
/// let big = HotspotRule::qps("doc-budget", 0, 10.0).capacity(100_000); // about 5.6 MiB
/// let refused = rules::load_hotspot_rules(vec![big.clone()]).unwrap_err();
/// assert_eq!(refused.field(), "capacity");
/// assert!(refused.message().contains("4 MiB"), "{refused}");
///
/// rules::set_max_hotspot_memory(rules::DEFAULT_MAX_HOTSPOT_MEMORY);
/// assert!(rules::load_hotspot_rules(vec![big]).is_ok());
/// # rules::load_hotspot_rules(vec![]).unwrap();
/// ```
pub fn set_max_hotspot_memory(bytes: usize) {
    MAX_BYTES.store(bytes, Ordering::Relaxed);
}

/// The budget set by [`set_max_hotspot_memory`].
pub fn max_hotspot_memory() -> usize {
    MAX_BYTES.load(Ordering::Relaxed)
}
