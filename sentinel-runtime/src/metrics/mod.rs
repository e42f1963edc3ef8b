//! Reading the statistics: [`snapshot`] of one resource (its window and its running totals since
//! start), [`all`] resources, and the [`last_minute`] per second. With the `prometheus` feature,
//! `metrics::prometheus` (feature `prometheus`) exposes them to a `prometheus-client` registry, read at scrape time.
//! `metrics::opentelemetry` (feature `opentelemetry`) registers OpenTelemetry observable
//! instruments, read at collection time; `metrics::facade` (feature `metrics`) reports the calls'
//! increments to the `metrics` facade's recorder.

pub use crate::stat::{BlockTotals, ResourceStats};
pub use crate::system_load::CpuSourceKind;

mod cluster;
#[cfg(feature = "metrics")]
pub mod facade;
#[cfg(feature = "opentelemetry")]
pub mod opentelemetry;
mod process;
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub mod prometheus;
mod resources;
mod rules;

pub use cluster::{cluster, ClusterMetrics};
pub use process::{system, system_load, SystemStats};
pub use resources::{
    all, hotspot_live_evictions, inbound, last_minute, overflow, snapshot, SecondStats,
};
#[cfg(feature = "rule-files")]
#[cfg_attr(docsrs, doc(cfg(feature = "rule-files")))]
pub use rules::rule_files;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use rules::set_block_event_level;
pub use rules::{circuit_breaker_transitions, outlier_ejections, rule_loads};
