use sentinel_runtime::{sentinel, BlockError};

#[sentinel("orders")]
fn place() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel("orders", qps = 10)]
fn list() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(100)]
fn count() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
