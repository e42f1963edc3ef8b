//! A flaky downstream behind a circuit breaker, driven by the MockClock so the whole story takes
//! no real time: `cargo run --example breaker_demo`.
//!
//! The payment service fails from t = 2 s to t = 9 s. The breaker opens once half the calls in
//! its window fail, the fallback serves calls while it is open, probes find the service still
//! down (and reopen), and finally find it back (and close).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sentinel_runtime::breaker::on_state_change;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError};

/// Transitions reported by the listener, printed after the call that caused them.
static TRANSITIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Milliseconds since the demo started, as the flaky service sees them.
static NOW_MS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
enum PayError {
    Downstream,
}

#[sentinel(
    resource = "payments",
    breaker(error_ratio = 0.5, min_requests = 4, window = "2s", recovery = "3s", probes = 2),
    fallback = queue_for_later
)]
fn charge(order: u32) -> Result<String, PayError> {
    let t = NOW_MS.load(Ordering::Relaxed);
    if (2_000..9_000).contains(&t) {
        Err(PayError::Downstream) // the service is down
    } else {
        Ok(format!("order {order} charged"))
    }
}

fn queue_for_later(order: u32, err: BlockError) -> Result<String, PayError> {
    Ok(format!("order {order} queued by the fallback ({err})"))
}

fn main() {
    let clock = MockClock::install();
    on_state_change(|change| {
        let line = format!(
            "            >>> breaker of `{}`: {} -> {} (figure {:.2})",
            change.resource, change.from, change.to, change.figure
        );
        TRANSITIONS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    });
    let mut by_fallback = 0;
    for order in 1..=30 {
        let t = clock.elapsed().as_millis() as u64;
        NOW_MS.store(t, Ordering::Relaxed);
        let answer = charge(order);
        let line = match &answer {
            Ok(text) if text.contains("fallback") => {
                by_fallback += 1;
                text.clone()
            }
            Ok(text) => text.clone(),
            Err(e) => format!("order {order} failed: {e:?}"),
        };
        println!("t={:>5} ms  {line}", t);
        for transition in TRANSITIONS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            println!("{transition}");
        }
        clock.advance(Duration::from_millis(500));
    }
    let stats = metrics::snapshot("payments").expect("called");
    println!(
        "\nthe fallback served {by_fallback} of 30 calls; the breaker is {:?}",
        stats.circuit.expect("payments has a breaker")
    );
}
