//! The rule manager: validates rule sets, keeps the loaded rules by resource, and puts them in
//! force on the resources they name (or back to their defaults).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::budget;
use crate::clock;
use crate::error::RuleError;
use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::circuit_breaker::rule::{CircuitBreakerRule, MAX_BREAKERS_PER_RESOURCE};
use crate::kinds::defaults::Defaults;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::{HotspotRule, MAX_HOTSPOT_RULES_PER_RESOURCE};
use crate::kinds::system::rule::SystemRule;
use crate::kinds::{BuildContext, ChainRules};
use crate::node::ResourceNode;
use crate::registry;
use crate::stat::NodeStats;

/// A resource's statistics by name, for rules that count another resource's traffic.
fn resolve_stats(name: &str) -> Option<&'static NodeStats> {
    registry::get(name).map(ResourceNode::stats)
}

/// The loaded rules by resource, per kind. Its lock also orders node creation against loading,
/// so a node created while rules load sees either the old or the new set, whole.
#[derive(Default)]
struct Loaded {
    flow: HashMap<String, Vec<FlowRule>>,
    breakers: HashMap<String, Vec<CircuitBreakerRule>>,
    hotspot: HashMap<String, Vec<HotspotRule>>,
    authority: HashMap<String, Vec<AuthorityRule>>,
    /// The system rules (process-wide: no resource).
    system: Vec<SystemRule>,
}

impl Loaded {
    /// Puts the rules in force on `node`: per kind, the loaded ones for its name, else its
    /// definition's defaults.
    fn apply(&self, node: &ResourceNode) {
        let name = node.name();
        let flow = self.flow.get(name);
        let breakers = self.breakers.get(name);
        let hotspot = self.hotspot.get(name);
        let authority = self.authority.get(name);
        node.rebuild(|defaults, param_names, old, stats| {
            let hotspot = with_param_indices(
                hotspot.map_or(&defaults.hotspot[..], Vec::as_slice),
                param_names,
            );
            let rules = ChainRules {
                authority: authority.map_or(&[], Vec::as_slice),
                flow: flow.map_or(&defaults.flow[..], Vec::as_slice),
                hotspot: &hotspot,
                breakers: breakers.map_or(&defaults.breakers[..], Vec::as_slice),
            };
            let ctx = BuildContext {
                now: clock::now_nanos(),
                stats,
                resolve: resolve_stats,
            };
            crate::kinds::build(&rules, old, &ctx)
        });
    }

    /// Applies the rules to the nodes of `names` that exist (the others get them when created).
    fn apply_to<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        for name in names {
            if let Some(node) = registry::get(name) {
                self.apply(node);
            }
        }
    }

    /// Every resource the loaded rules name.
    fn named(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .flow
            .keys()
            .chain(self.breakers.keys())
            .chain(self.hotspot.keys())
            .chain(self.authority.keys())
            .cloned()
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    fn names(&self, name: &str) -> bool {
        self.flow.contains_key(name)
            || self.breakers.contains_key(name)
            || self.hotspot.contains_key(name)
            || self.authority.contains_key(name)
    }
}

static LOADED: LazyLock<Mutex<Loaded>> = LazyLock::new(Mutex::default);

/// `rules` with every named rule given its parameter's index; a rule whose name is not (yet)
/// known is left out of force.
fn with_param_indices<'r>(
    rules: &'r [HotspotRule],
    names: Option<&[Option<String>]>,
) -> Cow<'r, [HotspotRule]> {
    if rules.iter().all(|r| r.param.is_none()) {
        return Cow::Borrowed(rules);
    }
    let resolved = rules.iter().filter_map(|r| match &r.param {
        None => Some(r.clone()),
        Some(name) => {
            let index = names?.iter().position(|n| n.as_deref() == Some(name))?;
            let mut rule = r.clone();
            rule.param_index = index;
            Some(rule)
        }
    });
    Cow::Owned(resolved.collect())
}

fn loaded() -> std::sync::MutexGuard<'static, Loaded> {
    // Loading rules is the first thing many programs do: the process's one-time set-up happens
    // here rather than in the first call (a no-op once done at start).
    crate::sync::prepare();
    // From the first use on, nodes created by name get the loaded rules (before it, no rule
    // was loaded: a plain node is right).
    static HOOKED: std::sync::Once = std::sync::Once::new();
    HOOKED.call_once(|| {
        registry::install_create_hook(create);
        registry::install_names_hook(names_learned);
    });
    LOADED.lock().unwrap_or_else(PoisonError::into_inner)
}

