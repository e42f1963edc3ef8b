//! The statistics as Prometheus metrics (feature `prometheus`): a
//! [`prometheus-client`](prometheus_client) collector that reads every resource's running totals
//! when scraped. Nothing is recorded on the call path for it.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `sentinel_pass_total` | `resource` | admitted calls |
//! | `sentinel_block_total` | `resource`, `rule` | rejected calls, by kind of rule (kinds with none are left out) |
//! | `sentinel_shadow_block_total` | `resource`, `rule` | calls shadow rules would have rejected (none was), by kind of rule (kinds with none are left out) |
//! | `sentinel_shadow_wait_total`, `sentinel_shadow_wait_seconds_total` | `resource` | calls shadow throttling rules would have made wait (none waited), and those waits added up (resources with such calls) |
//! | `sentinel_complete_total` | `resource` | finished calls |
//! | `sentinel_error_total` | `resource` | calls finished with an error or a panic |
//! | `sentinel_response_time_seconds_total` | `resource` | response times added up |
//! | `sentinel_concurrency` | `resource` | calls inside now |
//! | `sentinel_concurrency_limit` | `resource` | the current limit of an adaptive concurrency rule (resources with one) |
//! | `sentinel_adaptive_min_rtt_seconds`, `sentinel_adaptive_min_rtt_age_seconds` | `resource` | the minimum response time an adaptive concurrency limit compares against, and how long ago it was measured (resources with one, once measured) |
//! | `sentinel_hotspot_live_evictions_total` | `resource` | values the resource's hotspot rules forgot while still limiting them (their tables were full: raise `capacity`); resources with hotspot rules |
//! | `sentinel_circuit_breaker_state` | `resource`, `state` | 1 for the current state (the most restrictive of the resource's breakers), else 0 |
//! | `sentinel_circuit_breaker_transitions_total` | `resource`, `from`, `to` | breaker transitions |
//! | `sentinel_outlier_ejections_total`, `sentinel_outlier_returns_total` | `resource` | endpoints ejected by outlier rules (again after a failed probe too), and brought back by a probe |
//! | `sentinel_rule_loads_total` | `kind`, `result` | rule loads (`success` or `failure`) |
//! | `sentinel_rules_unmatched` | | resources named by the rules in force that no call has entered since the load ([`rules::unmatched`](crate::rules::unmatched)) |
//! | `sentinel_rule_file_last_reload_success` | `file` | 1 if the rule file's last load put it in force, 0 if refused (feature `rule-files`; at most [`MAX_REPORTED_FILES`](crate::rules::MAX_REPORTED_FILES) files) |
//! | `sentinel_resource_overflow_total` | | calls of resources beyond the cap ([`overflow`](super::overflow)) |
//! | `sentinel_inbound_pass_total`, `sentinel_inbound_block_total`, `sentinel_inbound_concurrency` | | the inbound traffic as system rules see it ([`inbound`](super::inbound)) |
//! | `sentinel_system_cpu_usage`, `sentinel_system_load_per_core` | | what system rules compare against ([`system_load`](super::system_load); 0 while none is loaded) |
//! | `sentinel_cluster_state` | `state` | 1 for the cluster's state (`connected`, `fallback`, `off`), else 0 ([`cluster`](super::cluster)) |
//! | `sentinel_cluster_instances` | | the instances live when the cluster's store was last reached |
//! | `sentinel_cluster_leases_total` | | leases granted by the cluster's store |
//! | `sentinel_cluster_redis_calls_total` | `result` | calls to the cluster's Redis (`ok`, `error`, `timeout`) |
//! | `sentinel_cluster_refusals_total` | `cause` | calls cluster rules refused (`budget_spent`, `lost_window`, `fallback_share`: [`ClusterRefusals`](crate::cluster::ClusterRefusals)) |
//! | `sentinel_cluster_fallbacks_total` | | switches from shared limits to local limiting |
//! | `sentinel_cluster_state_losses_total` | | times the store was found to have lost state |
//! | `sentinel_cluster_keys_evictable` | | 1 if the store's `maxmemory-policy` may evict the keys |
//! | `sentinel_cluster_value_key_splits_total` | | times the hotspot value key differed from the store's |
//! | `sentinel_cluster_rule_disagreements_total` | | leases saying another instance has another threshold |
//! | `sentinel_cluster_charged_back_total` | | calls admitted in fallbacks, charged back on return |
//! | `sentinel_cluster_held_back` | | instances missing within the grace period (share held back) |
//! | `sentinel_cluster_values_over_cap_total` | | new hotspot values past the lease cap, limited locally |
//! | `sentinel_cluster_failures_ridden_out_total` | | store failures that did not persist |
//! | `sentinel_system_cpu_source`, `sentinel_system_effective_cores` | `source` | where the CPU usage is read from (`cgroup_v2`, `cgroup_v1`, `process`, `host`) and the cores it is a share of ([`system`](super::system)) |
//!
//! Rule kinds are `flow`, `concurrency`, `circuit_breaker`, `hotspot`, `system`, `authority`, `outlier`,
//! `custom` and `cluster` (a cluster rule's block: the shared limit); states `closed`, `half_open` and `open`. Labels carry resource names (and the
//! paths of rule files) only: never a parameter value, a host or a process id.
//!
//! The collector is written against `prometheus-client` 0.26 (its `Registry` type is in
//! [`register`]'s signature, so a registry of another major version does not fit). The crate
//! is re-exported as [`client`]: name it through this path and the versions always match.
//!
//! ```
//! use sentinel_runtime::metrics::prometheus::{self, client};
//!
//! let mut registry = client::registry::Registry::default();
//! prometheus::register(&mut registry);
//! # let _ = prometheus::CONTENT_TYPE;
//!
//! let _ = sentinel_runtime::entry("doc-prometheus");
//! let text = prometheus::encode_text();
//! assert!(text.contains(r#"sentinel_pass_total{resource="doc-prometheus"} 1"#));
//! ```

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::breaker::CircuitState;

