//! `shadow` takes `true` or `false`, not a string or a number.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(resource = "shadow-str", qps = 10, shadow = "yes")]
fn quoted() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "shadow-num", concurrency = 2, shadow = 1)]
fn numbered() -> Result<(), BlockError> {
    Ok(())
}

fn main() {
    let _ = (quoted(), numbered());
}