fn by_resource<R>(rules: Vec<R>, resource: impl Fn(&R) -> &str) -> HashMap<String, Vec<R>> {
    let mut map: HashMap<String, Vec<R>> = HashMap::new();
    for rule in rules {
        map.entry(resource(&rule).to_owned())
            .or_default()
            .push(rule);
    }
    map
}

/// Replaces one kind's loaded rules and applies the change to the resources the old or the new
/// rules name: a reload costs in proportion to the rules, not to the number of resources.
fn replace<R>(
    kind: impl Fn(&mut Loaded) -> &mut HashMap<String, Vec<R>>,
    new: HashMap<String, Vec<R>>,
) {
    let mut loaded = loaded();
    let old = std::mem::replace(kind(&mut loaded), new);
    let names: Vec<String> = old
        .into_keys()
        .chain(kind(&mut loaded).keys().cloned())
        .collect::<std::collections::HashSet<String>>()
        .into_iter()
        .collect();
    loaded.apply_to(&names);
    super::unmatched::loaded(loaded.named());
}

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
    counted("flow", load_flow(rules))
}

fn load_flow(rules: impl IntoIterator<Item = FlowRule>) -> Result<(), RuleError> {
    let rules = valid(
        FLOW,
        rules,
        FlowRule::validate,
        &[CLUSTER_FLOW_CAP, ORIGIN_FLOW_CAP],
    )?;
    replace(|l| &mut l.flow, by_resource(rules, |r| &r.resource));
    Ok(())
}

/// Replaces the loaded circuit-breaker rules with `rules`, with the same validation and
/// default-versus-loaded semantics as [`load_flow_rules`]. A loaded rule identical to one in
/// force keeps that breaker's state; any other starts closed.
///
/// ```
/// use sentinel_runtime::rules::{self, CircuitBreakerRule};
/// use std::time::Duration;
///
/// let rule = CircuitBreakerRule::error_count("doc-breaker", 3).recovery(Duration::from_secs(5));
/// rules::load_circuit_breaker_rules(vec![rule]).unwrap();
///
/// let bad = CircuitBreakerRule::error_ratio("doc-breaker", 2.0).recovery(Duration::from_secs(5));
/// let err = rules::load_circuit_breaker_rules(vec![bad]).unwrap_err();
/// assert_eq!((err.resource(), err.field()), ("doc-breaker", "threshold"));
/// # rules::load_circuit_breaker_rules(vec![]).unwrap();
/// ```
pub fn load_circuit_breaker_rules(
    rules: impl IntoIterator<Item = CircuitBreakerRule>,
) -> Result<(), RuleError> {
    counted("circuit_breaker", load_circuit_breaker(rules))
}

fn load_circuit_breaker(
    rules: impl IntoIterator<Item = CircuitBreakerRule>,
) -> Result<(), RuleError> {
    let rules = valid(
        CIRCUIT_BREAKER,
        rules,
        CircuitBreakerRule::validate,
        &[BREAKER_CAP],
    )?;
    replace(|l| &mut l.breakers, by_resource(rules, |r| &r.resource));
    Ok(())
}

/// [`HotspotRule::validate`], and for a rule naming its parameter, that its resource supplies
/// a parameter of that name, once the resource has been entered with names (before that, the
/// rule is kept and resolved when the names are learned).
fn validate_hotspot(rule: &HotspotRule) -> Result<(), RuleError> {
    rule.validate()?;
    let Some(name) = &rule.param else {
        return Ok(());
    };
    let Some(names) = registry::get(&rule.resource).and_then(ResourceNode::param_names) else {
        return Ok(());
    };
    if names.iter().any(|n| n.as_deref() == Some(name)) {
        return Ok(());
    }
    let supplied: Vec<String> = names.iter().flatten().map(|n| format!("`{n}`")).collect();
    let supplied = if supplied.is_empty() {
        "none".to_owned()
    } else {
        supplied.join(", ")
    };
    Err(RuleError::new(
        &rule.resource,
        "param",
        format!(
            "names `{name}`, which the resource does not supply (its named parameters: {supplied})"
        ),
    ))
}

