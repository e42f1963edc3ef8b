//! Outlier ejection: errors counted per endpoint (an instance of a dependency) of a resource; a
//! failing endpoint is ejected for a while, then probed by one call.
//!
//! Its per-call state is its `Kind::Ticket` (`table::OutlierTicket`: the endpoint's slot, and
//! whether the call is its probe): the check returns it, and the exit hook (`Kind::on_exit`,
//! `stage::on_exit`) reports the call's outcome to the endpoint, for the enforced and the
//! shadow part alike. Nothing outside this folder names it.

pub(crate) mod detector;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
pub(crate) mod stage;
pub(crate) mod table;

pub(crate) use detector::ejection_counts;

/// What this kind adds to the public [`rules`](crate::rules) module (through the table of
/// kinds: `kinds/public.rs`).
pub(crate) mod public {
    pub use super::rule::{
        OutlierRule, OutlierStrategy, MAX_EJECTION_FACTOR, MAX_ENDPOINTS, MAX_OUTLIER_MIN_REQUESTS,
        MAX_OUTLIER_RECOVERY, MAX_OUTLIER_RULES_PER_RESOURCE, OUTLIER_RATIO_WINDOW,
    };
}
