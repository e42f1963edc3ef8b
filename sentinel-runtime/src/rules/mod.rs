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
pub mod files;
#[cfg(feature = "rule-files")]
pub mod source;

pub use crate::kinds::authority::rule::{AuthorityRule, AuthorityStrategy};
pub use crate::kinds::circuit_breaker::rule::{
    BreakerStrategy, CircuitBreakerRule, MAX_BREAKERS_PER_RESOURCE, MAX_MIN_REQUESTS, MAX_PROBES,
    MAX_RECOVERY,
};
pub use crate::kinds::flow::adaptive_rule::MAX_ADAPTIVE_LIMIT;
pub use crate::kinds::flow::origin_rule::{FlowOrigin, MAX_TRACKED_ORIGINS};
pub use crate::kinds::flow::rule::{
    AdaptiveConcurrency, FlowMetric, FlowRule, WarmUp, DEFAULT_SAMPLE_COUNT, DEFAULT_WINDOW,
    MAX_COLD_FACTOR, MAX_SAMPLE_COUNT, MAX_THRESHOLD, MAX_WAIT_LIMIT, MAX_WARM_UP,
};
pub use crate::kinds::hotspot::rule::{
    HotspotException, HotspotMetric, HotspotRule, DEFAULT_HOTSPOT_CAPACITY, MAX_HOTSPOT_CAPACITY,
    MAX_HOTSPOT_RULES_PER_RESOURCE, MAX_HOTSPOT_WINDOW, PARAM_BY_NAME,
};
pub use crate::kinds::outlier::rule::{
    OutlierRule, OutlierStrategy, MAX_EJECTION_FACTOR, MAX_ENDPOINTS, MAX_OUTLIER_MIN_REQUESTS,
    MAX_OUTLIER_RECOVERY, MAX_OUTLIER_RULES_PER_RESOURCE, OUTLIER_RATIO_WINDOW,
};
pub use crate::kinds::system::rule::{SystemRule, MAX_SYSTEM_RT};
pub use crate::manager::{
    authority_rules, hotspot_rules, load_authority_rules, load_hotspot_rules,
};
pub use crate::manager::{
    circuit_breaker_rules, flow_rules, load_circuit_breaker_rules, load_flow_rules,
};
pub use crate::manager::{current, load, RuleSet, RuleSetError, RuleSetErrorEntry};
pub use crate::manager::{load_outlier_rules, outlier_rules};
pub use crate::manager::{load_system_rules, system_rules};
pub use crate::manager::{max_hotspot_memory, set_max_hotspot_memory, DEFAULT_MAX_HOTSPOT_MEMORY};
pub use crate::manager::{set_unmatched_grace, unmatched, DEFAULT_UNMATCHED_GRACE};
/// How many parameters an entry carries ([`EntryBuilder::param`](crate::EntryBuilder::param));
/// a hotspot rule's `param_index` is below it.
pub use crate::param::MAX_PARAMS;
pub use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
#[cfg(feature = "rule-files")]
pub use files::load_file;
#[cfg(feature = "rule-files")]
pub(crate) use files::report::file_results;
#[cfg(feature = "rule-files")]
pub use files::report::MAX_REPORTED_FILES;
#[cfg(feature = "rule-files")]
pub use source::{watch_file, watch_source, RuleWatcher, WatchStatus};
