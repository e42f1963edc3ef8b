//! Limits that hold across the instances of a service.
//!
//! A [`FlowRule`](crate::rules::FlowRule) or [`HotspotRule`](crate::rules::HotspotRule) marked
//! with `.cluster(ClusterThreshold::Global)` shares its threshold with every instance that runs
//! the same rule; `ClusterThreshold::PerInstance` makes the limit the threshold times the
//! instances live. With the Cargo feature `redis`, a started `Cluster` keeps the shared limits in
//! Redis or Redis Cluster:
//!
//! ```no_run
//! # #[cfg(feature = "redis")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use sentinel_runtime::cluster::{Cluster, ClusterFallback, ClusterThreshold};
//! use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
//!
//! let cluster = Cluster::redis("redis://127.0.0.1:6379").namespace("shop").start()?;
//! rules::load_flow_rules(vec![
//!     FlowRule::qps("GET:/checkout", 1000.0).cluster(ClusterThreshold::Global),
//!     FlowRule::qps("search", 50.0).cluster(ClusterThreshold::PerInstance),
//!     FlowRule::qps("mail", 10.0)
//!         .cluster(ClusterThreshold::Global)
//!         .cluster_fallback(ClusterFallback::Pass),
//! ])?;
//! rules::load_hotspot_rules(vec![
//!     HotspotRule::qps("GET:/users/{id}", 0, 10.0).cluster(ClusterThreshold::Global),
//! ])?;
//! println!("{:?}", cluster.status());
//! drop(cluster); // cluster rules are local rules again
//! # Ok(()) }
//! # #[cfg(not(feature = "redis"))] fn main() {}
//! ```
//!
//! # How it works: leased GCRA
//!
//! Redis holds one GCRA arrival time per cluster rule (and per hotspot value), read and advanced
//! by a Lua script that uses Redis `TIME` as its only clock, so the instances' own clocks may be
//! skewed by any amount. An instance takes a *lease* of up to L tokens in one script call and
//! spends them locally, one atomic decrement per call; a background thread refills the lease
//! before it runs out. L follows about 50 ms of the instance's own traffic, at most the rule's
//! burst over the instances live. Tokens unused 200 ms after their lease arrived are dropped:
//! a token is spent at most once, and never later than 200 ms after it was granted.
//!
//! # The bounds, exactly
//!
//! With R the threshold per window W, and B the burst (R, plus `burst` for a hotspot rule):
//!
//! - **While the store answers**, the instances together admit at most `R × (t + 0.2 s) / W + B`
//!   in any interval of length t: what the store granted in the interval and the 200 ms before
//!   it. Leases can under-admit a little (tokens that expire unspent), never over-admit.
//! - **Burst after idle**: a key idle for a window grants B at once. A key the store *lost*
//!   grants nothing at once: tokens come back at the rule's rate from the loss (see below).
//! - **A key without a lease yet** (a hotspot value new to this instance, a rule just connected
//!   or back from a fallback) is admitted against its local share (R / instances for a global
//!   flow rule; a tenth of that share's burst, at least one call, for a hotspot value) until its
//!   lease arrives, and those calls are charged to the shared bucket with the lease. A charge
//!   may run the bucket into debt of at most one more window: over two windows the bound holds.
//! - **Fallback share**: while the store cannot be reached, a [`ClusterThreshold::Global`] rule
//!   admits R / n in each instance in any interval of the window (a strict window, whatever
//!   the rule's own: counted with the calls it leased before; n: the instances last seen), a
//!   [`ClusterThreshold::PerInstance`] rule R, a rule with [`ClusterFallback::Pass`] everything.
//!   A hotspot value's local share has a tenth of its burst then (at least one call): its
//!   leased passes are counted at the local pace, and a share with its whole burst would admit
//!   that burst on top of them as the fallback begins (a flow rule's window goes on from its
//!   recent passes). On return the calls a flow rule admitted locally are charged to the
//!   shared bucket (those of the last window, pro rata when the fallback lasted longer; debt
//!   of at most one more window); a hotspot value's are charged with its first lease after
//!   the return (all of them, within the same debt cap; values that share a lease slot charge
//!   each other, which can only under-admit: a rule's values are leased in a table of at most
//!   4 096 slots, two per set, so a slot is shared only when a third value of a set takes it
//!   over). For one window after the return the leased calls
//!   of a flow rule, and of each hotspot value, also stay within the local share: the other
//!   instances' local passes of the window in progress are not charged yet, so the first
//!   instance back would otherwise find the shared bucket full.
//! - **Grace period, 10 s**: an instance heard from within 120 ms is connected; one heard from
//!   within 10 s but not 120 ms may be cut off and admitting its local share, so the connected
//!   instances hold its share back (a global rule leases at R × connected / heard-within-10-s;
//!   a per-instance rule at R × connected). A partition of k of n instances that lasts up to
//!   10 s then admits about R in all, not R × (1 + k / n) (a longer one, R × (1 + k / n) from
//!   its 10th second: the cut-off instances cannot tell a store that forgot them from one that
//!   is down for all). It was 2 s: with 2 of 3 instances cut off for 5 s the fleet admitted
//!   1.67 R from the 3rd second. The cost: an instance that dies is held back for 10 s (one
//!   that stops cleanly leaves the set at once). While the store cannot be reached nobody
//!   heartbeats, so the grace period does not run across an outage: an instance back from a
//!   fallback counts the instances it saw before it (live, and within the grace period) for
//!   the grace period from its return, whatever the store's set says. After an outage longer
//!   than that the set holds only the instances already back, while the others may still be
//!   admitting their local share; counting itself alone, the first one back would take the
//!   whole limit on top of theirs.
//! - **No call waits for the network**: a dry lease blocks at once only while the store's last
//!   answer (less than a lease's TTL ago) granted fewer tokens than asked: the fleet's budget
//!   is spent. A lease that ran out or lapsed while the store had tokens (a key idle longer
//!   than the 200 ms TTL, by any length of gap, or traffic that outran its refill) is a key
//!   waiting for its lease, as is a key without one: its calls use the local share and are
//!   charged with the lease. `ClusterBuilder::lease_wait` is kept for compatibility and no
//!   longer used.
//! - **A refusal has one kind**: [`BlockKind::Cluster`](crate::BlockKind::Cluster) (also
//!   [`is_cluster`](crate::BlockError::is_cluster)), counted as `cluster` in the block totals,
//!   Prometheus and the page, with a [`retry_after`](crate::BlockError::retry_after) and a
//!   hotspot rule's [`param_index`](crate::BlockError::param_index). Its
//!   [`reason`](crate::BlockError::reason) says the cause, and
//!   [`ClusterStatus::refusals`] (and [`metrics::cluster`](crate::metrics::cluster)) count
//!   them by cause ([`ClusterRefusals`]): `budget_spent` (the store said so), `lost_window`
//!   (within a window of the store losing the key's state) and `fallback_share` (this
//!   instance's local share: in a fallback, while a key waits for its lease, or a window after
//!   a return). A lease key that expired because no one called is a full bucket; only one the
//!   store forgot (evicted before the end of its TTL as this instance knows it, or an epoch
//!   key gone) counts as lost.
//! - **New hotspot values** are leased at most 1 000 a second per process, gathered for 10 to
//!   15 ms and leased together: up to 32 values of a rule in one script call (on a Redis
//!   Cluster, of a rule and hash tag); the others keep their local share until their turn
//!   (counted in `values_over_cap`). Measured with a flood of 1 000 000 distinct values on one
//!   current-thread runtime (2.2-2.9 s on a 2-core host, in
//!   `a_flood_of_new_hotspot_values_never_waits_on_the_network_nor_blocks_its_runtime`): 170-225
//!   Redis calls, 69-78 a second with the heartbeats (a call at each wake-up of the background
//!   work made 147-225 a second, one call a value about 650), 1-5 calls in a million over 1 ms.
//!
//! # State the store forgets
//!
//! Redis evicts (`allkeys-*`, `volatile-*`: the lease keys have TTLs), is flushed, restarts
//! empty, or fails over to a replica without the last writes. Each of the 64 hash tags has an
//! epoch key without a TTL, read with every lease: when it is missing it is written anew (dated
//! now), and a lease key missing after that counts as spent from that moment, so tokens come
//! back at the rule's rate instead of as a fresh burst. A lease key this instance wrote that is
//! gone before its TTL (evicted) counts as spent now. Either is reported: `status().degraded`
//! holds [`ClusterDegraded::StateLost`] for 5 s, `state_losses` counts, and an event says so.
//! `start` reads `maxmemory-policy` (and again every second): a policy that evicts puts
//! [`ClusterDegraded::KeysEvictable`] in the status with a warning event (set `noeviction`); a
//! store that refuses `CONFIG GET`, as managed Redis may, is not an error (the policy is then
//! `None`). The first start of a namespace (no epoch yet) grants the burst of idle keys.
//!
//! Redis keys are encoded, never concatenated: the namespace and the resource are escaped
//! (`%`, `:`, `{`, `}` become `%25`, `%3A`, `%7B`, `%7D`) before they are joined with `:`, so no
//! two (namespace, resource, value) triples share a key (`shop` + `eu:checkout` and `shop:eu` +
//! `checkout` are two limits). A flow rule's key is `<namespace>:flow:<resource>:w<window
//! ms>:{<tag>}`, a hotspot value's `<namespace>:hot:<resource>:p<index>:w<window ms>:<value
//! hash>:{<tag>}`. The hash tag is one of 64 tags spread evenly over the 16 384 slots of a Redis
//! Cluster, picked by the value's hash (a flow rule's: its resource and window): a script
//! never touches two slots, and the values of one hotspot rule spread over the masters in
//! proportion to their slots, whatever the resource holds (`GET:/users/{id}` included). Idle
//! keys expire. Two cluster flow rules of one resource with the same window share one key.
//!
//! # Instances, failures and fallback
//!
//! Each instance heartbeats into a sorted set every 30 ms; `status().instances` is the count
//! of instances heard from in the last second (the most seen over 300 ms, and held for a
//! second after the store lost the set, so a late heartbeat or a flush does not make it dip);
//! `status().held_back` those heard from within the grace period but not in the last 120 ms.
//! `start` tries again every 20 ms, within the connect timeout, when a failure may pass (no
//! answer, or a script missing on a Redis Cluster node that just took over from its master):
//! instances started during a failover connect (measured: 57-65 starts over 3 manual failovers,
//! none failed, with a 3 s connect timeout). A bad password or URL fails at once.
//!
//! A stopped cluster takes its instance out of the set; a killed one is forgotten a second
//! later and no longer held back after the grace period.
//!
//! An instance leaves the store only when failures persist: a connection that drops is replaced at
//! once, and only if the store refuses the new one does the instance fall back (within a few ms of
//! a killed Redis); calls that time out (20 ms by default) are ridden out, spending the leases in
//! hand, until at least 5 calls failed in a row over at least 150 ms (then it falls back). It comes
//! back after 3 heartbeats in a row answered, 30 ms apart, each within three quarters of the
//! command timeout (a store whose round trip sits just under the timeout does not make it come
//! back and leave again), and after charging what it admitted locally. Reconnects back off from 20 ms, doubling to 500 ms. A slow store (a 50 ms stall every
//! 250 ms) or a Redis Cluster failover is then no fallback or one, not a flip per timeout. Measured
//! (R = 500, 3 instances each offered 1.5 R, the busiest second): a 16 ms round trip, under the
//! 20 ms timeout, 0.6-0.8 R and no fallback, or one per instance when timeouts persist for
//! 150 ms (the calls that time out leave the instances short of tokens: under the limit, not
//! over); the Redis Cluster master holding the rule's key killed (3
//! masters, 3 replicas, 500 ms node timeout, failed over in about 2.5 s) one fallback and one
//! resume per instance, 1.02 R in 4 runs (1.0-1.18 R in 20 runs, the busiest second as the
//! fallback began, before the local share became a strict window); 2 of 3 instances cut off for
//! 1.5 s, a hotspot rule: 1.0 R per value; a 19 ms round trip (a hair under the timeout), one
//! fallback per instance and about 1.0 R.
//!
//! The hotspot value key (the hash key the instances share, kept in Redis without a TTL) is
//! checked every second: a key in use for longer replaces a younger one (written by an instance
//! that started after the store lost the key), and an instance whose key is not the store's
//! says so ([`ClusterDegraded::ValueKeySplit`]) while its cluster hotspot rules limit locally.
//! Every lease sends the rule's threshold: when instances run the rule with different
//! thresholds, [`ClusterDegraded::RulesDisagree`] is reported for 5 s.
//!
//! **A cluster rule without a started cluster** (or without the `redis` feature) is a local
//! rule in fallback mode, with one instance last seen: a global rule of 1000/s admits 1000/s in
//! this process. Listed hotspot values (exceptions) keep their own thresholds per instance.
//! Cluster rules take the reject behaviour only (no warm-up, throttling or relation).
//!
//! [`metrics::cluster`](crate::metrics::cluster) reports the state, the instances, leases taken,
//! Redis calls, fallbacks, and the counters of the faults above; with the `prometheus` feature
//! the families `sentinel_cluster_state`, `sentinel_cluster_instances`,
//! `sentinel_cluster_leases_total`, `sentinel_cluster_redis_calls_total{result}`,
//! `sentinel_cluster_fallbacks_total`, `sentinel_cluster_state_losses_total`,
//! `sentinel_cluster_keys_evictable`, `sentinel_cluster_value_key_splits_total`,
//! `sentinel_cluster_rule_disagreements_total`, `sentinel_cluster_charged_back_total`,
//! `sentinel_cluster_held_back`, `sentinel_cluster_values_over_cap_total`,
//! `sentinel_cluster_failures_ridden_out_total` and `sentinel_cluster_refusals_total{cause}`; with `tracing`, an event on every change of
//! state and on every fault found (target `sentinel`). [`ClusterStatus::health`] says
//! `connected`, `degraded` or `fallback`.

