//! The README's main command: `cargo run --example quickstart`.
//!
//! A function guarded with `qps = 10` is called about 40 times a second for three seconds; each
//! second prints how many calls passed and how many the fallback served, from
//! `metrics::snapshot`, then a summary.

use std::time::{Duration, Instant};

use sentinel_runtime::{metrics, sentinel, BlockError};

#[sentinel(resource = "quickstart", qps = 10, fallback = busy)]
fn handle(request: u32) -> String {
    format!("served request {request}")
}

fn busy(request: u32, err: BlockError) -> String {
    format!("request {request} rejected: {err}")
}

fn main() {
    let start = Instant::now();
    let mut served = 0;
    let mut rejected = 0;
    let mut last_rejection = String::new();
    let mut next_report = Duration::from_secs(1);
    let mut request = 0;
    println!("calling a `qps = 10` function about 40 times a second for 3 seconds\n");
    while next_report <= Duration::from_secs(3) {
        request += 1;
        let answer = handle(request);
        if answer.starts_with("served") {
            served += 1;
        } else {
            rejected += 1;
            last_rejection = answer;
        }
        if start.elapsed() >= next_report {
            let stats = metrics::snapshot("quickstart").expect("the function has been called");
            println!(
                "second {}: passed {:>2}, blocked {:>2} in the last second (concurrency {})",
                next_report.as_secs(),
                stats.pass_qps,
                stats.block_qps,
                stats.concurrency
            );
            next_report += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    println!("\nsummary: {request} calls, {served} served, {rejected} served by the fallback");
    println!("last fallback answer: {last_rejection}");
}
