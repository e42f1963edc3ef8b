//! The rule manager: validates rule sets (`set`, with the memory `budget` of hotspot tables),
//! keeps the loaded rules by resource and puts them in force by rebuilding each named node's
//! chain (`load`), and tracks the rules that match no resource (`unmatched`).
//!
//! Its public functions are re-exported by [`rules`](crate::rules).

mod budget;
pub(crate) mod by_kind;
pub(crate) mod load;
mod rule_set;
pub(crate) mod set;
mod unmatched;

pub use budget::{max_hotspot_memory, set_max_hotspot_memory, DEFAULT_MAX_HOTSPOT_MEMORY};
#[cfg(feature = "rule-files")]
pub(crate) use load::count_load;
pub(crate) use load::{defined_node, load_counts};
pub use set::{current, load, RuleSet, RuleSetError, RuleSetErrorEntry};
pub use unmatched::{set_unmatched_grace, unmatched, DEFAULT_UNMATCHED_GRACE};
