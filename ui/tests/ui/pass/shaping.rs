//! Every traffic-shaping option of the attribute.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 100, warm_up = "10s", cold_factor = 3)]
fn warm() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 100, warm_up = "10s")]
fn warm_default_factor() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 20, max_wait = "500ms", fallback = busy)]
fn paced() -> u8 {
    1
}

#[sentinel(qps = 20, max_wait = "500ms", warm_up = "5s", cold_factor = 2.5)]
async fn paced_warm() -> Result<u8, BlockError> {
    Ok(1)
}

#[sentinel(qps = 50, relate = "writes")]
fn reads() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 1000, window = "1h", strict = true)]
fn hourly() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10, window = "1m", strict = false, concurrency = 2)]
fn per_minute() -> Result<(), BlockError> {
    Ok(())
}

fn busy(_: BlockError) -> u8 {
    0
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    warm().unwrap();
    warm_default_factor().unwrap();
    assert_eq!(paced(), 1);
    assert_eq!(paced_warm().await.unwrap(), 1);
    reads().unwrap();
    hourly().unwrap();
    per_minute().unwrap();
}
