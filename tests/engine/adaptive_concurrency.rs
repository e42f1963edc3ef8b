//! The adaptive concurrency limit through the public API, against a simulated server driven by
//! the mock clock: real entries, real exits, simulated time.
//!
//! The server has `workers` that each take `service` per call, with a FIFO queue in front;
//! clients offer twice its capacity. Every call enters the resource first (the adaptive rule
//! admits it or not) and exits when the server finishes it, at that simulated time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AdaptiveConcurrency, FlowRule};
use sentinel_runtime::{metrics, BlockKind, Entry, EntryBuilder};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// The server's shape over time: `(from, workers, service time)`, in nanoseconds.
struct Phases(Vec<(u64, usize, u64)>);

impl Phases {
    fn at(&self, t: u64) -> (usize, u64) {
        let mut current = (self.0[0].1, self.0[0].2);
        for &(from, workers, service) in &self.0 {
            if t >= from {
                current = (workers, service);
            }
        }
        current
    }

    fn capacity_per_second(&self, t: u64) -> f64 {
        let (workers, service) = self.at(t);
        workers as f64 * SECOND as f64 / service as f64
    }
}

/// What one simulated second showed.
#[derive(Debug)]
struct Second {
    /// Calls finished.
    goodput: u64,
    /// The server's capacity in that second.
    capacity: f64,
    /// The limit sampled every 10 ms.
    limits: Vec<u64>,
}

/// Runs the simulation for `seconds` and returns each second's figures.
fn simulate(resource: &str, clock: &MockClock, phases: &Phases, seconds: u64) -> Vec<Second> {
    enum Event {
        Arrival,
        Done(usize),
        Sample,
    }
    let start = clock.now_nanos();
    let mut events: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut payload: Vec<Event> = Vec::new();
    let mut seq = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, payload: &mut Vec<Event>, at: u64, e: Event| {
        payload.push(e);
        seq += 1;
        events.push(Reverse((at, seq, payload.len() - 1)));
    };
    let mut calls: Vec<Option<Entry>> = Vec::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut busy = 0usize;
    let mut out: Vec<Second> = (0..seconds)
        .map(|s| Second {
            goodput: 0,
            capacity: phases.capacity_per_second(s * SECOND),
            limits: Vec::new(),
        })
        .collect();
    push(&mut events, &mut payload, start, Event::Arrival);
    push(&mut events, &mut payload, start, Event::Sample);
    let end = start + seconds * SECOND;
    while let Some(Reverse((at, _, i))) = events.pop() {
        if at >= end {
            break;
        }
        let now = clock.now_nanos();
        if at > now {
            clock.advance(Duration::from_nanos(at - now));
        }
        let t = at - start;
        let (workers, service) = phases.at(t);
        match payload[i] {
            Event::Arrival => {
                // Twice the capacity, evenly spaced.
                let gap = (SECOND as f64 / (2.0 * phases.capacity_per_second(t))) as u64;
                push(&mut events, &mut payload, at + gap.max(1), Event::Arrival);
                match EntryBuilder::new(resource).enter() {
                    Ok(entry) => {
                        calls.push(Some(entry));
                        let id = calls.len() - 1;
                        if busy < workers {
                            busy += 1;
                            push(&mut events, &mut payload, at + service, Event::Done(id));
                        } else {
                            queue.push_back(id);
                        }
                    }
                    Err(e) => assert_eq!(e.kind(), BlockKind::Concurrency),
                }
            }
            Event::Done(id) => {
                drop(calls[id].take()); // the exit, at this simulated time
                out[(t / SECOND) as usize].goodput += 1;
                busy -= 1;
                while busy < workers {
                    let Some(next) = queue.pop_front() else { break };
                    busy += 1;
                    push(&mut events, &mut payload, at + service, Event::Done(next));
                }
            }
            Event::Sample => {
                push(&mut events, &mut payload, at + 10 * MS, Event::Sample);
                let limit = metrics::snapshot(resource)
                    .and_then(|s| s.concurrency_limit)
                    .expect("an adaptive limit");
                out[(t / SECOND) as usize].limits.push(limit);
            }
        }
    }
    out
}