/// The registry's hook once a node learned its parameters' names (see
/// [`registry::learn_param_names`]): a hotspot rule that names a parameter resolves now, so the
/// node's checks are built again when it has one.
fn names_learned(node: &ResourceNode) {
    let loaded = loaded();
    let named_rules = loaded
        .hotspot
        .get(node.name())
        .is_some_and(|rules| rules.iter().any(|r| r.param.is_some()));
    if named_rules {
        loaded.apply(node);
    }
}

/// The kind names used in errors.
pub(crate) const FLOW: &str = "flow";
pub(crate) const CIRCUIT_BREAKER: &str = "circuit_breaker";
pub(crate) const HOTSPOT: &str = "hotspot";
pub(crate) const SYSTEM: &str = "system";
pub(crate) const AUTHORITY: &str = "authority";

/// Every invalid rule, by kind and position in its kind's list: each rule's first bad field,
/// then, for a resource with more than [`MAX_BREAKERS_PER_RESOURCE`] circuit breakers (or
/// [`MAX_HOTSPOT_RULES_PER_RESOURCE`] hotspot rules), the first rule beyond the limit, and the
/// first hotspot rule beyond the memory budget ([`budget`]).
pub(crate) fn problems(
    flow: &[FlowRule],
    breakers: &[CircuitBreakerRule],
    hotspot: &[HotspotRule],
    system: &[SystemRule],
    authority: &[AuthorityRule],
) -> Vec<(&'static str, usize, RuleError)> {
    let mut problems = kind_problems(
        FLOW,
        flow,
        FlowRule::validate,
        &[CLUSTER_FLOW_CAP, ORIGIN_FLOW_CAP],
    );
    problems.extend(kind_problems(
        CIRCUIT_BREAKER,
        breakers,
        CircuitBreakerRule::validate,
        &[BREAKER_CAP],
    ));
    problems.extend(kind_problems(
        HOTSPOT,
        hotspot,
        validate_hotspot,
        &[HOTSPOT_CAP, HOTSPOT_CLUSTER_CAP],
    ));
    problems.extend(
        budget::over_budget(hotspot, budget::max_hotspot_memory())
            .map(|(at, error)| (HOTSPOT, at, error)),
    );
    problems.extend(kind_problems(SYSTEM, system, SystemRule::validate, &[]));
    problems.extend(kind_problems(
        AUTHORITY,
        authority,
        AuthorityRule::validate,
        &[],
    ));
    problems
}

/// A cap on the rules of one kind per resource (or per resource and some part of the rule).
struct Cap<R> {
    max: usize,
    /// What the rules are called in the error ("hotspot rules"), or with a `field` other than
    /// `resource`, the whole error.
    what: &'static str,
    /// The rule's resource and what the cap counts within it (`None`: the rule is not counted).
    key: fn(&R) -> Option<(&str, u64)>,
    /// The field the error names.
    field: &'static str,
}

const BREAKER_CAP: Cap<CircuitBreakerRule> = Cap {
    max: MAX_BREAKERS_PER_RESOURCE,
    what: "circuit-breaker rules",
    key: |r| Some((&r.resource, 0)),
    field: "resource",
};

const HOTSPOT_CAP: Cap<HotspotRule> = Cap {
    max: MAX_HOTSPOT_RULES_PER_RESOURCE,
    what: "hotspot rules",
    key: |r| Some((&r.resource, 0)),
    field: "resource",
};

/// Cluster hotspot rules of one resource, parameter and window would share each value's limit
/// in the cluster's store.
const HOTSPOT_CLUSTER_CAP: Cap<HotspotRule> = Cap {
    max: 1,
    what: "is set on a second QPS hotspot rule of this resource with the same parameter and \
           window: cluster rules of one parameter and window share each value's limit across \
           the instances; keep one, or give them different windows",
    key: |r| {
        r.cluster
            .map(|_| (r.resource.as_str(), hotspot_cluster_part(r)))
    },
    field: "cluster",
};

/// What tells cluster hotspot rules of one resource apart in the store: the parameter (its
/// index, or a hash of its name) and the window.
fn hotspot_cluster_part(rule: &HotspotRule) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&rule.param, rule.param_index, rule.window).hash(&mut hasher);
    hasher.finish()
}

/// Cluster flow rules of one resource and window would share one limit in the cluster's store.
const CLUSTER_FLOW_CAP: Cap<FlowRule> = Cap {
    max: 1,
    what: "is set on a second QPS rule of this resource with the same window: cluster rules of \
           one resource and window share one limit across the instances; keep one, or give \
           them different windows",
    key: |r| r.cluster.map(|_| (r.resource.as_str(), r.window_ms())),
    field: "cluster",
};

