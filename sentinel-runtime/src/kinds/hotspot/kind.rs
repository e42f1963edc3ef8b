//! The hotspot kind in the table of kinds.

use std::borrow::Cow;

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Validation};
use crate::kinds::validate::{self, Cap};
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::HOTSPOT_SLOT_ORDER;

use super::budget;
use super::gate::HotspotGate;
use super::rule::{HotspotRule, MAX_HOTSPOT_RULES_PER_RESOURCE};
use super::stage;

/// Hotspot rules: limits per value of a call's parameter.
pub(crate) struct HotspotKind;

impl Kind for HotspotKind {
    type Rule = HotspotRule;
    type Checks = Vec<HotspotGate>;
    type Ticket = ();

    const NAME: &'static str = "hotspot";
    const KEYS: &'static [&'static str] = &["hotspot", "paramFlow"];
    const PROCESS_WIDE: bool = false;
    const ORDER: i32 = HOTSPOT_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "ParamFlowRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn resource(rule: &HotspotRule) -> Option<&str> {
        Some(&rule.resource)
    }

    fn unshadowed(rule: &HotspotRule) -> Option<HotspotRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn problems(rules: &[HotspotRule], ctx: &Validation) -> Vec<(usize, RuleError)> {
        let mut problems = validate::problems(
            rules,
            |rule| validate_hotspot(rule, ctx),
            &[HOTSPOT_CAP, HOTSPOT_CLUSTER_CAP],
        );
        problems.extend(budget::over_budget(rules, ctx.max_hotspot_memory));
        problems
    }

    fn build(
        rules: &[HotspotRule],
        old: &Vec<HotspotGate>,
        ctx: &BuildContext<'_>,
    ) -> Vec<HotspotGate> {
        stage::build(&with_param_indices(rules, ctx.param_names), old)
    }

    fn alone(checks: &Vec<HotspotGate>) -> Alone {
        match checks.as_slice() {
            [] => Alone::Empty,
            [gate] if gate.is_plain_rate() => Alone::Hotspot,
            _ => Alone::Other,
        }
    }

    #[inline(always)]
    fn check(checks: &Vec<HotspotGate>, call: &mut Call<'_>, _: &mut ()) -> Result<(), BlockError> {
        stage::check(checks, call)
    }

    fn release(checks: &Vec<HotspotGate>, call: &mut Call<'_>, _: ()) {
        stage::release(checks, call)
    }

    fn on_exit(_: &Vec<HotspotGate>, _: (), _: &Exit) {}

    fn shadow_checks(_: &Params) -> bool {
        false
    }

    fn put_in_force(_: &[HotspotRule], _: u64) {}
}

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

/// [`HotspotRule::validate`], and for a rule naming its parameter, that its resource supplies
/// a parameter of that name, once the resource has been entered with names (before that, the
/// rule is kept and resolved when the names are learned).
fn validate_hotspot(rule: &HotspotRule, ctx: &Validation) -> Result<(), RuleError> {
    rule.validate()?;
    let Some(name) = &rule.param else {
        return Ok(());
    };
    let Some(names) = (ctx.param_names)(&rule.resource) else {
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
