//! [`ResourceNode`]: one resource's statistics and the rules in force on it.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::breaker::CircuitState;
use crate::clock;
use crate::entry::{Entry, Reservation};
use crate::error::BlockError;
use crate::metrics::ResourceStats;
use crate::rules::{CircuitBreakerRule, FlowRule};
use crate::slot::{self, CircuitBreaker, Gate, GateShape, Resolve};
use crate::stat::NodeStats;

/// The rules in force on a node, as the entry path reads them: one pointer load.
#[derive(Debug)]
pub(crate) struct ActiveRules {
    /// The flow checks, in order.
    pub(crate) gates: &'static [&'static Gate],
    /// The gates an exit must release (concurrency), so an exit skips the others.
    pub(crate) releases: &'static [&'static Gate],
    /// The circuit breakers, checked after the flow checks.
    pub(crate) breakers: &'static [&'static CircuitBreaker],
}

static NO_RULES: ActiveRules = ActiveRules {
    gates: &[],
    releases: &[],
    breakers: &[],
};

/// Rules written at a resource's definition (the attribute's `qps = ...`, `breaker(...)`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Defaults {
    pub(crate) flow: Vec<FlowRule>,
    pub(crate) breakers: Vec<CircuitBreakerRule>,
}

impl Defaults {
    fn is_empty(&self) -> bool {
        self.flow.is_empty() && self.breakers.is_empty()
    }
}

