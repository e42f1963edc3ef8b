use sentinel_runtime::{sentinel, BlockError};

#[sentinel(breaker(error_ratio = 0.5, error_count = 3, recovery = "5s"))]
fn two_strategies() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_ratio = 1.5, recovery = "5s"))]
fn ratio_out_of_range() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3))]
fn missing_recovery() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(recovery = "5s", probes = 2))]
fn no_strategy() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(slow_ratio = 0.5, recovery = "5s"))]
fn slow_ratio_without_slow_rt() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(slow_rt = "200ms", recovery = "5s"))]
fn slow_rt_without_slow_ratio() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 0, probes = 5000, min_requests = 0, recovery = "5s"))]
fn bad_numbers() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "5s", timeout = "1s"))]
fn unknown_breaker_argument() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker = 3)]
fn breaker_not_a_list() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
