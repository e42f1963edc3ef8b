use sentinel_runtime::{sentinel, BlockError};

// Both limits in one `hotspot(...)`.
#[sentinel(hotspot(param = user_id, qps = 10, concurrency = 2))]
fn both(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

// Beyond what `HotspotRule::validate` accepts.
#[sentinel(
    hotspot(param = user_id, qps = 10, capacity = 0),
    hotspot(param = user_id, qps = 10, capacity = 16777217),
    hotspot(param = user_id, qps = 10, window = "25h"),
    hotspot(param = user_id, qps = 10, max_wait = "2h"),
    hotspot(param = user_id, qps = -1)
)]
fn limits(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

// QPS-only options on a concurrency limit; a missing `param`, a missing limit.
#[sentinel(
    hotspot(param = user_id, concurrency = 2, burst = 5, max_wait = "10ms"),
    hotspot(qps = 10),
    hotspot(param = user_id),
    hotspot(param = "user_id", qps = 1, burts = 2),
    params = user_id,
    burst = 3
)]
fn options(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

fn main() {}

// A misspelled `hotspot(...)`.
#[sentinel(hotspt(param = user_id, qps = 1))]
fn misspelled(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}
