//! `inbound = true` and `concurrency = "adaptive"`, sync and async, alone and together.
#![deny(warnings)]

use sentinel_runtime::{sentinel, BlockError};

#[sentinel(inbound = true)]
fn served() -> Result<u32, BlockError> {
    Ok(1)
}

#[sentinel(inbound = false, qps = 10)]
fn not_served() -> Result<u32, BlockError> {
    Ok(1)
}

#[sentinel(concurrency = "adaptive")]
fn database() -> Result<u32, BlockError> {
    Ok(2)
}

#[sentinel(resource = "pass-both", inbound = true, concurrency = "adaptive", qps = 100)]
async fn handler(id: u32) -> Result<u32, BlockError> {
    Ok(id)
}

pub fn main() {
    let _ = (served(), not_served(), database());
    let _ = handler(3);
}
