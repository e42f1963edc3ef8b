//! Values the attribute parses but whose rule the run-time validation would refuse (and then
//! drop): each is refused at compile time, at the value.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 1, max_wait = "2h", fallback = busy)]
fn wait_too_long() -> u8 {
    1
}

#[sentinel(qps = 10, max_wait = "3600001ms")]
fn wait_one_ms_too_long() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = "1441m", cold_factor = 100.5)]
fn warm_up_too_long_and_too_cold() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = "10s", cold_factor = 1000)]
fn too_cold() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, window = "4294967296ms")]
fn window_too_long() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 2147483648, concurrency = 2147483648)]
fn thresholds_too_high() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 3e9)]
fn qps_float_too_high() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(
    error_count = 1,
    recovery = "86400001ms",
    min_requests = 1000000001,
    probes = 1001,
    window = "1200h"
))]
fn breaker_beyond_limits() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(slow_rt = "0ms", slow_ratio = 0.5, recovery = "48h"))]
fn slow_rt_zero() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(slow_rt = "5000000h", slow_ratio = -0.1, recovery = "5s"))]
fn slow_rt_too_long_and_negative_ratio() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_ratio = 1.01, recovery = "99999999999999999999h"))]
fn ratio_too_high_and_recovery_overflows() -> Result<(), BlockError> {
    Ok(())
}

fn busy(_: BlockError) -> u8 {
    0
}

fn main() {}
