//! `GET /api/fleet`: the fleet as the cluster's store last showed it (see
//! [`cluster::fleet`](crate::cluster::fleet)): the live instances read (at most
//! [`MAX_READ`](crate::cluster::MAX_READ) besides this one) with their name, state, rules,
//! traffic, reasons for blocking, open breakers and ejected endpoints; each resource's traffic
//! summed over them; which rules version the fleet runs and which instances lag. Served from
//! memory: the request makes no call to the store. The answer is bounded: at most
//! [`MAX_API_RESOURCES`] resources, at most [`MAX_LAGGING`] lagging names, and instances only
//! while the answer stays under [`MAX_API_BYTES`]; past a bound, the answer says so.

use serde_json::{json, Value};

use crate::metrics;

/// The most resources `/api/fleet` lists (the busiest; `resources_total` says how many).
#[cfg(feature = "redis")]
pub(crate) const MAX_API_RESOURCES: usize = 100;
/// The most names in `rules.lagging` (`rules.lagging_total` says how many).
#[cfg(feature = "redis")]
pub(crate) const MAX_LAGGING: usize = 20;
/// About the most bytes of instances `/api/fleet` returns; the instances past it are left out
/// (`instances_left_out`).
#[cfg(feature = "redis")]
pub(crate) const MAX_API_BYTES: usize = 1024 * 1024;

/// The fleet's JSON. `available` is false without the cluster feature or before a started
/// cluster made its first summary; `reading` is true while the view holds only this instance
/// (the store not read yet); `reachable` is whether the store answers now (while it does not,
/// the view is the last one read).
pub(crate) fn fleet() -> Value {
    let cluster = metrics::cluster();
    let state = cluster.state.map(|s| s.label());
    let reachable = state == Some("connected");
    let mut answer = json!({
        "available": false,
        "reachable": reachable,
        "cluster": {
            "state": state,
            "instances": cluster.instances,
            // The shared limits' refusals by cause (`ClusterRefusals`).
            "refusals": cluster.refusals.by_cause().map(|(cause, n)| (cause.to_owned(), json!(n)))
                .into_iter().collect::<serde_json::Map<_, _>>(),
        },
        "instances": [],
        "resources": [],
    });
    view(&mut answer);
    answer
}

#[cfg(feature = "redis")]
fn view(answer: &mut Value) {
    use crate::cluster::FleetInstance;

    let Some(fleet) = crate::cluster::fleet() else {
        return;
    };
    // Other rules: a fingerprint other than this instance's own (not the most common one:
    // whoever writes many entries into the store would decide it).
    let own = fleet.instances.iter().find(|i| i.this_instance);
    let own_rules = own.map(|i| i.rules_version.as_str());
    let instance = |i: &FleetInstance| {
        let blocked_by: serde_json::Map<String, Value> = (i.blocked_by.iter())
            .map(|(kind, qps)| (kind.clone(), json!(qps)))
            .collect();
        let ejected: Vec<Value> = (i.ejected.iter())
            .map(|e| json!({ "resource": e.resource, "endpoint": e.endpoint }))
            .collect();
        json!({
            "id": i.id,
            "name": i.name,
            "host": i.host,
            "pid": i.pid,
            "this_instance": i.this_instance,
            "rules_version": i.rules_source_version,
            "rules_fingerprint": i.rules_version,
            "other_rules": Some(i.rules_version.as_str()) != own_rules,
            "cluster_state": i.cluster_state,
            "last_seen_ms": i.last_seen_ms,
            "pass_qps": i.pass_qps,
            "block_qps": i.block_qps,
            "blocked_by": blocked_by,
            "breakers_open": i.breakers_open,
            "ejected": ejected,
            "shadow_would_block_qps": i.shadow_would_block_qps,
        })
    };
    // This instance first, then the others by id, while the bytes last.
    let mut ordered: Vec<&FleetInstance> = fleet.instances.iter().collect();
    ordered.sort_by_key(|i| !i.this_instance);
    let mut instances = Vec::with_capacity(ordered.len());
    let mut bytes = 0;
    for i in &ordered {
        let value = instance(i);
        bytes += value.to_string().len();
        if bytes > MAX_API_BYTES && !instances.is_empty() {
            break;
        }
        instances.push(value);
    }
    let left_out = ordered.len() - instances.len();

    // The rules version the fleet runs: the newest of the instances read; an instance on
    // another, or watching nothing, lags.
    let newest = fleet
        .instances
        .iter()
        .filter_map(|i| i.rules_source_version)
        .max();
    let (on, lagging): (Vec<&FleetInstance>, Vec<&FleetInstance>) = fleet
        .instances
        .iter()
        .partition(|i| newest.is_some() && i.rules_source_version == newest);
    let lagging_names: Vec<&str> = lagging
        .iter()
        .take(MAX_LAGGING)
        .map(|i| i.name.as_str())
        .collect();

    let limits = global_limits();
    let resources: Vec<Value> = fleet
        .resources
        .iter()
        .take(MAX_API_RESOURCES)
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
    answer["available"] = json!(true);
    answer["reading"] = json!(fleet.own_only);
    answer["count"] = json!(fleet.count);
    answer["shown"] = json!(instances.len());
    answer["incomplete"] = json!(fleet.incomplete || left_out > 0);
    answer["unreadable"] = json!(fleet.unreadable);
    answer["instances_left_out"] = json!(left_out);
    answer["instances"] = Value::Array(instances);
    answer["resources_total"] = json!(fleet.resources.len());
    answer["resources"] = Value::Array(resources);
    answer["rules"] = json!({
        "version": newest,
        "instances_on": on.len(),
        "lagging": lagging_names,
        "lagging_total": lagging.len(),
    });
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
fn view(_: &mut Value) {}
