//! Rules: [`FlowRule`] as plain validated data, and [`load_flow_rules`] to replace the rules in
//! force at run time.
//!
//! A resource's rules come from two places. Rules written at its definition (the attribute's
//! `qps = ...`) are its *defaults*. Rules loaded with [`load_flow_rules`] override the defaults of
//! every resource they name; loading a set that no longer names a resource returns it to its
//! defaults. Loading never loses statistics: the windows live in the resource's node, and a
//! loaded rule of the same shape (metric, window, sample count, strictness) as one in force keeps
//! that rule's counts and only changes the threshold.

mod flow;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

pub use flow::{
    FlowMetric, FlowRule, DEFAULT_SAMPLE_COUNT, DEFAULT_WINDOW, MAX_SAMPLE_COUNT, MAX_THRESHOLD,
};

use crate::error::RuleError;
use crate::node::ResourceNode;
use crate::registry;

/// The loaded flow rules by resource. Its lock also orders node creation against loading, so a
/// node created while rules load sees either the old or the new set, whole.
static LOADED: Mutex<Option<HashMap<String, Vec<FlowRule>>>> = Mutex::new(None);

/// Replaces the loaded flow rules with `rules`.
///
/// Every rule is validated first: on the first bad field this returns a [`RuleError`] naming the
/// rule's resource and the field, and nothing changes (the previous rules stay in force). On
/// success, each resource switches to its new rules with one atomic store; resources no longer
/// named return to their defaults.
///
/// ```
/// use sentinel_runtime::rules::{self, FlowRule};
///
/// rules::load_flow_rules(vec![FlowRule::qps("doc-load", 2.0)]).unwrap();
/// assert!(sentinel_runtime::entry("doc-load").is_ok());
///
/// let bad = rules::load_flow_rules(vec![FlowRule::qps("doc-load", -1.0)]);
/// assert_eq!(bad.unwrap_err().field(), "threshold");
/// assert_eq!(rules::flow_rules(), vec![FlowRule::qps("doc-load", 2.0)]); // still in force
/// # rules::load_flow_rules(vec![]).unwrap();
/// ```
pub fn load_flow_rules(rules: impl IntoIterator<Item = FlowRule>) -> Result<(), RuleError> {
    let rules: Vec<FlowRule> = rules.into_iter().collect();
    for rule in &rules {
        rule.validate()?;
    }
    let mut by_resource: HashMap<String, Vec<FlowRule>> = HashMap::new();
    for rule in rules {
        by_resource
            .entry(rule.resource.clone())
            .or_default()
            .push(rule);
    }
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let loaded = loaded.insert(by_resource);
    for node in registry::all() {
        node.apply_flow_rules(loaded.get(node.name()).map(Vec::as_slice));
    }
    Ok(())
}

/// The flow rules loaded now (not the defaults), in load order per resource.
pub fn flow_rules() -> Vec<FlowRule> {
    let loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let mut rules: Vec<FlowRule> = loaded
        .iter()
        .flat_map(|m| m.values().flatten().cloned())
        .collect();
    rules.sort_by(|a, b| a.resource.cmp(&b.resource));
    rules
}

/// The node named `name`, created with `defaults` (validated by the caller) and with any loaded
/// rules for it in force. An existing node without defaults adopts these.
pub(crate) fn node(name: &str, defaults: &[FlowRule]) -> &'static ResourceNode {
    let loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let loaded_for = |name: &str| loaded.as_ref().and_then(|m| m.get(name)).map(Vec::as_slice);
    let mut created = false;
    let node = registry::get_or_create(name, |node| {
        node.adopt_defaults(defaults);
        node.apply_flow_rules(loaded_for(name));
        created = true;
    });
    if !created && node.adopt_defaults(defaults) {
        node.apply_flow_rules(loaded_for(name));
    }
    node
}
