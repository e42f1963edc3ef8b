use sentinel_runtime::{sentinel, BlockError};

#[sentinel(inbound = 1)]
fn inbound_not_a_bool() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(concurrency = "auto")]
fn unknown_concurrency_mode() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(concurrency = 2.5)]
fn fractional_concurrency() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
