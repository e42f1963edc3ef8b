//! Publishing this instance's summary and reading the fleet's (see [`fleet`](super::fleet)), on
//! the cluster's background thread once a second.

use std::time::Duration;

use super::config::Config;
use super::connect::{call, Conn, Failure};
use super::fleet::{self, FleetInstance, FleetResource, LIVE_MS, MAX_RESOURCES};
use super::scripts::Scripts;
use crate::slot::cluster::health;
use crate::slot::cluster::shared::{self, MODE_CONNECTED};

/// A summary not refreshed for this long is dropped from the store.
const FORGET_MS: u64 = 60_000;

/// Publishes this instance's summary and replaces the view with every live instance's.
pub(crate) async fn publish(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    limit: Duration,
) -> Result<(), Failure> {
    let summary = fleet::encode(&this_instance(config));
    let mut invocation = scripts.fleet.prepare_invoke();
    invocation
        .key(config.keys.fleet())
        .arg(&config.instance_id)
        .arg(summary)
        .arg(LIVE_MS)
        .arg(FORGET_MS);
    let read: Vec<String> = call(conn, invocation, limit).await?;
    let instances = read
        .chunks_exact(3)
        .filter_map(|t| fleet::decode(&t[0], t[1].parse().unwrap_or(LIVE_MS), &t[2]))
        .collect();
    fleet::set_view(Some(fleet::view(instances)));
    Ok(())
}

/// This instance as the fleet sees it.
fn this_instance(config: &Config) -> FleetInstance {
    let mut resources: Vec<FleetResource> = crate::registry::all()
        .into_iter()
        .map(|node| {
            let stats = node.snapshot();
            FleetResource {
                resource: node.name().to_owned(),
                pass_qps: stats.pass_qps,
                block_qps: stats.block_qps,
                instances: 1,
            }
        })
        .collect();
    let (pass_qps, block_qps) = resources
        .iter()
        .fold((0.0, 0.0), |(p, b), r| (p + r.pass_qps, b + r.block_qps));
    resources.sort_by(|a, b| {
        (b.pass_qps + b.block_qps)
            .total_cmp(&(a.pass_qps + a.block_qps))
            .then_with(|| a.resource.cmp(&b.resource))
    });
    resources.truncate(MAX_RESOURCES);
    FleetInstance {
        id: config.instance_id.clone(),
        host: host(),
        pid: std::process::id(),
        rules_version: rules_version(),
        cluster_state: state().to_owned(),
        last_seen_ms: 0,
        pass_qps,
        block_qps,
        resources,
    }
}

/// This instance's state, as [`ClusterStatus::health`](super::ClusterStatus::health) says it.
fn state() -> &'static str {
    if shared::mode() != MODE_CONNECTED {
        "fallback"
    } else if health::is_state_lost() || health::do_rules_disagree() {
        "degraded"
    } else {
        "connected"
    }
}

/// The host's name (`HOSTNAME`, else the kernel's), or `unknown`.
fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A fingerprint of the rules in force (FNV-1a over their text): equal on instances with equal
/// rules.
fn rules_version() -> String {
    let text = format!("{:?}", crate::rules::current());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}
