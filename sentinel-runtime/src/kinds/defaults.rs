//! The rules written at a resource's definition (the attribute's `qps = ...`, `breaker(...)`):
//! its defaults, in force for every kind no loaded rule replaces.

use crate::error::RuleError;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::HotspotRule;

/// Rules written at a resource's definition, by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Defaults {
    pub(crate) flow: Vec<FlowRule>,
    pub(crate) breakers: Vec<CircuitBreakerRule>,
    pub(crate) hotspot: Vec<HotspotRule>,
}

impl Defaults {
    /// Adds another definition's rules: several functions may share a resource, and then every
    /// definition's rules apply to every call of it (a rule two definitions both write is kept
    /// once). Returns whether anything was added.
    pub(crate) fn adopt(&mut self, other: &Defaults) -> bool {
        fn add<R: Clone + PartialEq>(to: &mut Vec<R>, from: &[R]) -> bool {
            let mut changed = false;
            for rule in from {
                if !to.contains(rule) {
                    to.push(rule.clone());
                    changed = true;
                }
            }
            changed
        }
        let flow = add(&mut self.flow, &other.flow);
        let hotspot = add(&mut self.hotspot, &other.hotspot);
        let breakers = add(&mut self.breakers, &other.breakers);
        flow || hotspot || breakers
    }

    /// Keeps the rules that validate, returning the errors of the others.
    pub(crate) fn validated(&mut self) -> Vec<RuleError> {
        let mut errors = Vec::new();
        let mut keep = |result: Result<(), RuleError>| match result {
            Ok(()) => true,
            Err(e) => {
                errors.push(e);
                false
            }
        };
        self.flow.retain(|r| keep(r.validate()));
        self.hotspot.retain(|r| keep(r.validate()));
        self.breakers.retain(|r| keep(r.validate()));
        errors
    }
}
