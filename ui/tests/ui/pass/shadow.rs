//! `shadow = true`: every rule the attribute declares is a shadow rule, evaluated and counted,
//! never enforced.
use sentinel_runtime::{metrics, sentinel, BlockError};

#[sentinel(resource = "ui-shadow-qps", qps = 2, shadow = true)]
fn watched() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(
    resource = "ui-shadow-all",
    qps = 1,
    window = "1m",
    concurrency = 1,
    breaker(error_count = 1, min_requests = 1, recovery = "5s"),
    hotspot(param = user, qps = 1),
    shadow = true,
    fallback = busy
)]
fn every_kind(user: u64) -> u64 {
    user
}

#[sentinel(resource = "ui-shadow-off", qps = 1, shadow = false)]
fn enforced() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "ui-shadow-async", concurrency = "adaptive", shadow = true)]
async fn adaptive() -> Result<u8, BlockError> {
    Ok(1)
}

fn busy(_: u64, _: BlockError) -> u64 {
    0
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    let _clock = sentinel_runtime::clock::MockClock::install();
    for _ in 0..5 {
        watched().unwrap();
        assert_eq!(every_kind(7), 7);
    }
    let shadow = |r: &str| metrics::snapshot(r).map(|s| (s.block_total, s.shadow_block_total));
    assert_eq!(shadow("ui-shadow-qps"), Some((0, 3)));
    assert_eq!(shadow("ui-shadow-all").map(|(blocked, _)| blocked), Some(0));
    enforced().unwrap();
    assert!(enforced().is_err(), "shadow = false: enforced");
    assert_eq!(adaptive().await.unwrap(), 1);
}
