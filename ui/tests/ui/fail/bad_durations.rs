use sentinel_runtime::{sentinel, BlockError};

#[sentinel(breaker(error_count = 3, recovery = "5"))]
fn no_unit() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "5x"))]
fn unknown_unit() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "0s"))]
fn zero() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = 5))]
fn not_a_string() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "5s", window = "ten seconds"))]
fn bad_window() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "1500us"))]
fn finer_than_a_millisecond() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "1m30"))]
fn last_part_without_unit() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "3938453320844195178974243.14183759504d"))]
fn beyond_any_duration() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "1d1ms"))]
fn beyond_the_run_time_limit() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
