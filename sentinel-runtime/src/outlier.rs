//! What a client's balancer asks of the outlier rules
//! ([`OutlierRule`](crate::rules::OutlierRule)): which endpoints of a resource are ejected now,
//! and which of its candidates are not.
//!
//! ```
//! use sentinel_runtime::rules::{self, OutlierRule};
//! use sentinel_runtime::{outlier, EntryBuilder};
//!
//! rules::load_outlier_rules(vec![OutlierRule::consecutive_errors("doc-balancer", 1)])?;
//! # let _clock = sentinel_runtime::clock::MockClock::install();
//! let hosts = ["inv-a:80", "inv-b:80"];
//! EntryBuilder::new("doc-balancer").endpoint(hosts[0]).enter().unwrap().set_error();
//! assert_eq!(outlier::ejected("doc-balancer"), ["inv-a:80"]);
//! assert_eq!(outlier::healthy("doc-balancer", &hosts), ["inv-b:80"]);
//! # rules::load_outlier_rules(vec![])?;
//! # Ok::<(), sentinel_runtime::RuleError>(())
//! ```

use crate::clock;

/// The endpoints of `resource` ejected now (their calls are blocked, or their one probe is out),
/// sorted: never more than the rules' share allows
/// ([`OutlierRule::max_ejection_percent`](crate::rules::OutlierRule::max_ejection_percent)).
/// Empty for a resource without outlier rules or never entered.
///
/// ```
/// assert!(sentinel_runtime::outlier::ejected("doc-no-outlier-rules").is_empty());
/// ```
pub fn ejected(resource: &str) -> Vec<String> {
    let Some(node) = crate::registry::get(resource) else {
        return Vec::new();
    };
    let now = clock::now_nanos();
    node.with_chain(|chain| match &chain.outlier {
        Some(detector) => detector.ejected(now),
        None => Vec::new(),
    })
}

/// The endpoints of `candidates` that are not ejected now, in their order: where a balancer may
/// send `resource`'s calls. An endpoint whose ejection is over is among them: its next call is
/// its probe.
///
/// ```
/// let hosts = ["inv-a:80", "inv-b:80"];
/// // No outlier rule on the resource: every candidate.
/// assert_eq!(sentinel_runtime::outlier::healthy("doc-no-outlier", &hosts), hosts);
/// ```
pub fn healthy<'a>(resource: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    let Some(node) = crate::registry::get(resource) else {
        return candidates.to_vec();
    };
    let now = clock::now_nanos();
    node.with_chain(|chain| match &chain.outlier {
        Some(detector) => (candidates.iter().copied())
            .filter(|c| !detector.is_ejected(c, now))
            .collect(),
        None => candidates.to_vec(),
    })
}

/// How many endpoints of `resource` the outlier rules track (at most
/// [`MAX_ENDPOINTS`](crate::rules::MAX_ENDPOINTS)): the bound on what a flood of endpoint
/// names can take.
///
/// ```
/// assert_eq!(sentinel_runtime::outlier::tracked_endpoints("doc-no-outlier"), 0);
/// ```
pub fn tracked_endpoints(resource: &str) -> usize {
    crate::registry::get(resource).map_or(0, |node| {
        node.with_chain(|chain| chain.outlier.as_ref().map_or(0, |d| d.endpoints()))
    })
}