fn report(name: &str, seconds: &[Second]) {
    println!("{name}: second, goodput / capacity, limit min..max");
    for (i, s) in seconds.iter().enumerate() {
        let (lo, hi) = (
            s.limits.iter().min().copied().unwrap_or(0),
            s.limits.iter().max().copied().unwrap_or(0),
        );
        println!(
            "  {i:>2}: {:>6} / {:>6.0} ({:>5.1}%), limit {lo}..{hi}",
            s.goodput,
            s.capacity,
            100.0 * s.goodput as f64 / s.capacity
        );
    }
}

/// Checks one phase `[from, to)` in whole seconds, the limit having had 2 s to settle: goodput
/// at least 90% of capacity in every second after settling, and the limit within ±10% of the
/// phase's settled median from then on (so the spread, max/min, stays within 20%), apart from
/// the readings of a probe of the minimum RTT (the limit pinned at `probe_limit`).
fn check_phase(seconds: &[Second], from: usize, to: usize) {
    let probe_limit = u64::from(AdaptiveConcurrency::default().probe_limit);
    let settled = &seconds[from + 2..to];
    for (i, s) in settled.iter().enumerate() {
        assert!(
            s.goodput as f64 >= 0.9 * s.capacity,
            "second {}: goodput {} under 90% of {}",
            from + 2 + i,
            s.goodput,
            s.capacity
        );
    }
    let mut limits: Vec<u64> = settled
        .iter()
        .flat_map(|s| s.limits.clone())
        .filter(|&l| l > probe_limit)
        .collect();
    limits.sort_unstable();
    let median = limits[limits.len() / 2] as f64;
    let (lo, hi) = (limits[0] as f64, limits[limits.len() - 1] as f64);
    assert!(
        lo >= 0.9 * median && hi <= 1.1 * median,
        "seconds {}..{to}: the limit ranged {lo}..{hi} around {median} (more than ±10%)",
        from + 2
    );
    assert!(hi / lo <= 1.2, "oscillation {lo}..{hi} over 20%");
}

#[test]
fn the_limit_follows_a_server_whose_capacity_halves() {
    let clock = MockClock::install();
    let resource = "adaptive-sim-halving";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    // 100 workers at 10 ms: 10 000 calls a second; then 50 workers.
    let phases = Phases(vec![(0, 100, 10 * MS), (10 * SECOND, 50, 10 * MS)]);
    let seconds = simulate(resource, &clock, &phases, 20);
    report("workers halve at 10 s", &seconds);
    check_phase(&seconds, 0, 10);
    check_phase(&seconds, 10, 20);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn the_limit_follows_a_server_whose_latency_doubles() {
    let clock = MockClock::install();
    let resource = "adaptive-sim-slower";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    // 100 workers at 10 ms, then at 20 ms: the same halving of capacity, seen as latency.
    let phases = Phases(vec![(0, 100, 10 * MS), (10 * SECOND, 100, 20 * MS)]);
    let seconds = simulate(resource, &clock, &phases, 20);
    report("service time doubles at 10 s", &seconds);
    check_phase(&seconds, 0, 10);
    check_phase(&seconds, 10, 20);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn failures_lower_the_limit_and_cancelled_calls_count_as_neither() {
    let clock = MockClock::install();
    let resource = "adaptive-drops";
    let settings = AdaptiveConcurrency {
        initial_limit: 100,
        min_limit: 10,
        max_limit: 200,
        ..AdaptiveConcurrency::default()
    };
    rules::load_flow_rules(vec![
        FlowRule::adaptive_concurrency(resource).adaptive(settings)
    ])
    .unwrap();
    let limit = || metrics::snapshot(resource).and_then(|s| s.concurrency_limit);
    drop(EntryBuilder::new(resource).enter().unwrap()); // the node is made on first use
    assert_eq!(limit(), Some(100));
    // Failed calls (an error at the exit) for a few windows lower the limit.
    for _ in 0..20 {
        for _ in 0..50 {
            let entry = EntryBuilder::new(resource).enter().unwrap();
            entry.set_error();
            clock.advance(Duration::from_micros(200));
            drop(entry);
        }
    }
    let lowered = limit().unwrap();
    assert!(lowered < 100, "failures lowered the limit to {lowered}");
    assert!(lowered >= 10, "never under min_limit");
    rules::load_flow_rules(vec![]).unwrap();
}

#[sentinel_runtime::sentinel(resource = "adaptive-cancelled", concurrency = "adaptive")]
async fn never_finishes() -> Result<(), sentinel_runtime::BlockError> {
    std::future::pending::<()>().await;
    Ok(())
}

#[test]
fn calls_cancelled_half_way_leave_the_limit_alone() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let clock = MockClock::install();
    // Loaded settings replace the attribute's: room to fall, so a miscount would show.
    let settings = AdaptiveConcurrency {
        initial_limit: 100,
        min_limit: 10,
        ..AdaptiveConcurrency::default()
    };
    rules::load_flow_rules(vec![
        FlowRule::adaptive_concurrency("adaptive-cancelled").adaptive(settings)
    ])
    .unwrap();
    let limit = || metrics::snapshot("adaptive-cancelled").and_then(|s| s.concurrency_limit);
    let mut cx = Context::from_waker(Waker::noop());
    let finished_call = || {
        let entry = EntryBuilder::new("adaptive-cancelled").enter().unwrap();
        clock.advance(Duration::from_millis(1));
        drop(entry);
    };
    // Calls that finish in 1 ms make that the no-load latency...
    for _ in 0..300 {
        finished_call();
    }
    assert_eq!(limit(), Some(100));
    // ...then every call is entered and dropped half-way 50 ms later: were any counted (as a
    // success or a failure), such response times would pull the limit down.
    for _ in 0..2_000 {
        let mut call = Box::pin(never_finishes());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(50));
        drop(call);
    }
    for _ in 0..300 {
        finished_call();
    }
    assert_eq!(limit(), Some(100), "untouched");
    let stats = metrics::snapshot("adaptive-cancelled").unwrap();
    assert_eq!((stats.pass_total, stats.concurrency), (2_600, 0));
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(limit(), Some(20), "back to the attribute's defaults");
}

