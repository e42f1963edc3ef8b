//! The rule manager's core: keeps the loaded rules by kind and resource, validates them through
//! each kind's [`Kind`], and puts them in force on the resources they name (or back to their
//! defaults) by rebuilding each named node's chain. Every per-kind list here comes from the
//! table of kinds.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, PoisonError};

use super::budget;
use super::rule_set::RuleSet;
use crate::clock;
use crate::error::RuleError;
use crate::kinds::defaults::Defaults;
use crate::kinds::kind::{Kind, Validation};
use crate::kinds::table::kinds_table;
use crate::kinds::{BuildContext, Chain, ChainRules};
use crate::node::ResourceNode;
use crate::registry;
use crate::stat::NodeStats;

/// A resource's statistics by name, for rules that count another resource's traffic.
fn resolve_stats(name: &str) -> Option<&'static NodeStats> {
    registry::get(name).map(ResourceNode::stats)
}

/// The parameter names a resource supplies, once it has been entered with names.
fn param_names(resource: &str) -> Option<Vec<Option<String>>> {
    registry::get(resource).and_then(ResourceNode::param_names)
}

/// What validating rules may ask of the layers above the kinds.
pub(crate) fn validation() -> Validation {
    Validation {
        param_names,
        max_hotspot_memory: budget::max_hotspot_memory(),
    }
}

/// One kind's loaded rules, by the resource they name (process-wide rules under `""`, a name no
/// resource can have), each resource's in load order.
type ByResource<R> = HashMap<String, Vec<R>>;

/// `rules` by the resource they name (see [`ByResource`]).
fn by_resource<K: Kind>(rules: Vec<K::Rule>) -> ByResource<K::Rule> {
    let mut map: ByResource<K::Rule> = HashMap::new();
    for rule in rules {
        let resource = K::resource(&rule).unwrap_or_default().to_owned();
        map.entry(resource).or_default().push(rule);
    }
    map
}

/// Defines [`Loaded`] and what goes over every kind of it, from the table of kinds.
macro_rules! define_loaded {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// The loaded rules by kind and resource. Its lock also orders node creation against
        /// loading, so a node created while rules load sees either the old or the new set, whole.
        #[derive(Default)]
        pub(crate) struct Loaded {
            $( pub(crate) $name: ByResource<<$kind as Kind>::Rule>, )*
        }

        impl Loaded {
            /// Puts the rules in force on `node`: per kind, the loaded ones for its name, else
            /// its definition's defaults.
            fn apply(&self, node: &ResourceNode) {
                let name = node.name();
                $( let $name = self.$name.get(name); )*
                node.rebuild(|defaults, param_names, old, stats| {
                    let rules = ChainRules {
                        $( $name: $name.map_or(&defaults.$name[..], Vec::as_slice), )*
                    };
                    let ctx = BuildContext {
                        param_names,
                        now: clock::now_nanos(),
                        stats,
                        resolve: resolve_stats,
                        shadow: false,
                    };
                    Chain::build(&rules, old, &ctx)
                });
            }

            /// Every resource the loaded rules name.
            fn named(&self) -> Vec<String> {
                let mut names: Vec<String> = std::iter::empty()
                    $( .chain(self.$name.keys()) )*
                    .filter(|name| !name.is_empty())
                    .cloned()
                    .collect();
                names.sort_unstable();
                names.dedup();
                names
            }

            /// Whether the loaded rules name `name`.
            fn names(&self, name: &str) -> bool {
                !name.is_empty() && (false $( || self.$name.contains_key(name) )*)
            }
        }

        /// Every invalid rule of `set`, by kind and position in its kind's list: each rule's
        /// first bad field, then the rules beyond a kind's caps.
        pub(crate) fn problems(set: &RuleSet) -> Vec<(&'static str, usize, RuleError)> {
            let ctx = validation();
            let mut problems = Vec::new();
            $(
                problems.extend(
                    <$kind as Kind>::problems(&set.$name, &ctx)
                        .into_iter()
                        .map(|(i, e)| (<$kind as Kind>::NAME, i, e)),
                );
            )*
            problems
        }

        /// Validates every rule of every kind, then replaces every kind at once (under one
        /// lock, so a concurrent load of one kind sees either none or all of this set); on any
        /// error nothing changes and every failing rule is reported, by its position in its
        /// kind's list. The caller counts the load ([`counted`], or the rule-file report).
        pub(crate) fn replace_all(set: RuleSet) -> Result<(), Vec<(&'static str, usize, RuleError)>> {
            let errors = problems(&set);
            if !errors.is_empty() {
                return Err(errors);
            }
            // Every field, so that a kind missing from the table cannot compile.
            let RuleSet { $( $name, )* } = set;
            let mut loaded = loaded();
            let mut names: HashSet<String> = HashSet::new();
            $(
                let old = std::mem::replace(&mut loaded.$name, by_resource::<$kind>($name));
                names.extend(old.into_keys());
                names.extend(loaded.$name.keys().cloned());
            )*
            loaded.apply_to(&names);
            super::unmatched::loaded(loaded.named());
            let now = clock::now_nanos();
            $( <$kind as Kind>::put_in_force(&sorted(&loaded.$name), now); )*
            Ok(())
        }

        /// Whether `set` has no rule of any kind.
        pub(crate) fn is_empty(set: &RuleSet) -> bool {
            let RuleSet { $( $name, )* } = set;
            true $( && $name.is_empty() )*
        }

        /// The rules loaded now, every kind (not the resources' defaults).
        pub(crate) fn current() -> RuleSet {
            let loaded = loaded();
            RuleSet { $( $name: sorted(&loaded.$name), )* }
        }
    };
}