/// The `prometheus-client` crate this collector is built against (0.26), for naming the
/// [`Registry`] that [`register`] takes without adding a second, mismatched version.
pub use prometheus_client as client;

/// The `Content-Type` of [`encode_text`]'s output (and of any `prometheus-client` registry
/// encoded as text): OpenMetrics 1.0, for a `/metrics` handler's response header.
///
/// ```
/// let header = sentinel_runtime::metrics::prometheus::CONTENT_TYPE;
/// assert!(header.starts_with("application/openmetrics-text"));
/// ```
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Registers the collector of every resource's statistics in `registry`. Register it once per
/// registry: twice would report every metric twice.
pub fn register(registry: &mut Registry) {
    registry.register_collector(Box::new(SentinelCollector));
}

/// The metrics in the OpenMetrics text format (ending in `# EOF`), from a registry holding only
/// this crate's collector.
pub fn encode_text() -> String {
    let mut registry = Registry::default();
    register(&mut registry);
    let mut text = String::new();
    // Writing to a String cannot fail, and the collector itself never fails.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// Reads the statistics at scrape time.
#[derive(Debug)]
struct SentinelCollector;

/// Encodes one metric family: its descriptor, then each sample with its labels.
fn family<L: EncodeLabelSet, M: EncodeMetric>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    samples: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, value) in samples {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

/// A metric family of one sample without labels.
fn single(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    value: impl EncodeMetric,
) -> fmt::Result {
    value.encode(encoder.encode_descriptor(name, help, None, metric_type)?)
}

const STATES: [CircuitState; 3] = [
    CircuitState::Closed,
    CircuitState::HalfOpen,
    CircuitState::Open,
];

impl Collector for SentinelCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let resources = super::all();
        let by_resource = |f: fn(&super::ResourceStats) -> u64| {
            resources
                .iter()
                .map(move |(name, s)| ([("resource", name.as_str())], ConstCounter::new(f(s))))
        };
        let e = &mut encoder;
        family(
            e,
            "sentinel_pass",
            "Calls admitted since start.",
            MetricType::Counter,
            by_resource(|s| s.pass_total),
        )?;
        family(
            e,
            "sentinel_block",
            "Calls rejected since start, by the kind of rule that rejected them.",
            MetricType::Counter,
            resources.iter().flat_map(|(name, s)| {
                s.block_total_by_rule
                    .by_rule()
                    .into_iter()
                    .filter(|&(_, n)| n > 0)
                    .map(move |(rule, n)| {
                        (
                            [("resource", name.as_str()), ("rule", rule)],
                            ConstCounter::new(n),
                        )
                    })
            }),
        )?;
        family(
            e,
            "sentinel_shadow_block",
            "Calls shadow rules would have rejected since start (none was), by the kind of rule.",
            MetricType::Counter,
            resources.iter().flat_map(|(name, s)| {
                s.shadow_block_total_by_rule
                    .by_rule()
                    .into_iter()
                    .filter(|&(_, n)| n > 0)
                    .map(move |(rule, n)| {
                        (
                            [("resource", name.as_str()), ("rule", rule)],
                            ConstCounter::new(n),
                        )
                    })
            }),
        )?;
        family(
            e,
            "sentinel_shadow_wait",
            "Calls shadow throttling rules would have made wait since start (none waited).",
            MetricType::Counter,
            resources
                .iter()
                .filter(|(_, s)| s.shadow_wait_total > 0)
                .map(|(name, s)| {
                    (
                        [("resource", name.as_str())],
                        ConstCounter::new(s.shadow_wait_total),
                    )
                }),
        )?;
        family(
            e,
            "sentinel_shadow_wait_seconds",
            "The waits shadow throttling rules would have imposed, added up, in seconds.",
            MetricType::Counter,
            resources
                .iter()
                .filter(|(_, s)| s.shadow_wait_total > 0)
                .map(|(name, s)| {
                    (
                        [("resource", name.as_str())],
                        ConstCounter::new(s.shadow_wait_time.as_secs_f64()),
                    )
                }),
        )?;
        family(
            e,
            "sentinel_complete",
            "Calls finished since start.",
            MetricType::Counter,
            by_resource(|s| s.complete_total),
        )?;
        family(
            e,
            "sentinel_error",
            "Calls finished with an error or a panic since start.",
            MetricType::Counter,
            by_resource(|s| s.error_total),
        )?;
        family(
            e,
            "sentinel_response_time_seconds",
            "Response times of the finished calls added up, in seconds.",
            MetricType::Counter,
            resources.iter().map(|(name, s)| {
                (
                    [("resource", name.as_str())],
                    ConstCounter::new(s.rt_total.as_secs_f64()),
                )
            }),
        )?;
        family(
            e,
            "sentinel_concurrency",
            "Calls inside now.",
            MetricType::Gauge,
            resources.iter().map(|(name, s)| {
                (
                    [("resource", name.as_str())],
                    ConstGauge::new(s.concurrency),
                )
            }),
        )?;
        family(
            e,
            "sentinel_concurrency_limit",
            "The current limit of the resource's adaptive concurrency rule.",
            MetricType::Gauge,
            resources.iter().filter_map(|(name, s)| {
                let limit = i64::try_from(s.concurrency_limit?).unwrap_or(i64::MAX);
                Some(([("resource", name.as_str())], ConstGauge::new(limit)))
            }),
        )?;
        family(
            e,
            "sentinel_adaptive_min_rtt_seconds",
            "The minimum response time the resource's adaptive concurrency limit compares against.",
            MetricType::Gauge,
            resources.iter().filter_map(|(name, s)| {
                let rtt = s.adaptive_min_rtt?.as_secs_f64();
                Some(([("resource", name.as_str())], ConstGauge::new(rtt)))
            }),
        )?;
        family(
            e,
            "sentinel_adaptive_min_rtt_age_seconds",
            "How long ago that minimum response time was measured.",
            MetricType::Gauge,
            resources.iter().filter_map(|(name, s)| {
                let age = s.adaptive_min_rtt_age?.as_secs_f64();
                Some(([("resource", name.as_str())], ConstGauge::new(age)))
            }),
        )?;
        family(
            e,
            "sentinel_hotspot_live_evictions",
            "Values the resource's hotspot rules forgot while still limiting them (tables full of live values).",
            MetricType::Counter,
            resources.iter().filter_map(|(name, s)| {
                let evictions = s.hotspot_live_evictions?;
                Some(([("resource", name.as_str())], ConstCounter::new(evictions)))
            }),
        )?;
        family(
            e,
            "sentinel_circuit_breaker_state",
            "1 for the state the resource's circuit breakers are in (the most restrictive), else 0.",
            MetricType::Gauge,
            resources.iter().flat_map(|(name, s)| {
                s.circuit.into_iter().flat_map(move |current| {
                    STATES.into_iter().map(move |state| {
                        (
                            [("resource", name.as_str()), ("state", state.label())],
                            ConstGauge::new(i64::from(state == current)),
                        )
                    })
                })
            }),
        )?;
        family(
            e,
            "sentinel_circuit_breaker_transitions",
            "Circuit-breaker transitions since start.",
            MetricType::Counter,
            super::circuit_breaker_transitions()
                .into_iter()
                .map(|(resource, from, to, n)| {
                    (
                        [
                            ("resource", resource),
                            ("from", from.label()),
                            ("to", to.label()),
                        ],
                        ConstCounter::new(n),
                    )
                }),
        )?;
        let outliers = super::outlier_ejections();
        family(
            e,
            "sentinel_outlier_ejections",
            "Endpoints ejected by outlier rules since start.",
            MetricType::Counter,
            (outliers.iter()).map(|&(r, n, _)| ([("resource", r)], ConstCounter::new(n))),
        )?;
        family(
            e,
            "sentinel_outlier_returns",
            "Ejected endpoints brought back by a probe since start.",
            MetricType::Counter,
            (outliers.iter()).map(|&(r, _, n)| ([("resource", r)], ConstCounter::new(n))),
        )?;
        family(
            e,
            "sentinel_rule_loads",
            "Rule loads since start, by kind of rule and result.",
            MetricType::Counter,
            super::rule_loads().into_iter().map(|(kind, ok, n)| {
                (
                    [
                        ("kind", kind),
                        ("result", if ok { "success" } else { "failure" }),
                    ],
                    ConstCounter::new(n),
                )
            }),
        )?;
        #[cfg(feature = "rule-files")]
        family(
            e,
            "sentinel_rule_file_last_reload_success",
            "1 if the rule file's last load put it in force, 0 if it was refused (the previous rules stay).",
            MetricType::Gauge,
            super::rule_files().into_iter().map(|(file, ok)| {
                (
                    [("file", file.display().to_string())],
                    ConstGauge::new(i64::from(ok)),
                )
            }),
        )?;
        single(
            e,
            "sentinel_resource_overflow",
            "Calls of resources beyond the cap on resources (passed unchecked) since start.",
            MetricType::Counter,
            ConstCounter::new(super::overflow().pass_total),
        )?;
        let inbound = super::inbound();
        single(
            e,
            "sentinel_inbound_pass",
            "Inbound calls admitted since start (every resource together).",
            MetricType::Counter,
            ConstCounter::new(inbound.pass_total),
        )?;
        single(
            e,
            "sentinel_inbound_block",
            "Inbound calls rejected since start (every resource together).",
            MetricType::Counter,
            ConstCounter::new(inbound.block_total),
        )?;
        single(
            e,
            "sentinel_inbound_concurrency",
            "Inbound calls inside now.",
            MetricType::Gauge,
            ConstGauge::new(inbound.concurrency),
        )?;
        let (cpu, load) = super::system_load();
        single(
            e,
            "sentinel_system_cpu_usage",
            "The process's CPU usage over its effective cores, 0..1, smoothed (0 while no system rule is loaded).",
            MetricType::Gauge,
            ConstGauge::new(cpu),
        )?;
        single(
            e,
            "sentinel_system_load_per_core",
            "The 1-minute load average per effective core (0 while no system rule is loaded).",
            MetricType::Gauge,
            ConstGauge::new(load),
        )?;
        single(
            e,
            "sentinel_rules_unmatched",
            "Resources named by the rules in force that no call has entered since those rules were loaded (rules::unmatched).",
            MetricType::Gauge,
            ConstGauge::new(crate::rules::unmatched().len() as i64),
        )?;
        let system = super::system();
        family(
            e,
            "sentinel_system_cpu_source",
            "Where the CPU usage is read from (1 for the source in use: cgroup_v2, cgroup_v1, process or host); the effective cores as a separate gauge.",
            MetricType::Gauge,
            system
                .cpu_source
                .map(|source| ([("source", source.label())], ConstGauge::new(1i64))),
        )?;
        single(
            e,
            "sentinel_system_effective_cores",
            "The cores the CPU usage is a share of (0 while no system rule has been loaded).",
            MetricType::Gauge,
            ConstGauge::new(system.effective_cores),
        )?;
        encode_cluster(e)
    }
}

