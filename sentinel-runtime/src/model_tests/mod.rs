//! Model tests of the lock-free windows and the name table: loom models of every interleaving, and property tests
//! against plain reference models.

mod loom_name_table;
mod loom_qps;
mod loom_ring;
mod qps_model;
mod ring_model;