kinds_table!(define_loaded);

impl Loaded {
    /// Applies the rules to the nodes of `names` that exist (the others get them when created).
    fn apply_to<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        for name in names {
            if let Some(node) = registry::get(name) {
                self.apply(node);
            }
        }
    }
}

static LOADED: LazyLock<Mutex<Loaded>> = LazyLock::new(Mutex::default);

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

/// A kind's loaded rules, by resource name, in load order per resource.
fn sorted<R: Clone>(map: &ByResource<R>) -> Vec<R> {
    let mut names: Vec<&String> = map.keys().collect();
    names.sort();
    names
        .into_iter()
        .flat_map(|n| map[n].iter().cloned())
        .collect()
}

/// The rules of one kind loaded now (`kind` picks its field of [`Loaded`]).
pub(crate) fn loaded_rules<R: Clone>(kind: impl Fn(&Loaded) -> &ByResource<R>) -> Vec<R> {
    sorted(kind(&loaded()))
}

/// Replaces the loaded rules of kind `K` with `rules`, validated first (the first problem is
/// the error, and nothing changes), and applies the change to the resources the old or the new
/// rules name: a reload costs in proportion to the rules, not to the number of resources.
/// Counted and reported as a load of `K`.
pub(crate) fn load_kind<K: Kind>(rules: impl IntoIterator<Item = K::Rule>) -> Result<(), RuleError>
where
    Loaded: Field<K>,
{
    counted(K::NAME, load_uncounted::<K>(rules.into_iter().collect()))
}

fn load_uncounted<K: Kind>(rules: Vec<K::Rule>) -> Result<(), RuleError>
where
    Loaded: Field<K>,
{
    if let Some((_, error)) = K::problems(&rules, &validation()).into_iter().next() {
        return Err(error);
    }
    let mut loaded = loaded();
    let new = by_resource::<K>(rules);
    let old = std::mem::replace(loaded.field(), new);
    let names: HashSet<String> = old
        .into_keys()
        .chain(loaded.field().keys().cloned())
        .collect();
    loaded.apply_to(&names);
    super::unmatched::loaded(loaded.named());
    K::put_in_force(&sorted(loaded.field()), clock::now_nanos());
    Ok(())
}

/// The field of [`Loaded`] that holds kind `K`'s rules.
pub(crate) trait Field<K: Kind> {
    fn field(&mut self) -> &mut ByResource<K::Rule>;
}

/// Implements [`Field`] for every kind of the table.
macro_rules! define_fields {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        $(
            impl Field<$kind> for Loaded {
                fn field(&mut self) -> &mut ByResource<<$kind as Kind>::Rule> {
                    &mut self.$name
                }
            }
        )*
    };
}

kinds_table!(define_fields);

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
