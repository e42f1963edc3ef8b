//! [`ResourceNode`]: one resource's statistics and the flow rules in force on it.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::clock;
use crate::entry::Entry;
use crate::error::BlockError;
use crate::metrics::ResourceStats;
use crate::rules::FlowRule;
use crate::slot::{self, Gate, GateShape};
use crate::stat::NodeStats;

/// The rules in force on a node, as the entry path reads them: one pointer load.
#[derive(Debug)]
pub(crate) struct ActiveRules {
    /// The checks, in order.
    pub(crate) gates: &'static [&'static Gate],
    /// The gates an exit must release (concurrency), so an exit skips the others.
    pub(crate) releases: &'static [&'static Gate],
}

static NO_RULES: ActiveRules = ActiveRules {
    gates: &[],
    releases: &[],
};

/// What changes only when rules are loaded, behind the node's lock.
#[derive(Debug, Default)]
struct NodeConfig {
    /// Rules written at the resource's definition (the attribute's `qps = ...`).
    defaults: Vec<FlowRule>,
    /// Every gate the node ever had; a rule of the same shape reuses one (keeping its counts).
    gates: Vec<&'static Gate>,
    /// Every rule set the node ever had; a recurring set is reused, not allocated again.
    sets: Vec<&'static ActiveRules>,
}

/// A resource: its statistics (second- and minute-level windows) and the rules in force.
///
/// Nodes live for the whole program: the registry hands out `&'static ResourceNode`, so the
/// attribute's `static` can hold one and enter it without any lookup.
#[derive(Debug)]
pub struct ResourceNode {
    name: &'static str,
    stats: NodeStats,
    /// Always points at `NO_RULES` or at a set leaked into `config.sets`: never freed.
    active: AtomicPtr<ActiveRules>,
    config: Mutex<NodeConfig>,
}

impl ResourceNode {
    /// A new node, empty at the current time, with no rules; it lives for the rest of the
    /// program.
    pub(crate) fn leak(name: &str) -> &'static ResourceNode {
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        Box::leak(Box::new(ResourceNode {
            name,
            stats: NodeStats::new(clock::now_nanos()),
            active: AtomicPtr::new(std::ptr::from_ref(&NO_RULES).cast_mut()),
            config: Mutex::new(NodeConfig::default()),
        }))
    }

    /// The resource's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    #[inline]
    pub(crate) fn active(&self) -> &'static ActiveRules {
        // SAFETY: `active` only ever holds `&NO_RULES` or a pointer from `Box::leak` (see
        // `apply_flow_rules`); neither is ever freed or mutated, so the pointer is valid and
        // immutable for 'static. The Acquire load pairs with the Release store that published
        // the fully built set.
        unsafe { &*self.active.load(Ordering::Acquire) }
    }

    pub(crate) fn stats(&self) -> &NodeStats {
        &self.stats
    }

    /// Enters the resource for `count` passes: runs the slot chain and returns the guard.
    #[inline]
    pub fn enter(&'static self, count: u32) -> Result<Entry, BlockError> {
        let now = clock::now_nanos();
        let rules = self.active();
        match slot::check(self, rules, now, count) {
            Ok(()) => {
                self.stats.on_pass(now, count);
                Ok(Entry::new(self, rules, now, count))
            }
            Err(block) => {
                self.stats.on_block(now, count);
                Err(block)
            }
        }
    }

    /// The resource's statistics over the second-level window.
    pub fn snapshot(&self) -> ResourceStats {
        ResourceStats::from_totals(self.stats.window(clock::now_nanos()))
    }

    /// The flow rules written at the resource's definition.
    pub fn default_rules(&self) -> Vec<FlowRule> {
        self.config().defaults.clone()
    }

    fn config(&self) -> std::sync::MutexGuard<'_, NodeConfig> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the defaults if the node has none yet; returns whether it did.
    pub(crate) fn adopt_defaults(&self, defaults: &[FlowRule]) -> bool {
        let mut config = self.config();
        if config.defaults.is_empty() && !defaults.is_empty() {
            config.defaults = defaults.to_vec();
            return true;
        }
        false
    }

    /// Puts `rules` (validated, all naming this node) in force, or the defaults for `None`.
    /// Gates of the same shape are reused with the new threshold, so no count is lost.
    pub(crate) fn apply_flow_rules(&self, rules: Option<&[FlowRule]>) {
        let mut config = self.config();
        let rules = rules
            .map(<[FlowRule]>::to_vec)
            .unwrap_or_else(|| config.defaults.clone());
        let now = clock::now_nanos();
        let mut chosen: Vec<&'static Gate> = Vec::with_capacity(rules.len());
        for rule in &rules {
            let shape = GateShape::of(rule);
            let reusable = config
                .gates
                .iter()
                .copied()
                .find(|g| g.shape() == shape && !chosen.iter().any(|c| std::ptr::eq(*c, *g)));
            let gate = match reusable {
                Some(gate) => {
                    gate.set_threshold(rule.threshold);
                    gate
                }
                None => {
                    let gate: &'static Gate = Box::leak(Box::new(Gate::new(rule, now)));
                    config.gates.push(gate);
                    gate
                }
            };
            chosen.push(gate);
        }
        let set = if chosen.is_empty() {
            &NO_RULES
        } else if let Some(set) = config
            .sets
            .iter()
            .copied()
            .find(|s| same_gates(s.gates, &chosen))
        {
            set
        } else {
            let releases: Vec<&'static Gate> = chosen
                .iter()
                .copied()
                .filter(|g| g.holds_until_exit())
                .collect();
            let set: &'static ActiveRules = Box::leak(Box::new(ActiveRules {
                gates: Box::leak(chosen.into_boxed_slice()),
                releases: Box::leak(releases.into_boxed_slice()),
            }));
            config.sets.push(set);
            set
        };
        self.active
            .store(std::ptr::from_ref(set).cast_mut(), Ordering::Release);
    }
}

fn same_gates(a: &[&Gate], b: &[&Gate]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| std::ptr::eq(*x, *y))
}