/// Flow rules with an origin, per resource (each call's admissions are one bit each).
const ORIGIN_FLOW_CAP: Cap<FlowRule> = Cap {
    max: 64,
    what: "is set on more than 64 flow rules of this resource: at most 64 rules with an origin \
           per resource",
    key: |r| (!r.origin.is_all()).then_some((r.resource.as_str(), 0)),
    field: "origin",
};

/// The problems of one kind's rules, in order: each rule's first bad field, and for each of
/// `caps`, the first valid rule beyond it.
fn kind_problems<R>(
    kind: &'static str,
    rules: &[R],
    validate: impl Fn(&R) -> Result<(), RuleError>,
    caps: &[Cap<R>],
) -> Vec<(&'static str, usize, RuleError)> {
    let mut problems = Vec::new();
    let mut counted: HashMap<(usize, &str, u64), usize> = HashMap::new();
    for (i, rule) in rules.iter().enumerate() {
        if let Err(e) = validate(rule) {
            problems.push((kind, i, e));
            continue;
        }
        for (c, cap) in caps.iter().enumerate() {
            let Some((resource, part)) = (cap.key)(rule) else {
                continue;
            };
            let count = counted.entry((c, resource, part)).or_default();
            *count += 1;
            if *count == cap.max + 1 {
                let (max, what) = (cap.max, cap.what);
                let message = match cap.field {
                    "resource" => format!("has more than {max} {what}"),
                    _ => what.to_owned(),
                };
                problems.push((kind, i, RuleError::new(resource, cap.field, message)));
                break;
            }
        }
    }
    problems
}

/// `rules` of one kind, collected, or the first of their problems (see [`kind_problems`]).
fn valid<R>(
    kind: &'static str,
    rules: impl IntoIterator<Item = R>,
    validate: impl Fn(&R) -> Result<(), RuleError>,
    caps: &[Cap<R>],
) -> Result<Vec<R>, RuleError> {
    let rules: Vec<R> = rules.into_iter().collect();
    match kind_problems(kind, &rules, validate, caps)
        .into_iter()
        .next()
    {
        Some((_, _, error)) => Err(error),
        None => Ok(rules),
    }
}

/// Validates every rule of every kind, then replaces every kind at once (under one lock, so a
/// concurrent load of one kind sees either none or all of this set); on any error nothing
/// changes and every failing rule is reported, by its position in its kind's list. The caller
/// counts the load ([`counted`], or the rule-file report).
pub(crate) fn replace_all(
    flow: Vec<FlowRule>,
    breakers: Vec<CircuitBreakerRule>,
    hotspot: Vec<HotspotRule>,
    system: Vec<SystemRule>,
    authority: Vec<AuthorityRule>,
) -> Result<(), Vec<(&'static str, usize, RuleError)>> {
    let errors = problems(&flow, &breakers, &hotspot, &system, &authority);
    if !errors.is_empty() {
        return Err(errors);
    }
    let grouped = by_resource(breakers, |r| &r.resource);
    let flow = by_resource(flow, |r| &r.resource);
    let hotspot = by_resource(hotspot, |r| &r.resource);
    let authority = by_resource(authority, |r| &r.resource);
    let mut loaded = loaded();
    let old_flow = std::mem::replace(&mut loaded.flow, flow);
    let old_breakers = std::mem::replace(&mut loaded.breakers, grouped);
    let old_hotspot = std::mem::replace(&mut loaded.hotspot, hotspot);
    let old_authority = std::mem::replace(&mut loaded.authority, authority);
    let names: std::collections::HashSet<String> = old_flow
        .into_keys()
        .chain(old_breakers.into_keys())
        .chain(old_hotspot.into_keys())
        .chain(old_authority.into_keys())
        .chain(loaded.flow.keys().cloned())
        .chain(loaded.breakers.keys().cloned())
        .chain(loaded.hotspot.keys().cloned())
        .chain(loaded.authority.keys().cloned())
        .collect();
    loaded.apply_to(&names);
    super::unmatched::loaded(loaded.named());
    put_system_in_force(&system);
    loaded.system = system;
    Ok(())
}

