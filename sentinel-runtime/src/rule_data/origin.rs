//! Which callers a flow rule limits: Sentinel's `limitApp` on flow rules.

use super::flow::{FlowMetric, FlowRule};
use crate::error::RuleError;

/// The callers a [`FlowRule`](crate::rules::FlowRule) limits, by the origin of their calls
/// ([`EntryBuilder::origin`](crate::EntryBuilder::origin), the tower layer's `.origin(..)`, or
/// the [origin scope](crate::context) the call runs in). Sentinel's `limitApp`.
///
/// * [`All`](FlowOrigin::All) (the default, Sentinel's `"default"`): every call counts, whatever
///   its origin, all together.
/// * [`Named`](FlowOrigin::Named) (`.origin("appA")`): only calls of that origin (trimmed,
///   ignoring ASCII case, as authority rules match) count, against their own threshold; other
///   calls pass this rule.
/// * [`Other`](FlowOrigin::Other) (`.other_origins()`, Sentinel's `"other"`): every call with
///   an origin that no other flow rule of the resource names; **each origin counted on its
///   own** (a threshold per origin), in a table of at most [`MAX_TRACKED_ORIGINS`] origins, so
///   a flood of new origins cannot grow memory (an origin forgotten for room keeps its debt,
///   as hotspot values do). A call without an origin passes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlowOrigin {
    /// Every caller, counted together.
    #[default]
    All,
    /// The calls of one origin.
    Named(String),
    /// Each origin that no other flow rule of the resource names, counted on its own.
    Other,
}

/// How many origins an [`Other`](FlowOrigin::Other) rule tracks at once.
pub const MAX_TRACKED_ORIGINS: usize = 4_096;

impl FlowOrigin {
    /// Reads Sentinel's `limitApp` (and our files' `origin`): `"default"` is
    /// [`All`](Self::All), `"other"` is [`Other`](Self::Other), anything else names an origin
    /// (trimmed).
    pub fn from_limit_app(limit_app: &str) -> FlowOrigin {
        match limit_app.trim() {
            "default" => FlowOrigin::All,
            "other" => FlowOrigin::Other,
            name => FlowOrigin::Named(name.to_owned()),
        }
    }

    /// The origin as Sentinel's `limitApp` (and our files' `origin`) write it.
    pub fn as_limit_app(&self) -> &str {
        match self {
            FlowOrigin::All => "default",
            FlowOrigin::Named(name) => name,
            FlowOrigin::Other => "other",
        }
    }

    /// Whether this is [`All`](Self::All).
    pub fn is_all(&self) -> bool {
        *self == FlowOrigin::All
    }

    /// The origin named, if this names one.
    pub(crate) fn named(&self) -> Option<&str> {
        match self {
            FlowOrigin::Named(name) => Some(name.trim()),
            _ => None,
        }
    }
}

/// Whether a call's `origin` is `name`: trimmed, ignoring ASCII case.
pub(crate) fn same_origin(origin: &str, name: &str) -> bool {
    origin.trim().eq_ignore_ascii_case(name.trim())
}

/// Checks a flow rule's `origin`: a name that is not blank nor one of Sentinel's words, on a
/// QPS rule without `relate` or `cluster`; an [`Other`](FlowOrigin::Other) rule rejects over
/// its threshold (no `warm_up`, `max_wait` or `strict`: each origin is paced by its own GCRA).
pub(super) fn validate(rule: &FlowRule) -> Result<(), RuleError> {
    let err = |message: &str| Err(RuleError::new(&rule.resource, "origin", message.to_owned()));
    if let FlowOrigin::Named(name) = &rule.origin {
        if name.trim().is_empty() {
            return err("must name an origin (not blank); leave it out to limit every caller");
        }
        if ["default", "other"].contains(&name.trim()) {
            return err(
                "is one of Sentinel's words, not an origin's name: \"default\" is every caller \
                 (no origin), \"other\" is FlowRule::other_origins",
            );
        }
    }
    if rule.origin.is_all() {
        return Ok(());
    }
    if rule.metric != FlowMetric::Qps {
        return err("applies to QPS rules only (per-origin concurrency limits are not supported)");
    }
    if rule.relate.is_some() || rule.cluster.is_some() {
        return err("cannot be combined with relate or cluster");
    }
    if rule.origin == FlowOrigin::Other
        && (rule.warm_up.is_some() || rule.max_wait.is_some() || rule.strict)
    {
        return err(
            "other: each origin rejects over its own threshold; warm_up, max_wait and strict \
             are not supported with it",
        );
    }
    Ok(())
}
