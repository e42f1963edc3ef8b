//! Durations read as rule files read them (one grammar): compound, fractional, days, `_`
//! separators, and smaller units that make whole milliseconds.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10, window = "1m30s", max_wait = "1.5s")]
fn compound_and_fraction() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_ratio = 0.5, recovery = "1d", window = "1_500ms"))]
fn days_and_separators() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(slow_rt = "2000us", slow_ratio = 0.5, recovery = "1h 30m"))]
fn micros_and_spaces() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, warm_up = ".5m")]
fn leading_fraction() -> Result<(), BlockError> {
    Ok(())
}

pub fn main() {
    compound_and_fraction().unwrap();
    days_and_separators().unwrap();
    micros_and_spaces().unwrap();
    leading_fraction().unwrap();
}