#[sentinel_runtime::sentinel(resource = "adaptive-cut", concurrency = "adaptive")]
async fn cut_by_a_timeout() -> Result<(), sentinel_runtime::BlockError> {
    std::future::pending::<()>().await;
    Ok(())
}

#[test]
fn calls_cut_after_the_timeout_count_as_drops() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let clock = MockClock::install();
    // An outer timeout drops calls at 50 ms; the limit's own timeout is 20 ms.
    let settings = AdaptiveConcurrency {
        initial_limit: 100,
        min_limit: 10,
        timeout: Some(Duration::from_millis(20)),
        ..AdaptiveConcurrency::default()
    };
    rules::load_flow_rules(vec![
        FlowRule::adaptive_concurrency("adaptive-cut").adaptive(settings)
    ])
    .unwrap();
    let limit = || metrics::snapshot("adaptive-cut").and_then(|s| s.concurrency_limit);
    let mut cx = Context::from_waker(Waker::noop());
    let mut drop_after = |ms| {
        let mut call = Box::pin(cut_by_a_timeout());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(ms));
        drop(call);
    };
    // Cut within the timeout (a client that went away): not samples.
    for _ in 0..300 {
        drop_after(10);
    }
    assert_eq!(limit(), Some(100), "untouched");
    // Cut after it: drops, which shrink the limit.
    for _ in 0..300 {
        drop_after(50);
    }
    let after = limit().unwrap();
    rules::load_flow_rules(vec![]).unwrap();
    assert!(after < 100, "the limit fell: {after}");
}

#[sentinel_runtime::sentinel(resource = "adaptive-attribute", concurrency = "adaptive")]
fn attributed(clock: &MockClock, took: Duration) -> Result<(), sentinel_runtime::BlockError> {
    clock.advance(took);
    Ok(())
}

#[test]
fn the_attribute_measures_the_minimum_rtt_with_the_default_settings() {
    let clock = MockClock::install();
    let stats = || metrics::snapshot("adaptive-attribute");
    // One call at a time, 5 ms each: a window of 100 ms holds 20 of them.
    for _ in 0..30 {
        attributed(&clock, Duration::from_millis(5)).unwrap();
    }
    let s = stats().unwrap();
    assert_eq!(
        s.concurrency_limit,
        Some(20),
        "the default initial limit, unused: held"
    );
    assert_eq!(s.adaptive_min_rtt, Some(Duration::from_millis(5)));
    // The first window opened at the first exit (5 ms) and closed at the first exit 100 ms
    // later (105 ms); the last call ended at 150 ms.
    assert_eq!(s.adaptive_min_rtt_age, Some(Duration::from_millis(45)));
    // A loaded rule's settings replace the attribute's defaults.
    let settings = AdaptiveConcurrency {
        initial_limit: 50,
        probe_limit: 2,
        ..AdaptiveConcurrency::default()
    };
    rules::load_flow_rules(vec![
        FlowRule::adaptive_concurrency("adaptive-attribute").adaptive(settings)
    ])
    .unwrap();
    let s = stats().unwrap();
    assert_eq!(s.concurrency_limit, Some(50));
    assert_eq!(s.adaptive_min_rtt, None, "a new limit measures again");
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(stats().unwrap().concurrency_limit, Some(20));
}

