use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10, resource = "a", qps = 20)]
fn f() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
