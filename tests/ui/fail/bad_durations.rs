use sentinel_runtime::{sentinel, BlockError};

#[sentinel(breaker(error_count = 3, recovery = "5"))]
fn no_unit() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(breaker(error_count = 3, recovery = "5d"))]
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

#[sentinel(breaker(error_count = 3, recovery = "1.5s"))]
fn fraction() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
