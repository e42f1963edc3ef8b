//! Publishing this instance's summary, and reading the fleet's while its view is asked for
//! (see [`fleet`](super::fleet)), on the cluster's background thread once a second.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::config::Config;
use super::connect::{call, Conn, Failure};
use super::fleet::{self, FleetEjection, FleetInstance, FleetResource, LIVE_MS, MAX_RESOURCES};
use super::fleet_scripts::{FleetKeys, FleetScripts, Read};
use crate::slot::cluster::health;
use crate::slot::cluster::shared::{self, MODE_CONNECTED};
use crate::stat::circuit_state::CircuitState;
use crate::stat::BlockTotals;

/// How long a read of the fleet may take (it is off the call path, and at most
/// [`MAX_READ_BYTES`](fleet::MAX_READ_BYTES) come back).
const READ_WITHIN: Duration = Duration::from_secs(1);
/// How often an instance publishes its summary (the view, while asked for, is read every
/// second). Within [`LIVE_MS`] an instance may miss one publish.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_secs(2);

/// Which instance of this process last published, and when (one cluster at a time; a new one
/// publishes at once).
static PUBLISHED: Mutex<Option<(String, Instant)>> = Mutex::new(None);

/// Called once a second: publishes this instance's summary when [`PUBLISH_EVERY`] has passed;
/// while the view is asked for, also reads the fleet's and replaces the view with it (else the
/// view is this instance's alone).
pub(crate) async fn publish(
    config: &Config,
    conn: &mut Conn,
    limit: Duration,
) -> Result<(), Failure> {
    let own = this_instance(config);
    let keys = FleetKeys::new(&config.keys.fleet());
    let scripts = FleetScripts::get();
    // A little under the period: the ticks that call this are a second apart, give or take.
    let due = PUBLISHED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_none_or(|(id, at)| {
            *id != config.instance_id || at.elapsed() + Duration::from_millis(100) >= PUBLISH_EVERY
        });
    if due {
        let summary = fleet::encode(&own);
        let published: Result<Vec<i64>, Failure> = call(
            conn,
            scripts.publish_call(&keys, &config.instance_id, &summary, LIVE_MS),
            limit,
        )
        .await;
        // A failure keeps the last view (see `fleet`).
        published?;
        *PUBLISHED.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((config.instance_id.clone(), Instant::now()));
    }
    if !fleet::asked_for() {
        fleet::set_view(Some(own_only(own)));
        return Ok(());
    }
    let raw: Vec<redis::Value> = call(
        conn,
        scripts.read_call(&keys, &config.instance_id, LIVE_MS),
        READ_WITHIN,
    )
    .await?;
    let view = match Read::parse(raw) {
        Some(read) => fleet_of(own, read),
        None => own_only(own),
    };
    fleet::set_view(Some(view));
    Ok(())
}

/// The fleet as a read found it, with this instance's own summary.
pub(crate) fn fleet_of(own: FleetInstance, read: Read) -> fleet::Fleet {
    let mut unreadable = read.unreadable;
    let mut instances = Vec::with_capacity(read.entries.len() + 1);
    instances.push(own);
    for (id, age, summary) in &read.entries {
        match fleet::decode(id, *age, summary) {
            Some(instance) => instances.push(instance),
            None => unreadable += 1,
        }
    }
    let shown = instances.len();
    let mut view = fleet::view(instances);
    view.count = read.count.max(shown);
    view.unreadable = unreadable;
    view.incomplete = read.over_budget || read.count > read.entries.len() + 1;
    view
}

/// The view of this instance alone (the store not read).
fn own_only(own: FleetInstance) -> fleet::Fleet {
    let mut view = fleet::view(vec![own]);
    view.own_only = true;
    view
}

/// The totals the last summary was computed from, to turn them into rates.
struct Totals {
    at: Instant,
    blocks: [u64; BlockTotals::RULES.len()],
    shadow: u64,
}

static LAST: Mutex<Option<Totals>> = Mutex::new(None);

/// This instance as the fleet sees it.
fn this_instance(config: &Config) -> FleetInstance {
    let mut blocks = [0u64; BlockTotals::RULES.len()];
    let mut shadow = 0u64;
    let mut breakers_open = Vec::new();
    let mut ejected = Vec::new();
    let mut pass_qps = 0.0;
    let mut resources: Vec<FleetResource> = crate::registry::all()
        .into_iter()
        .map(|node| {
            let stats = node.snapshot();
            for (sum, (_, n)) in blocks.iter_mut().zip(stats.block_total_by_rule.by_rule()) {
                *sum = sum.saturating_add(n);
            }
            shadow = shadow.saturating_add(stats.shadow_block_total);
            pass_qps += stats.pass_qps;
            if stats.circuit == Some(CircuitState::Open) && breakers_open.len() < fleet::MAX_LISTED
            {
                breakers_open.push(node.name().to_owned());
            }
            if ejected.len() < fleet::MAX_LISTED {
                for endpoint in crate::outlier::ejected(node.name()) {
                    ejected.push(FleetEjection::new(node.name(), endpoint));
                }
                ejected.truncate(fleet::MAX_LISTED);
            }
            FleetResource {
                resource: node.name().to_owned(),
                pass_qps: stats.pass_qps,
                block_qps: stats.block_qps,
                instances: 1,
            }
        })
        .collect();
    resources.sort_by(|a, b| {
        (b.pass_qps + b.block_qps)
            .total_cmp(&(a.pass_qps + a.block_qps))
            .then_with(|| a.resource.cmp(&b.resource))
    });
    resources.truncate(MAX_RESOURCES);
    breakers_open.sort();

    // Blocks by kind, per second since the last summary: the instance's block rate is their
    // sum, over the same interval.
    let now = Instant::now();
    let mut blocked_by = BTreeMap::new();
    let mut shadow_qps = 0.0;
    {
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(before) = last.as_ref() {
            let secs = now.duration_since(before.at).as_secs_f64().max(0.001);
            for ((kind, n), before) in BlockTotals::RULES.iter().zip(blocks).zip(before.blocks) {
                let per_second = n.saturating_sub(before) as f64 / secs;
                if per_second > 0.0 {
                    blocked_by.insert((*kind).to_owned(), per_second);
                }
            }
            shadow_qps = shadow.saturating_sub(before.shadow) as f64 / secs;
        }
        *last = Some(Totals {
            at: now,
            blocks,
            shadow,
        });
    }
    FleetInstance {
        id: config.instance_id.clone(),
        name: config.instance_name.clone(),
        host: host(),
        pid: std::process::id(),
        rules_version: rules_version(),
        rules_source_version: source_version(),
        cluster_state: state().to_owned(),
        last_seen_ms: 0,
        pass_qps,
        block_qps: blocked_by.values().sum(),
        blocked_by,
        shadow_would_block_qps: shadow_qps,
        breakers_open,
        ejected,
        this_instance: true,
        resources,
    }
}

/// The rule document's version a watcher has in force here (`None`: no watcher, or nothing
/// loaded; always `None` without rule files).
fn source_version() -> Option<u64> {
    #[cfg(feature = "rule-files")]
    return crate::rules::source::version_in_force();
    #[cfg(not(feature = "rule-files"))]
    return None;
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
pub(crate) fn host() -> String {
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
