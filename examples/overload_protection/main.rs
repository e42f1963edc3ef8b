//! An adaptive concurrency limit following a downstream whose latency rises and falls.
//!
//! ```text
//! cargo run --example overload_protection
//! ```
//!
//! A simulated downstream (40 workers, a queue in front) is called by clients offering more
//! than it can take. Its service time is 10 ms, then 25 ms from 6 s to 14 s, then 10 ms again.
//! Every call enters `downstream` under `FlowRule::adaptive_concurrency`, and exits when the
//! downstream finishes it. Time is simulated with the mock clock, so the run takes a second or
//! two and prints the same figures every time: the limit every half second, with the goodput
//! and the average latency the callers saw.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{metrics, Entry, EntryBuilder, RuleError};

const MS: u64 = 1_000_000;
const WORKERS: usize = 40;

/// The downstream's service time at `t` (nanoseconds since the start).
fn service_time(t: u64) -> u64 {
    if (6_000 * MS..14_000 * MS).contains(&t) {
        25 * MS
    } else {
        10 * MS
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A client call arrives.
    Arrival,
    /// The downstream finishes call `id`, which started at the given time.
    Done(usize, u64),
    /// Print a line.
    Report,
}

fn main() -> Result<(), RuleError> {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency("downstream")])?;
    let start = clock.now_nanos();
    // Events by time, then by the order they were scheduled in.
    let mut events: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut schedule = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        seq += 1;
        events.push(Reverse((at, seq, event)));
    };
    let mut calls: Vec<Option<Entry>> = Vec::new();
    let mut queue: VecDeque<(usize, u64)> = VecDeque::new();
    let mut busy = 0usize;
    let (mut done, mut latency_sum, mut refused) = (0u64, 0u64, 0u64);
    schedule(&mut events, start, Event::Arrival);
    schedule(&mut events, start + 500 * MS, Event::Report);
    println!("  time  service  limit  goodput/s  latency  refused/s");
    while let Some(Reverse((at, _, event))) = events.pop() {
        let t = at - start;
        if t > 20_000 * MS {
            break;
        }
        if at > clock.now_nanos() {
            clock.advance(Duration::from_nanos(at - clock.now_nanos()));
        }
        match event {
            Event::Arrival => {
                // 6000 calls a second: more than 40 workers at 10 ms (4000/s) can serve.
                schedule(&mut events, at + 166_667, Event::Arrival);
                match EntryBuilder::new("downstream").enter() {
                    Ok(entry) => {
                        calls.push(Some(entry));
                        let id = calls.len() - 1;
                        if busy < WORKERS {
                            busy += 1;
                            schedule(&mut events, at + service_time(t), Event::Done(id, at));
                        } else {
                            queue.push_back((id, at));
                        }
                    }
                    Err(_) => refused += 1,
                }
            }
            Event::Done(id, started) => {
                drop(calls[id].take());
                done += 1;
                latency_sum += at - started;
                busy -= 1;
                if let Some((next, arrived)) = queue.pop_front() {
                    busy += 1;
                    schedule(
                        &mut events,
                        at + service_time(t),
                        Event::Done(next, arrived),
                    );
                }
            }
            Event::Report => {
                schedule(&mut events, at + 500 * MS, Event::Report);
                let limit = metrics::snapshot("downstream")
                    .and_then(|s| s.concurrency_limit)
                    .unwrap_or(0);
                let latency = latency_sum as f64 / done.max(1) as f64 / MS as f64;
                println!(
                    "{:>5.1}s  {:>5} ms  {:>5}  {:>9}  {:>5.1} ms  {:>9}  {}",
                    t as f64 / 1e9,
                    service_time(t) / MS,
                    limit,
                    done * 2,
                    latency,
                    refused * 2,
                    "#".repeat((limit / 4) as usize)
                );
                (done, latency_sum, refused) = (0, 0, 0);
            }
        }
    }
    rules::load_flow_rules(vec![])?;
    Ok(())
}
