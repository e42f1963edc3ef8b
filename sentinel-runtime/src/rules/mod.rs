//! Rules: [`FlowRule`] and [`CircuitBreakerRule`] as plain validated data, and
//! [`load_flow_rules`] / [`load_circuit_breaker_rules`] to replace the rules in force at run time.
//!
//! A resource's rules come from two places. Rules written at its definition (the attribute's
//! `qps = ...`, `breaker(...)`) are its *defaults*. Loaded rules of a kind **replace all of that
//! kind's defaults** for every resource they name (loading only a QPS rule for a resource whose
//! attribute says `concurrency = 1` leaves it with the QPS rule alone); loading a set that no
//! longer names a resource returns it to its defaults.
//!
//! Loading never grants what the old rules had already spent:
//!
//! * a loaded rule of the same shape (window, sample count, strictness, behaviour) as one in force
//!   keeps that rule's counts and only changes the threshold (with several rules of one shape,
//!   a rule loaded unchanged keeps its own, wherever it moved in the list);
//! * a rule of a new shape starts with the passes the resource admitted within its window (taken
//!   from the resource's statistics, to within one 100 ms statistics bucket, on the side of
//!   blocking), so a reload never opens a second full window;
//! * a concurrency rule counts the calls already inside the resource.
//!
//! A reload costs in proportion to the rules it loads and the resources they name; the rules it
//! replaces are freed (once no call is reading them).

#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub mod files;
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub mod source;

/// Every kind's rule and its public types and limits (each kind's `public` face, through the
/// table of kinds).
pub use crate::kinds::public::*;
/// `load_<kind>_rules` and `<kind>_rules` for every kind of rule (named in the table of kinds).
pub use crate::manager::by_kind::*;
pub use crate::manager::{current, load, RuleSet, RuleSetError, RuleSetErrorEntry};
pub use crate::manager::{max_hotspot_memory, set_max_hotspot_memory, DEFAULT_MAX_HOTSPOT_MEMORY};
pub use crate::manager::{set_unmatched_grace, unmatched, DEFAULT_UNMATCHED_GRACE};
/// How many parameters an entry carries ([`EntryBuilder::param`](crate::EntryBuilder::param));
/// a hotspot rule's `param_index` is below it.
pub use crate::param::MAX_PARAMS;
pub use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
pub use crate::rule_data::resource::MAX_RESOURCE_NAME_BYTES;
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub use files::load_file;
#[cfg(feature = "rule-files")]
pub(crate) use files::report::file_results;
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub use files::report::MAX_REPORTED_FILES;
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub use source::{watch_file, watch_source, RuleWatcher, WatchStatus};
