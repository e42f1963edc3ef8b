//! The rule manager: validates rule sets (`set`, with the memory `budget` of hotspot tables),
//! keeps the loaded rules by resource and puts them in force by rebuilding each named node's
//! chain (`load`), and tracks the rules that match no resource (`unmatched`).
//!
//! Its public functions are re-exported by [`rules`](crate::rules).

mod budget;
mod by_kind;
pub(crate) mod load;
mod rule_set;
pub(crate) mod set;
mod unmatched;

pub use budget::{max_hotspot_memory, set_max_hotspot_memory, DEFAULT_MAX_HOTSPOT_MEMORY};
pub use by_kind::{authority_rules, hotspot_rules, load_authority_rules, load_hotspot_rules};
pub use by_kind::{circuit_breaker_rules, flow_rules, load_circuit_breaker_rules, load_flow_rules};
pub use by_kind::{load_outlier_rules, outlier_rules};
pub use by_kind::{load_system_rules, system_rules};
#[cfg(feature = "rule-files")]
pub(crate) use load::count_load;
pub(crate) use load::{defined_node, load_counts};
pub use set::{current, load, RuleSet, RuleSetError, RuleSetErrorEntry};
pub use unmatched::{set_unmatched_grace, unmatched, DEFAULT_UNMATCHED_GRACE};
