use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = "100")]
fn a() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = orders)]
fn b() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(concurrency = 2.5)]
fn c() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "")]
fn d() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "   ")]
fn e() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