/// Replaces the loaded hotspot rules with `rules`, with the same validation and
/// default-versus-loaded semantics as [`load_flow_rules`]. A loaded rule for the same
/// parameter, metric and capacity as one in force keeps every value's state (a TAT, or the
/// calls inside) and puts its thresholds, burst, window, wait and exceptions in force on it: a
/// reload grants no fresh burst, and calls inside a value still count against its limit. With
/// several such rules on one resource, each keeps its own state: a rule loaded unchanged keeps
/// its table wherever it moved in the list, then a changed rule takes the table of a rule that
/// counted over the same window, then any of the same parameter, metric and capacity.
///
/// ```
/// use sentinel_runtime::rules::{self, HotspotRule};
///
/// rules::load_hotspot_rules(vec![HotspotRule::qps("doc-hot", 0, 10.0).burst(5)]).unwrap();
/// let bad = rules::load_hotspot_rules(vec![HotspotRule::qps("doc-hot", 0, 10.0).capacity(0)]);
/// assert_eq!(bad.unwrap_err().field(), "capacity");
/// # rules::load_hotspot_rules(vec![]).unwrap();
/// ```
pub fn load_hotspot_rules(rules: impl IntoIterator<Item = HotspotRule>) -> Result<(), RuleError> {
    counted("hotspot", load_hotspot(rules))
}

fn load_hotspot(rules: impl IntoIterator<Item = HotspotRule>) -> Result<(), RuleError> {
    let rules = valid(
        HOTSPOT,
        rules,
        validate_hotspot,
        &[HOTSPOT_CAP, HOTSPOT_CLUSTER_CAP],
    )?;
    if let Some((_, error)) = budget::over_budget(&rules, budget::max_hotspot_memory()) {
        return Err(error);
    }
    let grouped = by_resource(rules, |r| &r.resource);
    replace(|l| &mut l.hotspot, grouped);
    Ok(())
}

/// Replaces the loaded authority rules with `rules`, with the same validation as
/// [`load_flow_rules`]. Several rules on one resource must all admit a call. (Authority rules
/// have no defaults: the attribute does not declare them.)
///
/// ```
/// use sentinel_runtime::rules::{self, AuthorityRule};
/// use sentinel_runtime::{context, BlockKind, EntryBuilder};
///
/// rules::load_authority_rules(vec![AuthorityRule::allow("doc-admin", ["ops"])]).unwrap();
/// assert!(EntryBuilder::new("doc-admin").origin("ops").enter().is_ok());
/// let denied = EntryBuilder::new("doc-admin").origin("guest").enter().unwrap_err();
/// assert_eq!(denied.kind(), BlockKind::Authority);
/// assert!(EntryBuilder::new("doc-admin").enter().is_err(), "no origin: denied");
/// assert!(context::with_origin("ops", || sentinel_runtime::entry("doc-admin")).is_ok());
/// # rules::load_authority_rules(vec![]).unwrap();
/// ```
pub fn load_authority_rules(
    rules: impl IntoIterator<Item = AuthorityRule>,
) -> Result<(), RuleError> {
    counted("authority", load_authority(rules))
}

fn load_authority(rules: impl IntoIterator<Item = AuthorityRule>) -> Result<(), RuleError> {
    let rules = valid(AUTHORITY, rules, AuthorityRule::validate, &[])?;
    replace(|l| &mut l.authority, by_resource(rules, |r| &r.resource));
    Ok(())
}

/// Replaces the loaded system rules with `rules` (validated first, as [`load_flow_rules`]; an
/// empty list removes every system rule). They check inbound entries only; several rules combine
/// to the strictest value of each limit. While any is loaded, a background thread samples the
/// CPU usage and load every 500 ms; it stops when none is. A reload keeps the `qps` limit's
/// counts, and the calls already inside count against `concurrency`.
///
/// ```
/// use sentinel_runtime::rules::{self, SystemRule};
///
/// rules::load_system_rules(vec![SystemRule::new().qps(1000.0)])?;
/// let err = rules::load_system_rules(vec![SystemRule::new().cpu_usage(80.0)]).unwrap_err();
/// assert_eq!(err.field(), "cpu_usage"); // a fraction, 0..=1
/// assert_eq!(rules::system_rules(), vec![SystemRule::new().qps(1000.0)]);
/// # rules::load_system_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
pub fn load_system_rules(rules: impl IntoIterator<Item = SystemRule>) -> Result<(), RuleError> {
    counted("system", load_system(rules))
}