#[test]
fn probes_under_eight_threads_leak_nothing_and_always_end() {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Barrier;
    const THREADS: usize = 8;
    const CALLS: u64 = 1_000;
    let clock = MockClock::install();
    let resource = "adaptive-threads";
    let settings = AdaptiveConcurrency {
        sample_window: Duration::from_millis(10),
        min_rtt_interval: Duration::from_millis(200),
        ..AdaptiveConcurrency::default()
    };
    rules::load_flow_rules(vec![
        FlowRule::adaptive_concurrency(resource).adaptive(settings)
    ])
    .unwrap();
    let probe_limit = u64::from(settings.probe_limit);
    let limit = || metrics::snapshot(resource).and_then(|s| s.concurrency_limit);
    drop(EntryBuilder::new(resource).enter().unwrap()); // the node is made on first use
    let start = clock.now_nanos();
    let finished = AtomicUsize::new(0);
    let blocked = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS + 1);
    let (mut readings, mut pinned_readings) = (0u64, 0u64);
    std::thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (finished, blocked, barrier) = (&finished, &blocked, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mut done = 0;
                let mut attempts = 0u64;
                while done < CALLS {
                    attempts += 1;
                    assert!(attempts < 10_000_000, "stuck: {done} calls done");
                    match EntryBuilder::new(resource).enter() {
                        Ok(entry) => {
                            // Held for 1 ms of the clock the main thread advances during the
                            // first 100 ms (the first window's RTT, the minimum until a probe,
                            // is then 1-2 ms), then for 3 to 6 ms: the windows after show
                            // queueing, so periodic probes are due (with calls of 1 to 4 ms
                            // throughout, a first window that happened to be slow left no
                            // later one over it, and no probe ran).
                            let now = sentinel_runtime::clock::now_nanos();
                            let hold = if now < start + 100 * MS {
                                1
                            } else {
                                3 + (t + done) % 4
                            };
                            let until = now + hold * MS;
                            while sentinel_runtime::clock::now_nanos() < until {
                                std::thread::yield_now();
                            }
                            drop(entry);
                            done += 1;
                        }
                        Err(e) => {
                            assert_eq!(e.kind(), BlockKind::Concurrency);
                            blocked.fetch_add(1, Ordering::Relaxed);
                            std::thread::yield_now();
                        }
                    }
                }
                finished.fetch_add(1, Ordering::Release);
            });
        }
        barrier.wait();
        while finished.load(Ordering::Acquire) < THREADS {
            clock.advance(Duration::from_millis(1));
            let l = limit().unwrap();
            assert!(
                (1..=probe_limit).contains(&l) || (20..=200).contains(&l),
                "limit {l}"
            );
            readings += 1;
            pinned_readings += u64::from(l <= probe_limit);
            for _ in 0..8 {
                std::thread::yield_now();
            }
        }
    });
    println!(
        "{readings} ms, {pinned_readings} of them pinned by a probe, {} calls blocked",
        blocked.into_inner()
    );
    assert!(pinned_readings > 0, "no probe ran");
    let stats = metrics::snapshot(resource).unwrap();
    assert_eq!(stats.concurrency, 0, "every exit released");
    assert_eq!(stats.complete_total, THREADS as u64 * CALLS + 1);
    // Calls one at a time for a second: any probe in progress ends.
    for _ in 0..500 {
        if let Ok(entry) = EntryBuilder::new(resource).enter() {
            clock.advance(Duration::from_millis(2));
            drop(entry);
        }
    }
    assert!(limit().unwrap() >= 20, "stuck at {:?}", limit());
    rules::load_flow_rules(vec![]).unwrap();
}
