//! `strict = true` on a `hotspot(...)`: a burst that does not fit in the threshold, a
//! concurrency limit, a value that is not a boolean, a wait.
use sentinel_runtime::{sentinel, BlockError};

// At most 5 calls in any window, but 1 + 5 at once.
#[sentinel(hotspot(param = user, qps = 5, burst = 5, strict = true))]
fn burst_too_large(user: u64) -> Result<u64, BlockError> {
    Ok(user)
}

#[sentinel(
    hotspot(param = user, concurrency = 2, strict = true),
    hotspot(param = user, qps = 5, strict = "yes"),
    hotspot(param = user, qps = 5, strict = true, max_wait = "10ms")
)]
fn misplaced(user: u64) -> Result<u64, BlockError> {
    Ok(user)
}

fn main() {
    let _ = (burst_too_large(1), misplaced(1));
}
