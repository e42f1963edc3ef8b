//! Tokio tasks calling an `async fn` guarded with `concurrency = 3` and an async fallback:
//! `cargo run --example async_service`.

use std::time::Duration;

use sentinel_runtime::{metrics, sentinel, BlockError};

/// A slow downstream call: at most 3 run at once.
#[sentinel(resource = "inventory", concurrency = 3, fallback = from_cache)]
async fn stock_level(item: u32) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    format!("item {item}: 42 in stock (live)")
}

/// Served while the downstream is saturated; an `async fn` fallback is awaited.
async fn from_cache(item: u32, err: BlockError) -> String {
    tokio::task::yield_now().await;
    format!("item {item}: ~40 in stock (cached, {:?})", err.kind())
}

#[tokio::main]
async fn main() {
    for round in 1..=2 {
        println!("round {round}: 8 concurrent requests");
        let tasks: Vec<_> = (1..=8).map(|i| tokio::spawn(stock_level(i))).collect();
        // While the first three are inside, the snapshot shows them.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let inside = metrics::snapshot("inventory").map_or(0, |s| s.concurrency);
        println!("  inside the guarded function now: {inside}");
        let mut live = 0;
        for task in tasks {
            let answer = task.await.expect("the task does not panic");
            live += usize::from(answer.contains("live"));
            println!("  {answer}");
        }
        println!("  {live} live, {} from the cache\n", 8 - live);
    }
    let stats = metrics::snapshot("inventory").expect("called");
    println!(
        "after both rounds: concurrency {}, average response {:.0} ms",
        stats.concurrency, stats.avg_rt_ms
    );
}
