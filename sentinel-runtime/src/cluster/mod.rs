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
//! a token is never spent twice or late, so leases can under-admit a little but never
//! over-admit. The burst of a rule is its threshold (one window's worth; plus `burst` for a
//! hotspot rule).
//!
//! No call waits for the network while its lease holds tokens. A call that finds its lease dry
//! waits for the refill at most the cluster's lease wait (default 2 ms,
//! `ClusterBuilder::lease_wait`), else it is blocked like any flow block
//! ([`BlockKind::Flow`](crate::BlockKind::Flow) or [`BlockKind::HotParam`](crate::BlockKind::HotParam),
//! with a [`retry_after`](crate::BlockError::retry_after)); its
//! [`reason`](crate::BlockError::reason) starts with `cluster limit`.
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
//! of instances seen in the last second (a stopped instance is forgotten a second later). When Redis fails (refused or dropped; or no answer within
//! the command timeout, 20 ms by default, twice in a row: a busy host misses one now and then),
//! every instance switches to local limiting within 100 ms:
//! by default a [`ClusterThreshold::Global`] rule enforces its threshold divided by the instances
//! last seen, a [`ClusterThreshold::PerInstance`] rule its own threshold; a rule with
//! [`ClusterFallback::Pass`] admits everything. The background thread reconnects with backoff
//! (20 ms doubling to 500 ms) and resumes leasing once Redis answers again.
//!
//! **A cluster rule without a started cluster** (or without the `redis` feature) is a local
//! rule in fallback mode, with one instance last seen: a global rule of 1000/s admits 1000/s in
//! this process. Listed hotspot values (exceptions) keep their own thresholds per instance.
//! Cluster rules take the reject behaviour only (no warm-up, throttling or relation).
//!
//! [`metrics::cluster`](crate::metrics::cluster) reports the state, the instances, leases taken,
//! Redis calls and fallbacks; with the `prometheus` feature the families
//! `sentinel_cluster_state`, `sentinel_cluster_instances`, `sentinel_cluster_leases_total`,
//! `sentinel_cluster_redis_calls_total{result}` and `sentinel_cluster_fallbacks_total`; with
//! `tracing`, an event on every change of state (target `sentinel`).

pub use crate::rules::{ClusterFallback, ClusterThreshold};

mod status;
pub use status::{ClusterState, ClusterStatus};

#[cfg(feature = "redis")]
mod background;
#[cfg(feature = "redis")]
mod error;
#[cfg(feature = "redis")]
mod keys;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod scripts;
#[cfg(feature = "redis")]
pub use self::error::ClusterError;
#[cfg(feature = "redis")]
pub use self::redis::{Cluster, ClusterBuilder};
