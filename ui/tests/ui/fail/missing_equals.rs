use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps)]
fn f() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
