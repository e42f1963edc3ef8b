//! Cluster limits on a real redis-server and a real Redis Cluster.

// Support code shared by several modules (declared once: a file may be one module only).
#[path = "../support/redis_harness.rs"]
mod harness;

mod cluster_redis;
