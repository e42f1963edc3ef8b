use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qpss = 10)]
fn f() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
