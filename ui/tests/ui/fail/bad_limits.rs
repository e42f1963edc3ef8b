use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 0)]
fn zero() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = -5)]
fn negative() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 1e400)]
fn infinite() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(concurrency = 0)]
fn no_room() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(concurrency = -1)]
fn negative_room() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
