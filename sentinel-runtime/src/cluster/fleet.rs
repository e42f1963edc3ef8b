//! The fleet as one: once a second every instance of a started [`Cluster`](super::Cluster)
//! publishes a summary of itself into the store (its host and process, a fingerprint of its
//! rules, its cluster state, its traffic and its busiest resources) and reads back every live
//! instance's. [`fleet`] returns the last view read; the dashboard serves it as `/api/fleet`.
//!
//! Publishing runs on the cluster's background thread, never on the call path. A summary is
//! bounded: the [`MAX_RESOURCES`] busiest resources of the instance, a few KB at most. An
//! instance that stops publishing (killed, or cut off from the store) leaves the view
//! [`LIVE_MS`] after its last summary.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// The busiest resources an instance lists in its summary.
pub const MAX_RESOURCES: usize = 50;
/// An instance is in the view while its last summary is younger than this (by the store's clock).
pub const LIVE_MS: u64 = 4_500;

/// The fleet as the last read of the store saw it.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Fleet {
    /// Every live instance, by id.
    pub instances: Vec<FleetInstance>,
    /// Every resource an instance listed, with the fleet's sums, busiest first.
    pub resources: Vec<FleetResource>,
}

/// One instance's summary.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FleetInstance {
    /// Its id in the store's set of instances ([`ClusterStatus::instance_id`](super::ClusterStatus::instance_id)).
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// A fingerprint of the rules it has in force: instances with other rules than the rest of
    /// the fleet show another value.
    pub rules_version: String,
    /// Its cluster state (`connected`, `degraded` or `fallback`) when it published.
    pub cluster_state: String,
    /// How long ago it published, by the store's clock, in milliseconds.
    pub last_seen_ms: u64,
    /// Its admitted calls per second, all resources together.
    pub pass_qps: f64,
    /// Its blocked calls per second, all resources together.
    pub block_qps: f64,
    /// Its busiest resources (at most [`MAX_RESOURCES`]).
    pub resources: Vec<FleetResource>,
}

/// A resource's traffic: one instance's, or the fleet's sum.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FleetResource {
    /// The resource's name.
    pub resource: String,
    /// Admitted calls per second.
    pub pass_qps: f64,
    /// Blocked calls per second.
    pub block_qps: f64,
    /// How many instances report it (1 in an instance's own list).
    pub instances: usize,
}

static VIEW: Mutex<Option<Fleet>> = Mutex::new(None);

/// The fleet as the last read of the store saw it (refreshed once a second while a
/// [`Cluster`](super::Cluster) is started and the store answers); `None` before the first read.
/// While the store is away the view is the last one read: check
/// [`Cluster::status`](super::Cluster::status) for whether it is current.
pub fn fleet() -> Option<Fleet> {
    VIEW.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Replaces the view with the one read now.
pub(crate) fn set_view(view: Option<Fleet>) {
    *VIEW.lock().unwrap_or_else(PoisonError::into_inner) = view;
}

/// Escapes a text for the summary's format: tabs and line ends (and the escape) as `\t`, `\n`,
/// `\r`, `\\`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// One instance's summary in the store's format: a first line with the instance's own fields,
/// then a line per resource, fields separated by tabs.
pub(crate) fn encode(instance: &FleetInstance) -> String {
    let mut out = format!(
        "v1\t{}\t{}\t{}\t{}\t{}\t{}\n",
        escape(&instance.host),
        instance.pid,
        escape(&instance.rules_version),
        escape(&instance.cluster_state),
        instance.pass_qps,
        instance.block_qps,
    );
    for r in instance.resources.iter().take(MAX_RESOURCES) {
        out.push_str(&format!(
            "{}\t{}\t{}\n",
            escape(&r.resource),
            r.pass_qps,
            r.block_qps
        ));
    }
    out
}

/// An instance's summary read back; `None` if it is not in the format (another version).
pub(crate) fn decode(id: &str, age_ms: u64, text: &str) -> Option<FleetInstance> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next()?.split('\t').collect();
    let [version, host, pid, rules, state, pass, block] = head.as_slice() else {
        return None;
    };
    if *version != "v1" {
        return None;
    }
    let resources = lines
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (name, pass, block) = (parts.next()?, parts.next()?, parts.next()?);
            Some(FleetResource {
                resource: unescape(name),
                pass_qps: pass.parse().ok()?,
                block_qps: block.parse().ok()?,
                instances: 1,
            })
        })
        .take(MAX_RESOURCES)
        .collect();
    Some(FleetInstance {
        id: id.to_owned(),
        host: unescape(host),
        pid: pid.parse().ok()?,
        rules_version: unescape(rules),
        cluster_state: unescape(state),
        last_seen_ms: age_ms,
        pass_qps: pass.parse().ok()?,
        block_qps: block.parse().ok()?,
        resources,
    })
}