fn load_system(rules: impl IntoIterator<Item = SystemRule>) -> Result<(), RuleError> {
    let rules = valid(SYSTEM, rules, SystemRule::validate, &[])?;
    let mut loaded = loaded();
    put_system_in_force(&rules);
    loaded.system = rules;
    Ok(())
}

/// Puts validated system rules in force and starts or stops the CPU and load sampler.
fn put_system_in_force(rules: &[SystemRule]) {
    crate::kinds::system::check::set_rules(rules, crate::clock::now_nanos());
    if rules.is_empty() {
        crate::system_load::stop();
    } else {
        crate::system_load::start();
    }
}

/// The system rules loaded now.
pub fn system_rules() -> Vec<SystemRule> {
    loaded().system.clone()
}

/// The authority rules loaded now, by resource name.
pub fn authority_rules() -> Vec<AuthorityRule> {
    sorted(&loaded().authority)
}

/// The hotspot rules loaded now (not the defaults), by resource name.
pub fn hotspot_rules() -> Vec<HotspotRule> {
    sorted(&loaded().hotspot)
}

fn sorted<R: Clone>(map: &HashMap<String, Vec<R>>) -> Vec<R> {
    let mut names: Vec<&String> = map.keys().collect();
    names.sort();
    names
        .into_iter()
        .flat_map(|n| map[n].iter().cloned())
        .collect()
}

/// The flow rules loaded now (not the defaults), by resource name, in load order per resource.
pub fn flow_rules() -> Vec<FlowRule> {
    sorted(&loaded().flow)
}

/// The circuit-breaker rules loaded now (not the defaults), by resource name.
pub fn circuit_breaker_rules() -> Vec<CircuitBreakerRule> {
    sorted(&loaded().breakers)
}

/// The node of a definition (the attribute) named `name`, with the definition's `defaults`
/// (validated by the caller) added to the node's (several definitions may share a resource:
/// every one's rules apply) and any loaded rules for it in force. Definitions always get their
/// node (they do not count against the cap on resources).
pub(crate) fn defined_node(name: &str, defaults: &Defaults) -> &'static ResourceNode {
    let loaded = loaded();
    let mut created = false;
    let node = registry::get_or_create(name, false, |node| {
        node.adopt_defaults(defaults);
        loaded.apply(node);
        created = true;
    });
    match node {
        Some(node) => {
            if !created && node.adopt_defaults(defaults) {
                loaded.apply(node);
            }
            node
        }
        // Uncapped creation always succeeds; stay panic-free regardless.
        None => registry::overflow(),
    }
}

/// The registry's creation of a node by name (installed by [`loaded`]): a name the loaded
/// rules mention always gets its node, with those rules in force; any other new name counts
/// against the cap on resources (`None` beyond it), and with `known_only` gets no node at all.
fn create(name: &str, known_only: bool) -> Option<&'static ResourceNode> {
    let loaded = loaded();
    let named = loaded.names(name);
    if known_only && !named {
        return None;
    }
    registry::get_or_create(name, !named, |node| loaded.apply(node))
}

/// Rule loads since start, by kind and result (`true`: loaded).
static LOADS: Mutex<std::collections::BTreeMap<(&'static str, bool), u64>> =
    Mutex::new(std::collections::BTreeMap::new());

/// Counts a load of `kind`: `loaded`, or refused.
pub(crate) fn count_load(kind: &'static str, loaded: bool) {
    *LOADS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry((kind, loaded))
        .or_default() += 1;
}

/// Counts a load of `kind` (and with the `tracing` feature, reports it) and returns `result`.
pub(crate) fn counted<E: std::fmt::Display>(
    kind: &'static str,
    result: Result<(), E>,
) -> Result<(), E> {
    count_load(kind, result.is_ok());
    #[cfg(feature = "tracing")]
    match &result {
        Ok(()) => tracing::info!(target: "sentinel", kind, "rules loaded"),
        Err(error) => {
            tracing::warn!(target: "sentinel", kind, %error, "rules refused, the previous stay in force")
        }
    }
    result
}

/// Rule loads since start: `(kind, loaded, count)`, kinds `flow`, `circuit_breaker`,
/// `hotspot`, `authority`, `system` and `rule_set` (a whole set, from `rules::load` or a rule file).
pub(crate) fn load_counts() -> Vec<(&'static str, bool, u64)> {
    let loads = LOADS.lock().unwrap_or_else(PoisonError::into_inner);
    loads.iter().map(|(&(k, ok), &n)| (k, ok, n)).collect()
}
