//! The read-only JSON answers: resources (busiest first), one resource's history, the system
//! protection figures.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use serde_json::{json, Value};

use super::events::{state_name, Bus};
use super::history::{History, TRACKED};
use super::load::Reading;
use super::rates::{Rate, READINGS};
use crate::metrics::{self, ResourceStats};
use crate::node::ResourceNode;
use crate::registry;
use crate::rules::source::notices;
use crate::rules::{self, FlowMetric, FlowRule, HotspotMetric, HotspotRule};
use crate::stat::BlockTotals;

/// Every resource with its statistics, busiest first (passes and blocks in the last second,
/// then calls inside, then totals), ties by name.
pub(crate) fn ranked() -> Vec<(&'static ResourceNode, ResourceStats)> {
    rank(registry::all())
}

/// `nodes` with their statistics, busiest first (as [`ranked`]).
fn rank(nodes: Vec<&'static ResourceNode>) -> Vec<(&'static ResourceNode, ResourceStats)> {
    let mut all: Vec<(&'static ResourceNode, ResourceStats)> = nodes
        .into_iter()
        .map(|node| (node, node.snapshot()))
        .collect();
    all.sort_by(|(an, a), (bn, b)| {
        let key = |s: &ResourceStats| {
            (
                s.pass_qps + s.block_qps,
                s.concurrency,
                s.pass_total + s.block_total,
            )
        };
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.cmp(&ka.1))
            .then(kb.2.cmp(&ka.2))
            .then(an.name().cmp(bn.name()))
    });
    all
}

/// The longest search text `GET /api/resources?search=` takes.
pub(crate) const MAX_SEARCH: usize = 256;

/// `GET /api/resources`: the [`TRACKED`] busiest resources (of those whose name contains
/// `search`, ignoring case, when given: the search runs over every resource, not only the
/// busiest), and how many there are in all and how many matched.
pub(crate) fn resources(search: Option<&str>) -> (Value, usize, usize) {
    let nodes = registry::all();
    let total = nodes.len();
    // Only the resources that match are read and ranked.
    let matched = match search {
        None => rank(nodes),
        Some(q) => {
            let q = q.to_lowercase();
            let mut lowered = LOWERED.lock().unwrap_or_else(PoisonError::into_inner);
            let found = nodes
                .into_iter()
                .filter(|node| lowered.of(node).contains(&q))
                .collect();
            drop(lowered);
            rank(found)
        }
    };
    let limits = Limits::in_force();
    let now = crate::clock::now_nanos();
    let listed = matched.iter().take(TRACKED);
    let rows: Vec<Value> = listed
        .clone()
        .map(|(node, s)| {
            let mut row = resource_json(node, s, &limits);
            let rate = READINGS.rate(node.name(), now, s);
            add_rates(&mut row, rate.as_ref());
            row
        })
        .collect();
    READINGS.record(now, listed.map(|(node, s)| (node.name(), s)));
    (Value::Array(rows), total, matched.len())
}

/// The row's block rates, over one interval so that they add up (`null` until the resource
/// has a reading a second old): `blocked_per_s`, the sum of `blocked_by` (kind to blocks per
/// second, the kinds that blocked), `shadow_per_s` and `rates_over_s`, the interval.
fn add_rates(row: &mut Value, rate: Option<&Rate>) {
    let (blocked, by_rule, shadow, over) = match rate {
        Some(r) => {
            let by_rule: serde_json::Map<String, Value> = r
                .by_rule
                .iter()
                .map(|&(kind, v)| (kind.to_owned(), json!(v)))
                .collect();
            (
                json!(r.blocked),
                Value::Object(by_rule),
                json!(r.shadow),
                json!(r.over_s),
            )
        }
        None => (Value::Null, Value::Null, Value::Null, Value::Null),
    };
    row["blocked_per_s"] = blocked;
    row["blocked_by"] = by_rule;
    row["shadow_per_s"] = shadow;
    row["rates_over_s"] = over;
}

/// Every resource's name in lower case, made once per resource (nodes live as long as the
/// process, and are bounded by the registry's cap): a search compares against these instead
/// of lowering every name on every request.
#[derive(Default)]
struct Lowered {
    /// By the node's address.
    names: HashMap<usize, Box<str>>,
}

impl Lowered {
    fn of(&mut self, node: &'static ResourceNode) -> &str {
        let key = std::ptr::from_ref(node) as usize;
        self.names
            .entry(key)
            .or_insert_with(|| node.name().to_lowercase().into_boxed_str())
    }
}

static LOWERED: LazyLock<Mutex<Lowered>> = LazyLock::new(Mutex::default);

/// The limits of the loaded flow rules, by resource (a resource the loaded rules name has
/// those only; others have their definition's), and every loaded flow and hotspot rule by
/// resource, for the list of limits.
struct Limits {
    concurrency: HashMap<String, Option<u64>>,
    qps: HashMap<String, Option<f64>>,
    flow: HashMap<String, Vec<FlowRule>>,
    hotspot: HashMap<String, Vec<HotspotRule>>,
}

