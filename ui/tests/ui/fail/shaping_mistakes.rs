use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10, warm_up = "10x")]
fn unknown_unit() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, max_wait = "0ms")]
fn zero_wait() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = "10s", cold_factor = 1)]
fn cold_factor_one() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = "10s", cold_factor = 0.5)]
fn cold_factor_below_one() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(max_wait = "500ms", concurrency = 3)]
fn max_wait_without_qps() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, cold_factor = 3)]
fn cold_factor_without_warm_up() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, relate = "writes", max_wait = "1s")]
fn relate_with_throttling() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, strict = "yes", window = 60)]
fn wrong_types() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = "10s", window = "1m")]
fn warm_up_with_a_minute_window() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
