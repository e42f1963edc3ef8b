//! What the rules did since start: loads ([`rule_loads`], [`rule_files`]), circuit-breaker
//! transitions, outlier ejections; and the level of the block events.

use crate::breaker::CircuitState;

/// Sets the level of the block events (feature `tracing`): at most one event a second per
/// resource, "calls blocked since the last report", with the counts by kind of rule. `INFO` by
/// default, since a per-client limit blocks as a matter of course; `None` turns them off.
/// Circuit-breaker transitions and refused rule loads stay `WARN`. `tracing` 0.1's [`Level`].
///
/// [`Level`]: tracing::Level
///
/// ```
/// use sentinel_runtime::metrics;
/// metrics::set_block_event_level(Some(tracing::Level::DEBUG));
/// # metrics::set_block_event_level(Some(tracing::Level::INFO));
/// ```
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub fn set_block_event_level(level: Option<tracing::Level>) {
    crate::events::set_block_level(level);
}

/// Outlier ejections since start: `(resource, ejections, returns)`, sorted by resource. An
/// ejection is an endpoint ejected by an outlier rule ([`OutlierRule`](crate::rules::OutlierRule))
/// (again after a failed probe too); a return is a probe that brought one back.
///
/// ```
/// for (resource, ejections, returns) in sentinel_runtime::metrics::outlier_ejections() {
///     println!("{resource}: {ejections} ejections, {returns} returns");
/// }
/// ```
pub fn outlier_ejections() -> Vec<(&'static str, u64, u64)> {
    crate::kinds::outlier::ejection_counts()
}

/// Circuit-breaker transitions since start: `(resource, from, to, count)`, sorted.
///
/// ```
/// for (resource, from, to, n) in sentinel_runtime::metrics::circuit_breaker_transitions() {
///     println!("{resource}: {from} -> {to} x{n}");
/// }
/// ```
pub fn circuit_breaker_transitions() -> Vec<(&'static str, CircuitState, CircuitState, u64)> {
    crate::breaker::transition_counts()
        .into_iter()
        .map(|((resource, from, to), n)| (resource, from, to, n))
        .collect()
}

/// Rule loads since start: `(kind, loaded, count)`, sorted, where `kind` is a kind of rule's
/// name (`flow`, `circuit_breaker`, `hotspot`, `system`, `authority`, `outlier`: the
/// `rules::load_<kind>_rules` functions) or `rule_set` (a whole set:
/// [`rules::load`](crate::rules::load), a rule file), and `loaded` is whether the rules were put
/// in force (else they were refused).
///
/// ```
/// use sentinel_runtime::{metrics, rules::{self, FlowRule}};
/// let _ = rules::load_flow_rules(vec![FlowRule::qps("doc-loads", -1.0)]); // refused
/// let refused = metrics::rule_loads().into_iter().any(|(kind, loaded, n)| kind == "flow" && !loaded && n > 0);
/// assert!(refused);
/// ```
pub fn rule_loads() -> Vec<(&'static str, bool, u64)> {
    crate::manager::load_counts()
}

/// Each rule file's last load ([`rules::load_file`](crate::rules::load_file) or a
/// [`RuleWatcher`](crate::rules::RuleWatcher)): its absolute path and whether the load put its
/// content in force (`false`: refused, the previous rules stay), sorted by path. At most
/// [`MAX_REPORTED_FILES`](crate::rules::MAX_REPORTED_FILES) files are listed (feature
/// `rule-files`).
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub fn rule_files() -> Vec<(std::path::PathBuf, bool)> {
    crate::rules::file_results()
}
