//! The flow kind in the table of kinds.

use crate::error::{BlockError, RuleError};
use crate::kinds::call::{BuildContext, Call, Exit};
use crate::kinds::kind::{Alone, Kind, Validation};
use crate::kinds::validate::{self, Cap};
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;
use crate::slot::order::FLOW_SLOT_ORDER;

use super::rule::FlowRule;
use super::stage::{self, FlowChecks};

/// Flow rules: QPS and concurrency limits, with their shaping.
pub(crate) struct FlowKind;

impl Kind for FlowKind {
    type Rule = FlowRule;
    type Checks = FlowChecks;
    type Ticket = ();

    const NAME: &'static str = "flow";
    const KEYS: &'static [&'static str] = &["flow"];
    const PROCESS_WIDE: bool = false;
    const ORDER: i32 = FLOW_SLOT_ORDER;
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str = "FlowRule";
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule> = super::file::READER;

    fn resource(rule: &FlowRule) -> Option<&str> {
        Some(&rule.resource)
    }

    fn unshadowed(rule: &FlowRule) -> Option<FlowRule> {
        rule.shadow.then(|| rule.clone().shadow(false))
    }

    fn problems(rules: &[FlowRule], _: &Validation) -> Vec<(usize, RuleError)> {
        validate::problems(
            rules,
            FlowRule::validate,
            &[CLUSTER_FLOW_CAP, ORIGIN_FLOW_CAP],
        )
    }

    fn build(rules: &[FlowRule], old: &FlowChecks, ctx: &BuildContext<'_>) -> FlowChecks {
        stage::build(rules, old, ctx)
    }

    fn alone(checks: &FlowChecks) -> Alone {
        let only_gates = checks.origin_gates.is_empty()
            && checks.concurrency.is_none()
            && checks.adaptive.is_none();
        match checks.gates.as_slice() {
            [] if only_gates => Alone::Empty,
            [gate] if only_gates && gate.as_qps().is_some() => Alone::Qps,
            _ => Alone::Other,
        }
    }

    #[inline(always)]
    fn check(checks: &FlowChecks, call: &mut Call<'_>, _: &mut ()) -> Result<(), BlockError> {
        stage::check(checks, call)
    }

    fn release(checks: &FlowChecks, call: &mut Call<'_>, _: ()) {
        stage::release(checks, call)
    }

    fn on_exit(_: &FlowChecks, _: (), _: &Exit) {}

    fn shadow_checks(_: &Params) -> bool {
        false
    }

    fn put_in_force(_: &[FlowRule], _: u64) {}
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
