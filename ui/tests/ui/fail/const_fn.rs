use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10)]
const fn limit() -> Result<u32, BlockError> {
    Ok(1)
}

fn main() {}
