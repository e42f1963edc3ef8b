//! [`RuleSet`]: every kind of rule in one value (its methods and loading are in `set`).

use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::HotspotRule;
use crate::kinds::outlier::rule::OutlierRule;
use crate::kinds::system::rule::SystemRule;

/// Every kind of rule at once: what a rule file holds, what [`load`](crate::rules::load) puts in force (replacing
/// every kind together) and what [`current`](crate::rules::current) returns.
///
/// Build one in code (the struct is `#[non_exhaustive]`, so start from `RuleSet::default()`), or
/// read one from a file with the default feature `rule-files`: `RuleSet::from_json`,
/// `from_yaml`, `from_toml`, `from_path`, and `rules::watch_file` to reload it on change. The
/// file format (with a complete example in each format, and Sentinel's JSON names) is described
/// in the `rules::files` module.
///
/// ```
/// use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, RuleSet};
/// use std::time::Duration;
///
/// let mut set = RuleSet::default();
/// set.flow.push(FlowRule::qps("doc-set-api", 100.0));
/// set.circuit_breaker.push(
///     CircuitBreakerRule::error_ratio("doc-set-db", 0.5).recovery(Duration::from_secs(5)),
/// );
/// rules::load(set.clone())?;
/// assert_eq!(rules::current(), set);
///
/// // One bad rule refuses the whole set; the rules in force stay.
/// let mut bad = set.clone();
/// bad.flow.push(FlowRule::qps("doc-set-other", -1.0));
/// let err = rules::load(bad).unwrap_err();
/// assert_eq!(err.entries().len(), 1);
/// assert_eq!(err.entries()[0].index, Some(1));
/// assert_eq!(err.entries()[0].field.as_deref(), Some("threshold"));
/// assert_eq!(rules::current(), set);
/// # rules::load(RuleSet::default())?;
/// # Ok::<(), rules::RuleSetError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "rule-files", derive(serde::Serialize))]
#[non_exhaustive]
pub struct RuleSet {
    /// Flow rules (Sentinel's `FlowRule`). In files: `flow`.
    pub flow: Vec<FlowRule>,
    /// Circuit-breaker rules (Sentinel's `DegradeRule`). In files: `circuit_breaker`, or
    /// Sentinel's name `degrade`.
    pub circuit_breaker: Vec<CircuitBreakerRule>,
    /// Hotspot (per-parameter-value) rules (Sentinel's `ParamFlowRule`). In files: `hotspot`, or
    /// Sentinel's name `paramFlow`.
    pub hotspot: Vec<HotspotRule>,
    /// System rules (Sentinel's `SystemRule`). In files: `system`.
    pub system: Vec<SystemRule>,
    /// Authority rules (Sentinel's `AuthorityRule`). In files: `authority`.
    pub authority: Vec<AuthorityRule>,
    /// Outlier rules (endpoints ejected for their errors). In files: `outlier`.
    pub outlier: Vec<OutlierRule>,
    // Each kind of the table of kinds (`kinds::table`) has its field here: the manager's
    // code over every kind takes a `RuleSet` apart field by field, so it does not compile
    // while a kind lacks its field, or a field its kind.
}
