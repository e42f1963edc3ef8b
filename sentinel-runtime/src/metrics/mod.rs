//! Reading the statistics: [`snapshot`] of one resource (its window and its running totals since
//! start), [`all`] resources, and the [`last_minute`] per second. With the `prometheus` feature,
//! `metrics::prometheus` (feature `prometheus`) exposes them to a `prometheus-client` registry, read at scrape time.

use crate::breaker::CircuitState;
use crate::clock;
use crate::registry;
use crate::stat::{avg_rt_ms, MetricEvent, SecondTotals, NO_MIN};
pub use crate::stat::{BlockTotals, ResourceStats};
pub use crate::system_load::CpuSourceKind;

#[cfg(feature = "prometheus")]
pub mod prometheus;

mod cluster;
pub use cluster::{cluster, ClusterMetrics};

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
pub fn set_block_event_level(level: Option<tracing::Level>) {
    crate::events::set_block_level(level);
}

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

/// The statistics of the process's **inbound** traffic, every resource together: the entries
/// marked [`inbound`](crate::EntryBuilder::inbound) (the tower layer's requests, the attribute's
/// `inbound = true`), as the system rules ([`SystemRule`](crate::rules::SystemRule)) read them.
///
/// ```
/// use sentinel_runtime::{metrics, EntryBuilder};
/// let before = metrics::inbound().pass_total;
/// drop(EntryBuilder::new("doc-inbound-stats").inbound().enter());
/// assert!(metrics::inbound().pass_total > before);
/// ```
pub fn inbound() -> ResourceStats {
    let stats = crate::stat::inbound();
    ResourceStats::from_totals(stats.window(clock::now_nanos()), None).with_running(stats.totals())
}

/// What the system rules' CPU and load limits compare against: the process's CPU usage (0..=1
/// of its effective cores, smoothed) and the 1-minute load average per core. Both are 0 while
/// no system rule is loaded (the sampler runs only then) and where they cannot be read.
pub fn system_load() -> (f64, f64) {
    (
        crate::system_load::cpu_usage(),
        crate::system_load::load_per_core(),
    )
}

/// What the system rules' CPU and load limits read, and where from
/// ([`system`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SystemStats {
    /// The process's CPU usage, 0..=1 of its effective cores, smoothed (0 until sampled).
    pub cpu_usage: f64,
    /// The 1-minute load average per effective core (0 until sampled, or where unknown).
    pub load_per_core: f64,
    /// Where the CPU usage is read from: the process's own cgroup, or the process's own CPU
    /// time when it has no cgroup of its own (the root cgroup's usage is the whole host's);
    /// `None` until the sampler has run (it runs while a system rule is loaded).
    pub cpu_source: Option<CpuSourceKind>,
    /// The cores the usage is a share of (a cgroup's quota, its cpuset, or the process's
    /// available parallelism); 0 while `cpu_source` is `None`.
    pub effective_cores: f64,
}

/// What the system rules compare against, and which source the CPU usage comes from.
///
/// ```
/// let system = sentinel_runtime::metrics::system();
/// if let Some(source) = system.cpu_source {
///     println!("cpu {:.0}% of {} cores, from {}", system.cpu_usage * 100.0, system.effective_cores, source.label());
/// }
/// ```
pub fn system() -> SystemStats {
    let (cpu_usage, load_per_core) = system_load();
    let (cpu_source, effective_cores) = match crate::system_load::source() {
        Some((kind, cores)) => (Some(kind), cores),
        None => (None, 0.0),
    };
    SystemStats {
        cpu_usage,
        load_per_core,
        cpu_source,
        effective_cores,
    }
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

/// Rule loads since start: `(kind, loaded, count)`, sorted, where `kind` is `flow`,
/// `circuit_breaker`, `hotspot`, `authority`, `system` (the `rules::load_*_rules` functions) or `rule_set`
/// (a whole set: [`rules::load`](crate::rules::load), a rule file), and `loaded` is whether the
/// rules were put in force (else they were refused).
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
pub fn rule_files() -> Vec<(std::path::PathBuf, bool)> {
    crate::rules::file_results()
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
    /// Calls the resource's shadow rules would have refused (none was: they are among the
    /// admitted calls), all kinds of rule together.
    pub shadow_block: u64,
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
            shadow_block: 0,
        }
    }
}

/// The last 60 seconds of `resource`, one entry per second that saw traffic, oldest first; the
/// current (partial) second is included. `None` if no node of that name exists.
pub fn last_minute(resource: &str) -> Option<Vec<SecondStats>> {
    let node = registry::get(resource)?;
    let seconds = node.stats().minute_totals(clock::now_nanos());
    let shadow = node.stats().shadow();
    let second = |t: &SecondTotals| {
        let mut s = SecondStats::from_totals(t);
        s.shadow_block = shadow.blocks_in_second(s.second);
        s
    };
    Some(seconds.iter().map(second).collect())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::clock::MockClock;
    use crate::rules::{self, FlowRule};
    use crate::{entry, BlockKind};

    /// The totals count every call made through the public entry path, over minutes of traffic
    /// with idle gaps longer than every window, blocks of two rule kinds, errors and exact
    /// response times (the mock clock moves only when told).
    #[test]
    fn totals_equal_the_calls_made_over_minutes_with_idle_gaps() {
        const R: &str = "metrics-test-totals";
        let clock = MockClock::install();
        rules::load_flow_rules(vec![FlowRule::qps(R, 5.0), FlowRule::concurrency(R, 2)]).unwrap();
        let (mut pass, mut flow, mut concurrency, mut error) = (0u64, 0u64, 0u64, 0u64);
        let mut rt = Duration::ZERO;
        for second in 0..200u64 {
            // Idle gaps: a minute and a half now and then, else 1 s.
            clock.advance(Duration::from_millis(if second % 37 == 0 {
                90_000
            } else {
                1_000
            }));
            for i in 0..(second % 9) {
                match entry(R) {
                    Ok(e) => {
                        pass += 1;
                        // A third call while two are inside: blocked by the concurrency limit.
                        if i == 0 {
                            let inner = entry(R).unwrap();
                            pass += 1;
                            let err = entry(R).unwrap_err();
                            assert_eq!(err.kind(), BlockKind::Concurrency);
                            concurrency += 1;
                            drop(inner);
                        }
                        let held = Duration::from_millis(1 + second % 13);
                        clock.advance(held);
                        rt += held;
                        if i % 3 == 1 {
                            e.set_error();
                            error += 1;
                        }
                    }
                    Err(err) => {
                        assert_eq!(err.kind(), BlockKind::Flow);
                        flow += 1;
                    }
                }
            }
            let at = clock.elapsed();
            let Some(s) = super::snapshot(R) else {
                assert_eq!(pass + flow, 0, "no node at {at:?}");
                continue;
            };
            assert_eq!(s.pass_total, pass, "pass at {at:?}");
            assert_eq!(s.complete_total, pass, "complete at {at:?}");
            assert_eq!(s.error_total, error, "error at {at:?}");
            assert_eq!(s.block_total, flow + concurrency, "block at {at:?}");
            assert_eq!(s.block_total_by_rule.flow, flow, "flow blocks at {at:?}");
            assert_eq!(s.block_total_by_rule.concurrency, concurrency, "at {at:?}");
            assert_eq!(s.block_total_by_rule.sum(), s.block_total, "at {at:?}");
            assert_eq!(s.rt_total, rt, "rt at {at:?}");
        }
        assert!(
            flow > 100 && concurrency > 100 && error > 100,
            "{flow} {concurrency} {error}"
        );
        rules::load_flow_rules(vec![]).unwrap();
    }
}
