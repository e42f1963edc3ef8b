//! Flow rules that limit some callers by origin (Sentinel's `limitApp`): a rule naming one
//! origin counts that origin's calls in a gate of its own; an `other` rule counts each origin
//! no other rule of the resource names on its own, by GCRA in a bounded [`ParamTable`] keyed by
//! the origin (a flood of new origins takes the slots of idle ones, or evicts keeping the debt;
//! nothing grows).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::error::BlockError;
use crate::kinds::flow::gate::{Gate, Pass};
use crate::kinds::flow::origin_rule::{same_origin, FlowOrigin, MAX_TRACKED_ORIGINS};
use crate::kinds::flow::related::Resolve;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::interval_nanos;
use crate::slot::param_table::{Full, ParamTable, RateDecision};

/// One flow rule with an origin, in force on a node.
#[derive(Debug)]
pub(crate) struct OriginGate {
    /// The rule as given.
    rule: FlowRule,
    applies: Applies,
    count: Count,
}

/// Which calls the rule counts.
#[derive(Debug)]
enum Applies {
    /// The calls of this origin.
    Named(String),
    /// The calls of any origin but these (the names of the resource's other rules).
    Other(Vec<String>),
}

#[derive(Debug)]
enum Count {
    /// One origin's calls, in one gate.
    One(Arc<Gate>),
    /// Each origin on its own: GCRA per origin (`interval` and `tolerance` in nanoseconds).
    Each {
        table: ParamTable,
        interval: u64,
        tolerance: u64,
        threshold: f64,
        window_ms: u64,
    },
}

/// An origin as a key: hashed trimmed and ASCII-lowercased, as origins are matched.
struct Folded<'a>(&'a str);

impl Hash for Folded<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for b in self.0.trim().bytes() {
            state.write_u8(b.to_ascii_lowercase());
        }
    }
}

/// The origins the rules name.
fn named_origins(rules: &[FlowRule]) -> Vec<String> {
    rules
        .iter()
        .filter_map(|r| r.origin.named().map(str::to_owned))
        .collect()
}

/// The key of `origin` in an `other` rule's table.
pub(crate) fn origin_key(origin: &str) -> u64 {
    crate::param::hash(&Folded(origin))
}

impl OriginGate {
    /// The gate of `rule` (validated, with an origin), among the resource's `rules`.
    pub(crate) fn new(rule: &FlowRule, rules: &[FlowRule], now: u64, resolve: Resolve) -> Self {
        match &rule.origin {
            FlowOrigin::Named(name) => OriginGate {
                rule: rule.clone(),
                applies: Applies::Named(name.trim().to_owned()),
                // A new gate of one origin starts empty: the node's passes are every caller's.
                count: Count::One(Arc::new(Gate::new(rule, now, resolve, &|_, _| {}))),
            },
            _ => {
                let named = named_origins(rules);
                let (interval, tolerance) = if rule.threshold < 1.0 {
                    (u64::MAX, 0)
                } else {
                    let clamp = |n: u128| n.min(u128::from(u64::MAX)) as u64;
                    let interval = interval_nanos(rule.threshold.floor(), rule.window);
                    let calls = rule.threshold.floor() as u128 - 1;
                    (clamp(interval), clamp(calls * interval))
                };
                OriginGate {
                    rule: rule.clone(),
                    applies: Applies::Other(named),
                    count: Count::Each {
                        table: ParamTable::new(MAX_TRACKED_ORIGINS, Full::Evict),
                        interval,
                        tolerance,
                        threshold: rule.threshold,
                        window_ms: rule.window_ms(),
                    },
                }
            }
        }
    }

    /// Whether the rule counts a call of `origin` (none: never).
    #[inline]
    pub(crate) fn applies(&self, origin: Option<&str>) -> bool {
        let Some(origin) = origin.filter(|o| !o.trim().is_empty()) else {
            return false;
        };
        match &self.applies {
            Applies::Named(name) => same_origin(origin, name),
            Applies::Other(named) => !named.iter().any(|n| same_origin(origin, n)),
        }
    }