/// The cluster limits' families ([`cluster`](super::cluster)).
fn encode_cluster(e: &mut DescriptorEncoder<'_>) -> fmt::Result {
    use crate::cluster::ClusterState;
    let m = super::cluster();
    family(
        e,
        "sentinel_cluster_state",
        "1 for the cluster's state (connected, fallback, or off: no cluster started), else 0.",
        MetricType::Gauge,
        ["connected", "fallback", "off"].map(|state| {
            let now = m.state.map_or("off", ClusterState::label);
            ([("state", state)], ConstGauge::new(i64::from(now == state)))
        }),
    )?;
    single(
        e,
        "sentinel_cluster_instances",
        "The instances live when the cluster's store was last reached (1 without a cluster).",
        MetricType::Gauge,
        ConstGauge::new(m.instances as i64),
    )?;
    single(
        e,
        "sentinel_cluster_leases",
        "Leases of tokens granted by the cluster's store.",
        MetricType::Counter,
        ConstCounter::new(m.leases_taken),
    )?;
    let ok = m.redis_calls - m.redis_errors - m.redis_timeouts;
    family(
        e,
        "sentinel_cluster_redis_calls",
        "Calls to the cluster's Redis, by result (ok, error, timeout).",
        MetricType::Counter,
        [
            ("ok", ok),
            ("error", m.redis_errors),
            ("timeout", m.redis_timeouts),
        ]
        .map(|(result, n)| ([("result", result)], ConstCounter::new(n))),
    )?;
    family(
        e,
        "sentinel_cluster_refusals",
        "Calls the cluster rules' shared limits refused, by cause (budget_spent, lost_window, \
         fallback_share).",
        MetricType::Counter,
        m.refusals
            .by_cause()
            .map(|(cause, n)| ([("cause", cause)], ConstCounter::new(n))),
    )?;
    single(
        e,
        "sentinel_cluster_fallbacks",
        "Switches of the cluster from shared limits to local limiting.",
        MetricType::Counter,
        ConstCounter::new(m.fallbacks),
    )?;
    for (name, help, n) in [
        (
            "sentinel_cluster_state_losses",
            "Times the cluster's store was found to have lost state (flushed, evicted, restarted).",
            m.state_losses,
        ),
        (
            "sentinel_cluster_value_key_splits",
            "Times this instance's hotspot value key differed from the store's.",
            m.value_key_splits,
        ),
        (
            "sentinel_cluster_rule_disagreements",
            "Lease answers saying another instance runs the rule with another threshold.",
            m.rule_disagreements,
        ),
        (
            "sentinel_cluster_charged_back",
            "Calls admitted locally during fallbacks, charged to the shared buckets on return.",
            m.charged_back,
        ),
        (
            "sentinel_cluster_values_over_cap",
            "New hotspot values past the cap of values leased per second, limited locally.",
            m.values_over_cap,
        ),
        (
            "sentinel_cluster_failures_ridden_out",
            "Store failures that did not persist, ridden out on the leases in hand.",
            m.failures_ridden_out,
        ),
    ] {
        single(e, name, help, MetricType::Counter, ConstCounter::new(n))?;
    }
    single(
        e,
        "sentinel_cluster_keys_evictable",
        "1 if the store's maxmemory-policy may evict the cluster's keys, else 0.",
        MetricType::Gauge,
        ConstGauge::new(i64::from(m.keys_evictable)),
    )?;
    single(
        e,
        "sentinel_cluster_held_back",
        "Instances missing from the heartbeats within the grace period (their share held back).",
        MetricType::Gauge,
        ConstGauge::new(m.held_back as i64),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use crate::clock::MockClock;
    use crate::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule};
    use crate::{entry, EntryBuilder};

    /// One parsed sample: its name, labels and value.
    type Sample = (String, BTreeMap<String, String>, f64);

    /// A strict parser of the OpenMetrics text format as this collector writes it: `# HELP` and
    /// `# TYPE` lines introduce each family (TYPE after HELP, one family once), samples follow
    /// with a name that is the family's (plus `_total` for counters), labels are
    /// `name="escaped value"` pairs, values are numbers, and the text ends with `# EOF`.
    fn parse(text: &str) -> Result<Vec<Sample>, String> {
        let mut lines = text.lines().peekable();
        let mut samples = Vec::new();
        let mut families: Vec<String> = Vec::new();
        let mut family: Option<(String, String)> = None;
        let is_name = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !s.starts_with(|c: char| c.is_ascii_digit())
        };
        let mut eof = false;
        while let Some(line) = lines.next() {
            if eof {
                return Err(format!("text after # EOF: {line:?}"));
            }
            if line == "# EOF" {
                eof = true;
                continue;
            }
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, _help) = rest.split_once(' ').ok_or(format!("HELP: {line:?}"))?;
                if !is_name(name) || families.iter().any(|f| f == name) {
                    return Err(format!("bad or repeated family {name:?}"));
                }
                let ty = lines.next().ok_or("HELP without TYPE")?;
                let ty = ty
                    .strip_prefix(&format!("# TYPE {name} "))
                    .ok_or(format!("TYPE must follow HELP of {name}: {ty:?}"))?;
                if !["counter", "gauge"].contains(&ty) {
                    return Err(format!("type {ty:?}"));
                }
                families.push(name.to_owned());
                family = Some((name.to_owned(), ty.to_owned()));
                continue;
            }
            if line.starts_with('#') {
                return Err(format!("unexpected comment {line:?}"));
            }
            let (fam, ty) = family
                .as_ref()
                .ok_or(format!("sample before HELP: {line:?}"))?;
            let (series, value) = line.rsplit_once(' ').ok_or(format!("no value: {line:?}"))?;
            let value: f64 = value.parse().map_err(|_| format!("value of {line:?}"))?;
            let (name, labels) = match series.split_once('{') {
                None => (series, BTreeMap::new()),
                Some((name, rest)) => {
                    let mut labels = BTreeMap::new();
                    let mut rest = rest.strip_suffix('}').ok_or(format!("labels: {line:?}"))?;
                    while !rest.is_empty() {
                        let (key, after) = rest.split_once("=\"").ok_or(format!("{line:?}"))?;
                        if !is_name(key) || labels.contains_key(key) {
                            return Err(format!("label name {key:?} in {line:?}"));
                        }
                        let mut value = String::new();
                        let mut chars = after.char_indices();
                        let end = loop {
                            match chars.next().ok_or(format!("unterminated: {line:?}"))? {
                                (i, '"') => break i,
                                (_, '\\') => match chars.next() {
                                    Some((_, 'n')) => value.push('\n'),
                                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                                    _ => return Err(format!("bad escape in {line:?}")),
                                },
                                (_, c) => value.push(c),
                            }
                        };
                        labels.insert(key.to_owned(), value);
                        rest = &after[end + 1..];
                        rest = match rest.strip_prefix(',') {
                            Some(r) if !r.is_empty() => r,
                            Some(_) => return Err(format!("trailing comma: {line:?}")),
                            None if rest.is_empty() => rest,
                            None => return Err(format!("junk after label: {line:?}")),
                        };
                    }
                    (name, labels)
                }
            };
            let expected = if ty == "counter" {
                format!("{fam}_total")
            } else {
                fam.clone()
            };
            if name != expected {
                return Err(format!("sample {name:?} in family {fam:?} ({ty})"));
            }
            samples.push((name.to_owned(), labels, value));
        }
        if !eof {
            return Err("no # EOF".into());
        }
        Ok(samples)
    }

    fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        samples
            .iter()
            .find(|(n, l, _)| n == name && *l == labels)
            .map(|s| s.2)
    }

    #[test]
    fn the_text_parses_as_open_metrics_with_every_family() {
        const R: &str = "prom-test \"quoted\\ name\"";
        const B: &str = "prom-test-breaker";
        const H: &str = "prom-test-hotspot";
        let clock = MockClock::install();
        rules::load_flow_rules(vec![FlowRule::qps(R, 2.0)]).unwrap();
        assert!(rules::load_flow_rules(vec![FlowRule::qps(R, -2.0)]).is_err());
        let breaker = CircuitBreakerRule::error_count(B, 1)
            .min_requests(1)
            .recovery(Duration::from_secs(1));
        rules::load_circuit_breaker_rules(vec![breaker]).unwrap();
        let first = entry(R).unwrap();
        clock.advance(Duration::from_millis(250));
        first.set_error();
        drop(first);
        let _ = entry(R).unwrap();
        assert!(entry(R).is_err() && entry(R).is_err());
        entry(B).unwrap().set_error(); // opens the breaker
        assert!(entry(B).is_err());
        // A hotspot table of the smallest size (128 slots) flooded with 1 000 values, each
        // limited for a second after its call while the clock stands still: it must forget
        // live values to take the later ones (until the debts it forgot hold the rest back).
        rules::load_hotspot_rules(vec![HotspotRule::qps(H, 0, 1.0).capacity(1)]).unwrap();
        let passed = (0..1_000u32)
            .filter(|value| EntryBuilder::new(H).param(value).enter().is_ok())
            .count() as u64;
        let evicted = crate::metrics::hotspot_live_evictions(H).unwrap();
        assert!(
            evicted >= 1 && evicted + 128 >= passed,
            "{evicted}, {passed}"
        );
        assert_eq!(
            crate::metrics::snapshot(H).unwrap().hotspot_live_evictions,
            Some(evicted)
        );
        assert_eq!(
            crate::metrics::snapshot(R).unwrap().hotspot_live_evictions,
            None
        );

        let text = super::encode_text();
        let samples = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let r = [("resource", R)];
        assert_eq!(
            value(&samples, "sentinel_pass_total", &r),
            Some(2.0),
            "{text}"
        );
        assert_eq!(value(&samples, "sentinel_complete_total", &r), Some(2.0));
        assert_eq!(value(&samples, "sentinel_error_total", &r), Some(1.0));
        assert_eq!(
            value(
                &samples,
                "sentinel_block_total",
                &[("resource", R), ("rule", "flow")]
            ),
            Some(2.0)
        );
        assert_eq!(
            value(&samples, "sentinel_response_time_seconds_total", &r),
            Some(0.25)
        );
        assert_eq!(value(&samples, "sentinel_concurrency", &r), Some(0.0));
        let evictions = |resource| {
            value(
                &samples,
                "sentinel_hotspot_live_evictions_total",
                &[("resource", resource)],
            )
        };
        assert_eq!(evictions(H), Some(evicted as f64));
        assert_eq!(
            evictions(R),
            None,
            "a resource without hotspot rules has no sample"
        );
        let state = |s| {
            value(
                &samples,
                "sentinel_circuit_breaker_state",
                &[("resource", B), ("state", s)],
            )
        };
        assert_eq!(
            (state("open"), state("closed"), state("half_open")),
            (Some(1.0), Some(0.0), Some(0.0))
        );
        assert_eq!(
            value(
                &samples,
                "sentinel_block_total",
                &[("resource", B), ("rule", "circuit_breaker")]
            ),
            Some(1.0)
        );
        let transitions = [("resource", B), ("from", "closed"), ("to", "open")];
        assert_eq!(
            value(
                &samples,
                "sentinel_circuit_breaker_transitions_total",
                &transitions
            ),
            Some(1.0)
        );
        let loads = |kind, result| {
            value(
                &samples,
                "sentinel_rule_loads_total",
                &[("kind", kind), ("result", result)],
            )
        };
        assert!(loads("flow", "success").unwrap() >= 1.0);
        assert!(loads("flow", "failure").unwrap() >= 1.0);
        assert!(loads("circuit_breaker", "success").unwrap() >= 1.0);
        assert!(value(&samples, "sentinel_resource_overflow_total", &[]).is_some());
        // No sample carries a label other than these.
        for (name, labels, _) in &samples {
            for key in labels.keys() {
                assert!(
                    [
                        "resource", "rule", "state", "from", "to", "kind", "result", "source",
                        "cause"
                    ]
                    .contains(&key.as_str()),
                    "{name} has label {key}"
                );
            }
        }
        rules::load_flow_rules(vec![]).unwrap();
        rules::load_circuit_breaker_rules(vec![]).unwrap();
        rules::load_hotspot_rules(vec![]).unwrap();
        drop(clock);
    }

    #[test]
    fn the_parser_is_strict() {
        for bad in [
            "sentinel_pass_total 1\n# EOF\n",
            "# HELP a x\n# TYPE a counter\na 1\n# EOF\n",
            "# HELP a x\n# TYPE a counter\na_total{r=\"x} 1\n# EOF\n",
            "# HELP a x\n# TYPE a counter\na_total 1\n",
            "# HELP a x\n# TYPE a gauge\na{r=\"x\",} 1\n# EOF\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
