//! Model tests of the lock-free windows, the name table, the hotspot parameter table, the
//! hazard-pointer publication and the per-second ring of would-be blocks: loom models of every
//! interleaving, and property tests against plain reference models.

mod loom_lease;
mod loom_name_table;
mod loom_param_table;
mod loom_publish;
mod loom_qps;
mod loom_ring;
mod loom_runs;
mod qps_model;
mod ring_model;
mod shadow_seconds;