    /// Reserves `count` passes for a call of the origin keyed `key` at `now`.
    pub(crate) fn try_enter(
        &self,
        resource: &'static str,
        key: u64,
        now: u64,
        count: u32,
    ) -> Result<Pass, BlockError> {
        match &self.count {
            Count::One(gate) => gate.try_enter(resource, now, count),
            Count::Each {
                table,
                interval,
                tolerance,
                threshold,
                window_ms,
            } => match table.acquire_rate(key, now, count, *interval, *tolerance, 0) {
                RateDecision::Pass | RateDecision::Wait(_) => Ok(Pass { at: now, turn: 0 }),
                RateDecision::Block { .. } => {
                    Err(BlockError::flow(resource, *threshold, *window_ms)
                        .because("the origin's own threshold (limitApp other)"))
                }
            },
        }
    }

    /// Gives back a reservation of `count` at `at` for the origin keyed `key`.
    pub(crate) fn cancel(&self, key: u64, at: u64, count: u32) {
        match &self.count {
            Count::One(gate) => gate.cancel(at, count),
            Count::Each {
                table, interval, ..
            } => table.cancel_rate(key, count, *interval),
        }
    }

    /// Whether this gate serves `rule` among `rules` as it is (a reload keeps its counts).
    pub(crate) fn serves(&self, rule: &FlowRule, rules: &[FlowRule]) -> bool {
        self.rule == *rule
            && match &self.applies {
                Applies::Named(_) => true,
                Applies::Other(named) => *named == named_origins(rules),
            }
    }

    /// The bytes the gate's table holds (fixed when it is built), its slots in use and its
    /// slots.
    #[cfg(test)]
    fn table_bytes(&self) -> (usize, usize, usize) {
        match &self.count {
            Count::Each { table, .. } => (table.allocated_bytes(), table.len(), table.capacity()),
            Count::One(_) => (0, 0, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 3_600_000_000_000;

    fn no_nodes(_: &str) -> Option<&'static crate::stat::NodeStats> {
        None
    }

    #[test]
    fn a_flood_of_origins_does_not_grow_the_table_nor_forgive_a_debt() {
        let rules = [FlowRule::qps("r", 2.0).other_origins()];
        let gate = OriginGate::new(&rules[0], &rules, T0, no_nodes);
        let spent = origin_key("spender");
        assert!(gate.try_enter("r", spent, T0, 2).is_ok());
        assert!(gate.try_enter("r", spent, T0, 1).is_err());
        let (bytes, _, slots) = gate.table_bytes();
        for i in 0..200_000u64 {
            let key = origin_key(&format!("junk-{i}"));
            let _ = gate.try_enter("r", key, T0, 1);
        }
        let (after, len, _) = gate.table_bytes();
        assert_eq!(after, bytes, "the table never allocates");
        assert!(len <= slots, "{len} of {slots} slots in use");
        assert!(
            gate.try_enter("r", spent, T0, 1).is_err(),
            "an evicted origin keeps its debt"
        );
    }

    #[test]
    fn origins_match_trimmed_ignoring_ascii_case() {
        let rules = [
            FlowRule::qps("r", 1.0).origin("appA"),
            FlowRule::qps("r", 1.0).other_origins(),
        ];
        let named = OriginGate::new(&rules[0], &rules, T0, no_nodes);
        let other = OriginGate::new(&rules[1], &rules, T0, no_nodes);
        assert!(named.applies(Some(" APPA ")));
        assert!(!named.applies(Some("appB")) && !named.applies(None));
        assert!(!other.applies(Some("appa")) && !other.applies(None) && !other.applies(Some(" ")));
        assert!(other.applies(Some("appB")));
        assert_eq!(origin_key(" AppB"), origin_key("appb"));
    }
}
