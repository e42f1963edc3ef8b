//! `GET /api/fleet`: the fleet as the cluster's store last showed it (see
//! [`cluster::fleet`](crate::cluster::fleet)): every live instance with its state, its rules'
//! fingerprint and its traffic, and each resource's traffic summed over the fleet. Served from
//! memory: the request makes no call to the store.

use serde_json::{json, Value};

use crate::metrics;

/// The fleet's JSON. `available` is false without the cluster feature or before a started
/// cluster first read the store; `reachable` is whether the store answers now (while it does
/// not, the view is the last one read).
pub(crate) fn fleet() -> Value {
    let cluster = metrics::cluster();
    let state = cluster.state.map(|s| s.label());
    let reachable = state == Some("connected");
    let (instances, resources) = view();
    json!({
        "available": instances.is_some(),
        "reachable": reachable,
        "cluster": {
            "state": state,
            "instances": cluster.instances,
            // The shared limits' refusals by cause (`ClusterRefusals`).
            "refusals": cluster.refusals.by_cause().map(|(cause, n)| (cause.to_owned(), json!(n)))
                .into_iter().collect::<serde_json::Map<_, _>>(),
        },
        "instances": instances.unwrap_or_default(),
        "resources": resources,
    })
}

#[cfg(feature = "redis")]
fn view() -> (Option<Vec<Value>>, Vec<Value>) {
    let Some(fleet) = crate::cluster::fleet() else {
        return (None, Vec::new());
    };
    // The fleet's rules: the fingerprint most instances run (an instance with another one has
    // other rules than the fleet).
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for i in &fleet.instances {
        *counts.entry(i.rules_version.as_str()).or_default() += 1;
    }
    let usual = counts.iter().max_by_key(|(_, n)| **n).map(|(v, _)| *v);
    let instances = fleet
        .instances
        .iter()
        .map(|i| {
            json!({
                "id": i.id,
                "host": i.host,
                "pid": i.pid,
                "rules_version": i.rules_version,
                "other_rules": Some(i.rules_version.as_str()) != usual,
                "cluster_state": i.cluster_state,
                "last_seen_ms": i.last_seen_ms,
                "pass_qps": i.pass_qps,
                "block_qps": i.block_qps,
            })
        })
        .collect();
    let limits = global_limits();
    let resources = fleet
        .resources
        .iter()
        .map(|r| {
            json!({
                "resource": r.resource,
                "pass_qps": r.pass_qps,
                "block_qps": r.block_qps,
                "instances": r.instances,
                "global_limit": limits.get(r.resource.as_str()),
            })
        })
        .collect();
    (Some(instances), resources)
}

/// Each resource's global cluster limit in force here, per second (the smallest of its global
/// QPS cluster rules): what the fleet's rate is held to.
#[cfg(feature = "redis")]
fn global_limits() -> std::collections::HashMap<String, f64> {
    use crate::rules::{ClusterThreshold, FlowMetric};
    let mut limits: std::collections::HashMap<String, f64> = std::collections::HashMap::new();
    for rule in crate::rules::flow_rules() {
        if rule.cluster != Some(ClusterThreshold::Global) || rule.metric != FlowMetric::Qps {
            continue;
        }
        let per_second = rule.threshold / rule.window.as_secs_f64().max(f64::MIN_POSITIVE);
        let limit = limits.entry(rule.resource.clone()).or_insert(per_second);
        *limit = limit.min(per_second);
    }
    limits
}

#[cfg(not(feature = "redis"))]
fn view() -> (Option<Vec<Value>>, Vec<Value>) {
    (None, Vec::new())
}
