//! The memory budget of a list of hotspot rules: each rule's table is allocated whole when it is
//! built (about 56 bytes per value of `capacity`), so a list is refused before anything is
//! built if its tables together would take more than the budget
//! ([`set_max_hotspot_memory`](crate::rules::set_max_hotspot_memory)).

use crate::error::RuleError;
use crate::kinds::hotspot::rule::{HotspotRule, MAX_HOTSPOT_CAPACITY};
use crate::slot::param_table::ParamTable;

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
    use crate::rules::DEFAULT_MAX_HOTSPOT_MEMORY;

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