impl Limits {
    fn in_force() -> Limits {
        let rules = rules::flow_rules();
        let mut flow: HashMap<String, Vec<FlowRule>> = HashMap::new();
        for rule in &rules {
            flow.entry(rule.resource.clone())
                .or_default()
                .push(rule.clone());
        }
        let mut hotspot: HashMap<String, Vec<HotspotRule>> = HashMap::new();
        for rule in rules::hotspot_rules() {
            hotspot.entry(rule.resource.clone()).or_default().push(rule);
        }
        Limits {
            concurrency: smallest(&rules, concurrency_threshold),
            qps: smallest(&rules, qps_per_second),
            flow,
            hotspot,
        }
    }

    /// `node`'s limits, enforced and shadow: each QPS limit per second, each concurrency
    /// limit in calls inside; a hotspot rule's per value (of the parameter it names).
    fn list(&self, node: &ResourceNode) -> Vec<Value> {
        let defaults;
        let flow = match self.flow.get(node.name()) {
            Some(rules) => rules.as_slice(),
            None => {
                defaults = node.default_flow_rules();
                defaults.as_slice()
            }
        };
        let mut out: Vec<Value> = flow
            .iter()
            .filter(|r| r.relate.is_none())
            .filter_map(|r| {
                let (metric, limit) = match r.metric {
                    FlowMetric::Qps => ("qps", per_second(r.threshold, r.window)?),
                    FlowMetric::Concurrency => ("concurrency", r.threshold.floor()),
                    // Its limit moves: the row's `concurrency_limit` is the one now.
                    FlowMetric::AdaptiveConcurrency => return None,
                };
                Some(json!({
                    "kind": "flow", "metric": metric, "limit": limit,
                    "per_value": false, "param": null, "shadow": r.shadow,
                }))
            })
            .collect();
        let names = node.param_names().unwrap_or_default();
        for r in self.hotspot.get(node.name()).into_iter().flatten() {
            let (metric, limit) = match r.metric {
                HotspotMetric::Qps => match per_second(r.threshold, r.window) {
                    Some(limit) => ("qps", limit),
                    None => continue,
                },
                HotspotMetric::Concurrency => ("concurrency", r.threshold.floor()),
            };
            let param = r
                .param
                .clone()
                .or_else(|| names.get(r.param_index).cloned().flatten());
            out.push(json!({
                "kind": "hotspot", "metric": metric, "limit": limit,
                "per_value": true, "param": param,
                "param_index": r.param.is_none().then_some(r.param_index),
                "shadow": r.shadow,
            }));
        }
        out
    }
}

/// `threshold` per `window`, per second (`None` for a window of nothing).
fn per_second(threshold: f64, window: std::time::Duration) -> Option<f64> {
    let window = window.as_secs_f64();
    (window > 0.0).then(|| threshold / window)
}

/// The smallest of `limit` over the rules of each resource (`None`: the rules name the
/// resource without such a limit).
fn smallest<T: PartialOrd + Copy>(
    rules: &[FlowRule],
    limit: fn(&FlowRule) -> Option<T>,
) -> HashMap<String, Option<T>> {
    let mut out: HashMap<String, Option<T>> = HashMap::new();
    for rule in rules {
        let entry = out.entry(rule.resource.clone()).or_insert(None);
        if let Some(t) = limit(rule) {
            *entry = Some(match *entry {
                Some(l) if l < t => l,
                _ => t,
            });
        }
    }
    out
}

/// A QPS rule's threshold per second (a rule may count over a window other than a second).
/// A shadow rule limits nothing: it has none.
fn qps_per_second(rule: &FlowRule) -> Option<f64> {
    let window = rule.window.as_secs_f64();
    (rule.metric == FlowMetric::Qps && window > 0.0 && !rule.shadow)
        .then(|| rule.threshold / window)
}

fn concurrency_threshold(rule: &FlowRule) -> Option<u64> {
    (rule.metric == FlowMetric::Concurrency && !rule.shadow).then_some(rule.threshold as u64)
}

fn resource_json(node: &ResourceNode, s: &ResourceStats, limits: &Limits) -> Value {
    // Loaded flow rules replace the definition's for the resources they name.
    let defaults = || node.default_flow_rules();
    let limit = match limits.concurrency.get(node.name()) {
        Some(limit) => *limit,
        None => defaults().iter().filter_map(concurrency_threshold).min(),
    };
    let qps_limit = match limits.qps.get(node.name()) {
        Some(limit) => *limit,
        None => defaults()
            .iter()
            .filter_map(qps_per_second)
            .min_by(f64::total_cmp),
    };
    let by_rule: serde_json::Map<String, Value> = s
        .block_total_by_rule
        .by_rule()
        .iter()
        .map(|&(rule, n)| (rule.to_owned(), json!(n)))
        .collect();
    let shadow_by_rule: serde_json::Map<String, Value> = s
        .shadow_block_total_by_rule
        .by_rule()
        .iter()
        .map(|&(rule, n)| (rule.to_owned(), json!(n)))
        .collect();
    json!({
        "resource": node.name(),
        "pass_qps": s.pass_qps,
        "qps_limit": qps_limit,
        "block_qps": s.block_qps,
        "error_qps": s.error_qps,
        "complete_qps": s.complete_qps,
        "avg_rt_ms": s.avg_rt_ms,
        "concurrency": s.concurrency,
        "concurrency_limit": s.concurrency_limit.or(limit),
        "breaker": s.circuit.map(state_name),
        "breakers": node.circuit_states().into_iter().map(state_name).collect::<Vec<_>>(),
        "pass_total": s.pass_total,
        "block_total": s.block_total,
        "error_total": s.error_total,
        "complete_total": s.complete_total,
        "block_total_by_rule": by_rule,
        // The endpoints its outlier rules eject now.
        "ejected": crate::outlier::ejected(node.name()),
        "shadow_block_total": s.shadow_block_total,
        "shadow_block_total_by_rule": shadow_by_rule,
        "limits": limits.list(node),
    })
}

