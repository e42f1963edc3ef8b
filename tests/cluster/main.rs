//! Cluster limits on a real redis-server and a real Redis Cluster.

mod cluster_redis;
