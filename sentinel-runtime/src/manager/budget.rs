//! The memory budget of the loaded hotspot rules (part of the rule manager): each rule's table
//! is allocated whole when it is built (about 56 bytes per value of `capacity`), so a rule set is
//! refused before anything is built if its tables together would take more than the budget.
//!
//! One rule's `capacity` is bounded ([`MAX_HOTSPOT_CAPACITY`](super::MAX_HOTSPOT_CAPACITY):
//! 896 MiB), but the number of resources with hotspot rules is not: without a budget, a rule
//! file of a few dozen such rules would take every byte of the machine (an allocation the
//! process cannot survive) instead of being refused with the field at fault.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::RuleError;
use crate::kinds::hotspot::rule::{HotspotRule, MAX_HOTSPOT_CAPACITY};
use crate::slot::param_table::ParamTable;

/// The default of [`set_max_hotspot_memory`]: 1 GiB, the tables of about 19 million values of
/// capacity in all (one rule of the largest capacity takes 896 MiB).
pub const DEFAULT_MAX_HOTSPOT_MEMORY: usize = 1 << 30;

static MAX_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_HOTSPOT_MEMORY);

/// Sets the most memory the tables of the loaded hotspot rules may take together, in bytes
/// (default [`DEFAULT_MAX_HOTSPOT_MEMORY`]). A load whose rules' tables would take more is
/// refused, naming the `capacity` of the first rule beyond the budget, and the rules in force
/// stay. Each rule's table takes about 56 bytes per value of its `capacity`
/// ([`HotspotRule::capacity`]).
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

/// The first of `rules` (by position) whose table, with the tables of the rules before it,
/// would take more than `limit` bytes, with its error. Rules whose `capacity` is out of range
/// are skipped: their own validation names it.
pub(crate) fn over_budget(rules: &[HotspotRule], limit: usize) -> Option<(usize, RuleError)> {
    let mut total = 0usize;
    for (i, rule) in rules.iter().enumerate() {
        if rule.capacity == 0 || rule.capacity > MAX_HOTSPOT_CAPACITY {
            continue;
        }
        total = total.saturating_add(<ParamTable>::bytes_for(rule.capacity));
        if total > limit {
            let message = format!(
                "the hotspot rules' tables would take {} with this rule's (capacity {}), more \
                 than the budget of {} (rules::set_max_hotspot_memory); lower `capacity` or \
                 raise the budget",
                mib(total),
                rule.capacity,
                mib(limit),
            );
            return Some((i, RuleError::new(&rule.resource, "capacity", message)));
        }
    }
    None
}

/// `bytes` in MiB, rounded up, for messages.
fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes.div_ceil(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(resource: &str, capacity: usize) -> HotspotRule {
        HotspotRule::qps(resource, 0, 10.0).capacity(capacity)
    }

    #[test]
    fn the_first_rule_beyond_the_budget_is_named_by_its_capacity() {
        let one = <ParamTable>::bytes_for(100_000);
        let rules = [rule("a", 100_000), rule("b", 100_000), rule("c", 100_000)];
        assert!(
            over_budget(&rules, 3 * one).is_none(),
            "exactly the budget fits"
        );
        let (at, error) = over_budget(&rules, 3 * one - 1).expect("one byte short");
        assert_eq!((at, error.resource(), error.field()), (2, "c", "capacity"));
        let (at, error) = over_budget(&rules, one).expect("room for one");
        assert_eq!((at, error.resource()), (1, "b"));
        assert!(error.message().contains("capacity 100000"), "{error}");
    }

    #[test]
    fn rules_with_a_capacity_out_of_range_are_left_to_their_own_validation() {
        let rules = [rule("bad", 0), rule("huge", MAX_HOTSPOT_CAPACITY + 1)];
        assert!(over_budget(&rules, 0).is_none());
    }

    #[test]
    fn the_default_budget_takes_one_rule_of_the_largest_capacity_but_not_two() {
        let largest = rule("a", MAX_HOTSPOT_CAPACITY);
        let limit = DEFAULT_MAX_HOTSPOT_MEMORY;
        assert!(over_budget(std::slice::from_ref(&largest), limit).is_none());
        let two = [largest.clone(), rule("b", MAX_HOTSPOT_CAPACITY)];
        assert_eq!(over_budget(&two, limit).map(|(at, _)| at), Some(1));
    }
}