/// `GET /api/resources/{name}/history`, or `None` for an unknown resource.
pub(crate) fn history(history: &History, name: &str) -> Option<Value> {
    let now_second = crate::clock::now_nanos() / 1_000_000_000;
    let points = history.series(name, now_second)?;
    Some(json!({ "resource": name, "now_second": now_second, "points": points }))
}

/// `GET /api/system`: the process's CPU usage and load (and where they are read from), the
/// system rules, and the breakers' transitions (counts since start, and the latest ones this
/// dashboard saw).
pub(crate) fn system(bus: &Bus, own: Reading) -> Value {
    // The dashboard's own reading (sampled while the page is open) where it has one, else
    // what the system rules' sampler read.
    let (rule_cpu, rule_load) = metrics::system_load();
    let (cpu, load) = (own.cpu.unwrap_or(rule_cpu), own.load.unwrap_or(rule_load));
    let inbound = metrics::inbound();
    let rules: Vec<Value> = rules::system_rules()
        .iter()
        .map(|r| {
            json!({
                "cpu_usage": r.cpu_usage,
                "load_per_core": r.load_per_core,
                "avg_rt_ms": r.avg_rt.map(|d| d.as_secs_f64() * 1_000.0),
                "concurrency": r.concurrency,
                "qps": r.qps,
                "shadow": r.shadow,
            })
        })
        .collect();
    json!({
        "cpu_usage": cpu,
        "load_per_core": load,
        "cpu_source": own.source,
        "effective_cores": own.cores,
        "inbound": {
            "pass_qps": inbound.pass_qps,
            "block_qps": inbound.block_qps,
            "avg_rt_ms": inbound.avg_rt_ms,
            "concurrency": inbound.concurrency,
        },
        "rules": rules,
        "breaker_transitions": metrics::circuit_breaker_transitions()
            .into_iter()
            .map(|(r, from, to, n)| json!({
                "resource": r, "from": state_name(from), "to": state_name(to), "count": n
            }))
            .collect::<Vec<_>>(),
        "outlier_ejections": metrics::outlier_ejections()
            .into_iter()
            .map(|(r, ejections, returns)| json!({
                "resource": r, "ejections": ejections, "returns": returns
            }))
            .collect::<Vec<_>>(),
        "last_transitions": bus.recent_transitions(),
        "rule_notices": rule_notices(),
        "rule_kinds": BlockTotals::RULES,
        "hotspot": hotspot_blocked(),
    })
}

/// What rule watchers said lately (the latest 32, oldest first): `seq`, `source`, `words`, as
/// the `rule_source` events say it, for a page opened after them.
fn rule_notices() -> Vec<Value> {
    notices::since(0)
        .1
        .into_iter()
        .map(|n| json!({ "seq": n.seq, "source": n.source, "words": n.words }))
        .collect()
}

/// Every hotspot rule in force (by resource, then rule order) with the values it blocked most
/// in the last minute: `value` is the value's text where it is known (the rule lists it as an
/// exception with a text, or the tower layer supplied it and saw it blocked), else null (the hot
/// path keeps only values' hashes), `value_hash` the hash (16 hex
/// digits), `blocked` the count (an upper bound, exact below 16 distinct values a minute) and
/// `error` how much of it may belong to values it replaced; `missed`: blocks not recorded.
fn hotspot_blocked() -> Vec<Value> {
    let now = crate::clock::now_nanos();
    let mut nodes = registry::all();
    nodes.sort_by_key(|n| n.name());
    let mut out = Vec::new();
    for node in nodes {
        let names = node.param_names().unwrap_or_default();
        for rule in node.hotspot_blocked(now) {
            let values: Vec<Value> = rule
                .top
                .iter()
                .map(|(c, text)| {
                    let text = text
                        .clone()
                        .or_else(|| crate::kinds::hotspot::hot_top::text_of(c.key));
                    json!({
                        "value": text,
                        "value_hash": format!("{:016x}", c.key),
                        "blocked": c.count,
                        "error": c.error,
                    })
                })
                .collect();
            out.push(json!({
                "resource": node.name(),
                "param_index": rule.param_index,
                "param": names.get(rule.param_index).cloned().flatten(),
                "threshold": rule.threshold,
                "top_blocked": values,
                "missed": rule.missed,
            }));
        }
    }
    out
}