/// What changes only when rules are loaded, behind the node's lock.
#[derive(Debug, Default)]
struct NodeConfig {
    defaults: Defaults,
    /// Every gate the node ever had; a rule of the same shape reuses one (keeping its counts).
    gates: Vec<&'static Gate>,
    /// Every breaker the node ever had; an identical rule reuses one (keeping its state).
    breakers: Vec<&'static CircuitBreaker>,
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
        // `apply_rules`); neither is ever freed or mutated, so the pointer is valid and
        // immutable for 'static. The Acquire load pairs with the Release store that published
        // the fully built set.
        unsafe { &*self.active.load(Ordering::Acquire) }
    }

    pub(crate) fn stats(&self) -> &NodeStats {
        &self.stats
    }

    /// Enters the resource for `count` passes: runs the slot chain and returns the guard. A
    /// throttled call sleeps this thread until its turn (under a
    /// [`MockClock`](crate::clock::MockClock), the wait moves the mock clock forward instead).
    #[inline]
    pub fn enter(&'static self, count: u32) -> Result<Entry, BlockError> {
        let now = clock::now_nanos();
        let rules = self.active();
        match slot::check(self, rules, now, count) {
            Ok(admission) if admission.turn == 0 => {
                self.stats.on_pass(now, count);
                Ok(Entry::new(self, rules, now, count, admission.probe, false))
            }
            Ok(admission) => {
                let reservation = Reservation::new(self, rules, now, count, admission, false);
                clock::sleep_until(reservation.turn());
                Ok(reservation.into_entry())
            }
            Err(block) => {
                self.stats.on_block(now, count);
                Err(block)
            }
        }
    }

    /// Runs the slot chain without waiting: the admission, to be turned into an [`Entry`] once
    /// its throttling turn (if any) has come. `cancellable` marks an entry held by a future,
    /// which counts as abandoned (not as a verdict) if dropped before it is marked finished.
    #[inline]
    pub(crate) fn reserve(
        &'static self,
        count: u32,
        cancellable: bool,
    ) -> Result<Reservation, BlockError> {
        let now = clock::now_nanos();
        let rules = self.active();
        match slot::check(self, rules, now, count) {
            Ok(admission) => Ok(Reservation::new(
                self,
                rules,
                now,
                count,
                admission,
                cancellable,
            )),
            Err(block) => {
                self.stats.on_block(now, count);
                Err(block)
            }
        }
    }

    /// The resource's statistics over the second-level window.
    pub fn snapshot(&self) -> ResourceStats {
        let circuit = self.active().breakers.iter().map(|b| b.state()).max();
        ResourceStats::from_totals(self.stats.window(clock::now_nanos()), circuit)
    }

    /// The state of each circuit breaker in force, in rule order.
    pub fn circuit_states(&self) -> Vec<CircuitState> {
        self.active().breakers.iter().map(|b| b.state()).collect()
    }

    /// The flow rules written at the resource's definition.
    pub fn default_flow_rules(&self) -> Vec<FlowRule> {
        self.config().defaults.flow.clone()
    }

    /// The circuit-breaker rules written at the resource's definition.
    pub fn default_circuit_breaker_rules(&self) -> Vec<CircuitBreakerRule> {
        self.config().defaults.breakers.clone()
    }

    fn config(&self) -> MutexGuard<'_, NodeConfig> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the defaults if the node has none yet; returns whether it did.
    pub(crate) fn adopt_defaults(&self, defaults: &Defaults) -> bool {
        let mut config = self.config();
        if config.defaults.is_empty() && !defaults.is_empty() {
            config.defaults = defaults.clone();
            return true;
        }
        false
    }

    /// Puts rules in force: the loaded ones where given, else the defaults, per kind (all
    /// validated and naming this node). Gates of the same shape are reused with the new
    /// threshold and breakers of an identical rule are reused, so no count or state is lost.
    pub(crate) fn apply_rules(
        &self,
        flow: Option<&[FlowRule]>,
        breakers: Option<&[CircuitBreakerRule]>,
        resolve: Resolve,
    ) {
        let mut config = self.config();
        let now = clock::now_nanos();
        let flow = flow.map_or_else(|| config.defaults.flow.clone(), <[_]>::to_vec);
        let breakers = breakers.map_or_else(|| config.defaults.breakers.clone(), <[_]>::to_vec);

        let mut gates: Vec<&'static Gate> = Vec::with_capacity(flow.len());
        for rule in &flow {
            let shape = GateShape::of(rule);
            let gate = match reuse(&config.gates, &gates, |g| g.fits(&shape)) {
                Some(gate) => {
                    gate.set_threshold(rule.threshold);
                    gate
                }
                None => {
                    let gate: &'static Gate = Box::leak(Box::new(Gate::new(rule, now, resolve)));
                    config.gates.push(gate);
                    gate
                }
            };
            gates.push(gate);
        }
        let mut chosen_breakers: Vec<&'static CircuitBreaker> = Vec::with_capacity(breakers.len());
        for rule in &breakers {
            let breaker = match reuse(&config.breakers, &chosen_breakers, |b| b.rule == *rule) {
                Some(breaker) => breaker,
                None => {
                    let b: &'static CircuitBreaker =
                        Box::leak(Box::new(CircuitBreaker::new(rule, now)));
                    config.breakers.push(b);
                    b
                }
            };
            chosen_breakers.push(breaker);
        }

        let set = if gates.is_empty() && chosen_breakers.is_empty() {
            &NO_RULES
        } else if let Some(set) = config
            .sets
            .iter()
            .copied()
            .find(|s| same(s.gates, &gates) && same(s.breakers, &chosen_breakers))
        {
            set
        } else {
            let releases: Vec<&'static Gate> = gates
                .iter()
                .copied()
                .filter(|g| g.holds_until_exit())
                .collect();
            let set: &'static ActiveRules = Box::leak(Box::new(ActiveRules {
                gates: Box::leak(gates.into_boxed_slice()),
                releases: Box::leak(releases.into_boxed_slice()),
                breakers: Box::leak(chosen_breakers.into_boxed_slice()),
            }));
            config.sets.push(set);
            set
        };
        self.active
            .store(std::ptr::from_ref(set).cast_mut(), Ordering::Release);
    }
}

/// A pooled item matching `fits` that `chosen` does not already use.
fn reuse<T>(
    pool: &[&'static T],
    chosen: &[&'static T],
    fits: impl Fn(&T) -> bool,
) -> Option<&'static T> {
    pool.iter()
        .copied()
        .find(|p| fits(p) && !chosen.iter().any(|c| std::ptr::eq(*c, *p)))
}

fn same<T>(a: &[&T], b: &[&T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| std::ptr::eq(*x, *y))
}
