//! Reading the statistics: [`snapshot`] of one resource, [`all`] resources, and the
//! [`last_minute`] per second.

use crate::clock;
use crate::registry;
pub use crate::stat::ResourceStats;
use crate::stat::{avg_rt_ms, MetricEvent, SecondTotals, NO_MIN};

/// The statistics of `resource`, or `None` if no node of that name exists. Allocates nothing.
///
/// ```
/// let _ = sentinel_runtime::entry("doc-snapshot");
/// let stats = sentinel_runtime::metrics::snapshot("doc-snapshot").unwrap();
/// assert!(stats.pass_qps >= 1.0);
/// ```
pub fn snapshot(resource: &str) -> Option<ResourceStats> {
    registry::get(resource).map(|node| node.snapshot())
}

/// Every resource with its statistics, sorted by name.
pub fn all() -> Vec<(String, ResourceStats)> {
    let mut out: Vec<(String, ResourceStats)> = registry::all()
        .into_iter()
        .map(|node| (node.name().to_owned(), node.snapshot()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The statistics of the entries beyond the cap on resources
/// ([`registry::set_max_resources`]): new names that got no
/// node of their own, counted together. Their entries pass unchecked.
///
/// ```
/// let overflow = sentinel_runtime::metrics::overflow();
/// assert_eq!(overflow.block_qps, 0.0); // never blocked: no rules apply to them
/// ```
pub fn overflow() -> ResourceStats {
    registry::overflow().snapshot()
}

/// How many values the hotspot rules of `resource` forgot while they were still being limited
/// (their tables were full of live values); `None` if no node of that name exists. See
/// [`HotspotRule`](crate::rules::HotspotRule).
pub fn hotspot_live_evictions(resource: &str) -> Option<u64> {
    registry::get(resource).map(|node| node.hotspot_live_evictions())
}

/// The totals of one second, from the minute-level window.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SecondStats {
    /// The second's start on the runtime clock, in whole seconds.
    pub second: u64,
    /// Admitted calls.
    pub pass: u64,
    /// Rejected calls.
    pub block: u64,
    /// Finished calls.
    pub complete: u64,
    /// Calls that finished with an error or a panic.
    pub error: u64,
    /// Average response time of the finished calls, in milliseconds.
    pub avg_rt_ms: f64,
    /// The shortest response time, in milliseconds (0 if none finished).
    pub min_rt_ms: f64,
}

impl SecondStats {
    fn from_totals(t: &SecondTotals) -> SecondStats {
        let c = |e: MetricEvent| t.counts[e as usize];
        SecondStats {
            second: t.start / 1_000_000_000,
            pass: c(MetricEvent::Pass),
            block: c(MetricEvent::Block),
            complete: c(MetricEvent::Complete),
            error: c(MetricEvent::Error),
            avg_rt_ms: avg_rt_ms(c(MetricEvent::RtSum), c(MetricEvent::Complete)),
            min_rt_ms: match c(MetricEvent::MinRt) {
                NO_MIN => 0.0,
                us => us as f64 / 1_000.0,
            },
        }
    }
}

/// The last 60 seconds of `resource`, one entry per second that saw traffic, oldest first; the
/// current (partial) second is included. `None` if no node of that name exists.
pub fn last_minute(resource: &str) -> Option<Vec<SecondStats>> {
    let node = registry::get(resource)?;
    let seconds = node.stats().minute_totals(clock::now_nanos());
    Some(seconds.iter().map(SecondStats::from_totals).collect())
}
