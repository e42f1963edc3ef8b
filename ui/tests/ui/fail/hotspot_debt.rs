//! A `hotspot(...)` whose values could owe more than the run-time allows from idle (2^63 ns,
//! about 292 years): the run-time validation refuses such a rule, and the function would run
//! without its limit.
use sentinel_runtime::{sentinel, BlockError};

// One call a day per value, with a burst of 200000 days' worth.
#[sentinel(
    resource = "ui-hot-debt-burst",
    hotspot(param = user, qps = 1, window = "24h", burst = 200000)
)]
fn daily(user: u64) -> Result<u64, BlockError> {
    Ok(user)
}

// One call per million days per value: slower than one call per 292 years.
#[sentinel(
    resource = "ui-hot-debt-slow",
    hotspot(param = user, qps = 0.000001, window = "24h")
)]
fn rare(user: u64) -> Result<u64, BlockError> {
    Ok(user)
}

fn main() {
    let _ = (daily(1), rare(1));
}
