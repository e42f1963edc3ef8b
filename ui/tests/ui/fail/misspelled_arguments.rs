use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qsp = 10, fallbak = busy, concurency = 2)]
fn place() -> u32 {
    1
}

fn busy(_: BlockError) -> u32 {
    0
}

#[sentinel(breaker(error_ratio = 0.5, recovry = "5s"))]
fn pay() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(error_ratio = 0.5)]
fn refund() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