/// The fleet of these instances: the resources summed over the instances that list them.
pub(crate) fn view(mut instances: Vec<FleetInstance>) -> Fleet {
    instances.sort_by(|a, b| a.id.cmp(&b.id));
    let mut sums: BTreeMap<&str, FleetResource> = BTreeMap::new();
    for r in instances.iter().flat_map(|i| &i.resources) {
        let sum = sums.entry(&r.resource).or_insert_with(|| FleetResource {
            resource: r.resource.clone(),
            ..FleetResource::default()
        });
        sum.pass_qps += r.pass_qps;
        sum.block_qps += r.block_qps;
        sum.instances += 1;
    }
    let mut resources: Vec<FleetResource> = sums.into_values().collect();
    resources.sort_by(|a, b| {
        let (ta, tb) = (a.pass_qps + a.block_qps, b.pass_qps + b.block_qps);
        tb.total_cmp(&ta).then_with(|| a.resource.cmp(&b.resource))
    });
    Fleet {
        instances,
        resources,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, resources: &[(&str, f64, f64)]) -> FleetInstance {
        FleetInstance {
            id: id.to_owned(),
            host: "h\tost".to_owned(),
            pid: 7,
            rules_version: "abc".to_owned(),
            cluster_state: "connected".to_owned(),
            last_seen_ms: 0,
            pass_qps: resources.iter().map(|r| r.1).sum(),
            block_qps: resources.iter().map(|r| r.2).sum(),
            resources: resources
                .iter()
                .map(|&(resource, pass_qps, block_qps)| FleetResource {
                    resource: resource.to_owned(),
                    pass_qps,
                    block_qps,
                    instances: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn a_summary_reads_back_as_written_whatever_the_names_hold() {
        let one = instance("i1", &[("GET /a\tb\\c\nd", 10.5, 1.0), ("x", 0.0, 2.0)]);
        assert_eq!(decode("i1", 0, &encode(&one)), Some(one));
        assert_eq!(decode("i1", 0, "v2\tnew format"), None);
        assert_eq!(decode("i1", 0, ""), None);
    }

    #[test]
    fn the_fleet_sums_each_resource_over_the_instances_that_list_it() {
        let fleet = view(vec![
            instance("b", &[("api", 10.0, 1.0), ("db", 5.0, 0.0)]),
            instance("a", &[("api", 20.0, 2.0)]),
        ]);
        assert_eq!(fleet.instances[0].id, "a");
        let api = &fleet.resources[0];
        assert_eq!(
            (api.resource.as_str(), api.pass_qps, api.block_qps),
            ("api", 30.0, 3.0)
        );
        assert_eq!(api.instances, 2);
        assert_eq!(fleet.resources[1].instances, 1);
    }

    #[test]
    fn a_summary_lists_at_most_the_busiest_resources_it_was_given() {
        let names: Vec<String> = (0..MAX_RESOURCES + 10).map(|i| format!("r{i}")).collect();
        let many: Vec<(&str, f64, f64)> = names.iter().map(|n| (n.as_str(), 1.0, 0.0)).collect();
        let text = encode(&instance("i", &many));
        assert_eq!(text.lines().count(), 1 + MAX_RESOURCES);
    }
}
