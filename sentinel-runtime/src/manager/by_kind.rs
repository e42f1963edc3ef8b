//! The public per-kind load and read functions (re-exported by [`rules`](crate::rules)): each
//! is the manager's generic load or read of one kind of the table.

use crate::error::RuleError;
use crate::kinds::authority::kind::AuthorityKind;
use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::circuit_breaker::kind::CircuitBreakerKind;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::flow::kind::FlowKind;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::kind::HotspotKind;
use crate::kinds::hotspot::rule::HotspotRule;
use crate::kinds::outlier::kind::OutlierKind;
use crate::kinds::outlier::rule::OutlierRule;
use crate::kinds::system::kind::SystemKind;
use crate::kinds::system::rule::SystemRule;

use super::load::{load_kind, loaded_rules};

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
    load_kind::<FlowKind>(rules)
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
    load_kind::<CircuitBreakerKind>(rules)
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
    load_kind::<HotspotKind>(rules)
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
    load_kind::<AuthorityKind>(rules)
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
    load_kind::<SystemKind>(rules)
}

/// The flow rules loaded now (not the defaults), by resource name, in load order per resource.
pub fn flow_rules() -> Vec<FlowRule> {
    loaded_rules(|l| &l.flow)
}

/// The circuit-breaker rules loaded now (not the defaults), by resource name.
pub fn circuit_breaker_rules() -> Vec<CircuitBreakerRule> {
    loaded_rules(|l| &l.circuit_breaker)
}

/// The hotspot rules loaded now (not the defaults), by resource name.
pub fn hotspot_rules() -> Vec<HotspotRule> {
    loaded_rules(|l| &l.hotspot)
}

/// The system rules loaded now.
pub fn system_rules() -> Vec<SystemRule> {
    loaded_rules(|l| &l.system)
}

/// The authority rules loaded now, by resource name.
pub fn authority_rules() -> Vec<AuthorityRule> {
    loaded_rules(|l| &l.authority)
}

/// Replaces the loaded outlier rules with `rules`, with the same validation as
/// [`load_flow_rules`]. A reload keeps the resource's endpoints, their counts and ejections.
///
/// ```
/// use sentinel_runtime::rules::{self, OutlierRule};
/// use sentinel_runtime::{outlier, BlockKind, EntryBuilder};
///
/// rules::load_outlier_rules(vec![OutlierRule::consecutive_errors("doc-outlier", 2)])?;
/// let call = |endpoint: &str| EntryBuilder::new("doc-outlier").endpoint(endpoint).enter();
/// # let _clock = sentinel_runtime::clock::MockClock::install();
/// for _ in 0..2 {
///     call("10.0.0.1:80").unwrap().set_error();
/// }
/// assert_eq!(call("10.0.0.1:80").unwrap_err().kind(), BlockKind::Outlier);
/// assert!(call("10.0.0.2:80").is_ok(), "only the failing endpoint is ejected");
/// assert_eq!(outlier::ejected("doc-outlier"), ["10.0.0.1:80"]);
/// let bad = rules::load_outlier_rules(vec![OutlierRule::error_ratio("doc-outlier", 2.0)]);
/// assert_eq!(bad.unwrap_err().field(), "threshold");
/// # rules::load_outlier_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
pub fn load_outlier_rules(rules: impl IntoIterator<Item = OutlierRule>) -> Result<(), RuleError> {
    load_kind::<OutlierKind>(rules)
}

/// The outlier rules loaded now, by resource name.
pub fn outlier_rules() -> Vec<OutlierRule> {
    loaded_rules(|l| &l.outlier)
}