pub use crate::rules::{ClusterFallback, ClusterThreshold};

mod status;
pub use status::{ClusterDegraded, ClusterRefusals, ClusterState, ClusterStatus};

#[cfg(feature = "redis")]
mod background;
#[cfg(feature = "redis")]
mod config;
#[cfg(feature = "redis")]
mod connect;
#[cfg(feature = "redis")]
mod error;
#[cfg(feature = "redis")]
mod fleet;
#[cfg(all(test, feature = "redis"))]
mod fleet_script_tests;
#[cfg(feature = "redis")]
mod fleet_scripts;
#[cfg(feature = "redis")]
mod fleet_task;
#[cfg(feature = "redis")]
mod keys;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod refill;
#[cfg(all(test, feature = "redis"))]
mod script_tests;
#[cfg(feature = "redis")]
mod scripts;
#[cfg(feature = "redis")]
mod task;
#[cfg(all(test, feature = "redis"))]
mod test_server;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::error::ClusterError;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::fleet::{
    fleet, Fleet, FleetEjection, FleetInstance, FleetResource, LIVE_MS, MAX_LISTED, MAX_RATE,
    MAX_READ, MAX_READ_BYTES, MAX_RESOURCES, MAX_SUMMARY_BYTES, MAX_TEXT_BYTES,
};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::redis::{Cluster, ClusterBuilder};
