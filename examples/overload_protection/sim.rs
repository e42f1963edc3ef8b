//! The overload scenario, simulated on the mock clock: shared by `cargo run --example
//! overload_protection` (which prints it) and `tests/engine/adaptive_overload.rs` (which asserts it).
//!
//! A downstream has [`WORKERS`] workers with a FIFO queue in front of them. Clients offer
//! [`OFFERED_PER_SECOND`] calls a second, evenly spaced: more than the downstream can serve.
//! Every call enters the resource first (the adaptive limit admits it or not) and exits when a
//! worker finishes it, at that simulated time. A call's service time is the one in force when a
//! worker takes it ([`service_time`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, BlockKind, Entry, EntryBuilder};

pub const MS: u64 = 1_000_000;
pub const SECOND: u64 = 1_000 * MS;
/// The downstream's workers.
pub const WORKERS: usize = 40;
/// What the clients offer.
pub const OFFERED_PER_SECOND: u64 = 6_000;
/// The spike: the service time is 25 ms from 6 s to 14 s, 10 ms before and after.
pub const SPIKE: (u64, u64) = (6 * SECOND, 14 * SECOND);

/// The scenario's service time at `t` (nanoseconds since the start).
pub fn service_time(t: u64) -> u64 {
    if (SPIKE.0..SPIKE.1).contains(&t) {
        25 * MS
    } else {
        10 * MS
    }
}

/// A downstream and its clients.
#[derive(Clone, Copy)]
pub struct Scenario {
    pub workers: usize,
    pub offered_per_second: u64,
    /// The service time at `t` (nanoseconds since the start).
    pub service: fn(u64) -> u64,
    /// Whether a call finishing at `t` fails (its entry records an error).
    pub fails: fn(u64) -> bool,
}

impl Scenario {
    /// The scenario: [`WORKERS`], [`OFFERED_PER_SECOND`], [`service_time`], no failures.
    pub const SPIKE: Scenario = Scenario {
        workers: WORKERS,
        offered_per_second: OFFERED_PER_SECOND,
        service: service_time,
        fails: |_| false,
    };
}

/// What the callers saw over a stretch of time `[from, to)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Figures {
    pub from: u64,
    pub to: u64,
    /// Calls finished.
    pub done: u64,
    /// Their latencies (admission to finish) added up.
    pub latency_sum: u64,
    /// Calls refused by the limit.
    pub refused: u64,
    /// The limit, read every millisecond: highest, lowest, and the last reading.
    pub highest_limit: u64,
    pub lowest_limit: u64,
    pub last_limit: u64,
    /// Milliseconds the limit read `probe_limit` or lower (pinned by a probe).
    pub pinned_ms: u64,
    /// The service time at the start, and what the downstream can finish per second.
    pub service: u64,
    pub capacity: f64,
}

impl Figures {
    fn new(from: u64, to: u64, scenario: &Scenario) -> Figures {
        let service = (scenario.service)(from);
        Figures {
            from,
            to,
            lowest_limit: u64::MAX,
            service,
            capacity: scenario.workers as f64 * SECOND as f64 / service as f64,
            ..Figures::default()
        }
    }

    pub fn seconds(&self) -> f64 {
        (self.to - self.from) as f64 / SECOND as f64
    }

    /// Calls finished per second.
    pub fn goodput(&self) -> f64 {
        self.done as f64 / self.seconds()
    }

    /// The average latency of the finished calls, in nanoseconds.
    pub fn latency(&self) -> f64 {
        self.latency_sum as f64 / self.done.max(1) as f64
    }
}

/// One probe, as the limit showed it: pinned from `start` for `length`, and the minimum RTT it
/// measured (or kept).
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub start: u64,
    pub length: u64,
    pub min_rtt: Duration,
}

/// The whole run: the figures of each requested stretch, and every probe.
#[derive(Debug)]
pub struct Run {
    pub stretches: Vec<Figures>,
    pub probes: Vec<Probe>,
}

/// Runs `scenario` on `resource` (an adaptive concurrency rule must be in force on it) for
/// `seconds`, gathering [`Figures`] for each `[from, to)` in `stretches` (nanoseconds since the
/// start; they may overlap). `probe_limit` tells probes apart in the limit's readings.
pub fn run(
    scenario: &Scenario,
    resource: &str,
    clock: &MockClock,
    seconds: u64,
    stretches: &[(u64, u64)],
    probe_limit: u64,
) -> Run {
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Event {
        /// A client call arrives.
        Arrival,
        /// A worker finishes call `id`, admitted at the given time.
        Done(usize, u64),
        /// Read the limit.
        Read,
    }
    let start = clock.now_nanos();
    let end = start + seconds * SECOND;
    // Events by time, then by the order they were scheduled in.
    let mut events: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut schedule = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        seq += 1;
        events.push(Reverse((at, seq, event)));
    };
    let mut calls: Vec<Option<Entry>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut queue: VecDeque<(usize, u64)> = VecDeque::new();
    let mut busy = 0usize;
    let mut out: Vec<Figures> = stretches
        .iter()
        .map(|&(from, to)| Figures::new(from, to, scenario))
        .collect();
    let mut probes: Vec<Probe> = Vec::new();
    let mut pinned_since: Option<u64> = None;
    let gap = SECOND / scenario.offered_per_second;
    let workers = scenario.workers;
    schedule(&mut events, start, Event::Arrival);
    schedule(&mut events, start, Event::Read);
    while let Some(Reverse((at, _, event))) = events.pop() {
        if at >= end {
            break;
        }
        let now = clock.now_nanos();
        if at > now {
            clock.advance(Duration::from_nanos(at - now));
        }
        let t = at - start;
        let inside = |f: &Figures| (f.from..f.to).contains(&t);
        match event {
            Event::Arrival => {
                schedule(&mut events, at + gap, Event::Arrival);
                match EntryBuilder::new(resource).enter() {
                    Ok(entry) => {
                        let id = match free.pop() {
                            Some(id) => {
                                calls[id] = Some(entry);
                                id
                            }
                            None => {
                                calls.push(Some(entry));
                                calls.len() - 1
                            }
                        };
                        if busy < workers {
                            busy += 1;
                            schedule(&mut events, at + (scenario.service)(t), Event::Done(id, at));
                        } else {
                            queue.push_back((id, at));
                        }
                    }
                    Err(e) => {
                        assert_eq!(e.kind(), BlockKind::Concurrency);
                        out.iter_mut()
                            .filter(|f| inside(f))
                            .for_each(|f| f.refused += 1);
                    }
                }
            }
            Event::Done(id, admitted) => {
                if let Some(entry) = calls[id].take() {
                    if (scenario.fails)(t) {
                        entry.set_error();
                    }
                    drop(entry); // the exit, at this simulated time
                }
                free.push(id);
                for f in out.iter_mut().filter(|f| inside(f)) {
                    f.done += 1;
                    f.latency_sum += at - admitted;
                }
                busy -= 1;
                if let Some((next, admitted)) = queue.pop_front() {
                    busy += 1;
                    schedule(
                        &mut events,
                        at + (scenario.service)(t),
                        Event::Done(next, admitted),
                    );
                }
            }
            Event::Read => {
                schedule(&mut events, at + MS, Event::Read);
                let stats = metrics::snapshot(resource).expect("the resource exists");
                let limit = stats.concurrency_limit.expect("an adaptive limit");
                let pinned = limit <= probe_limit;
                for f in out.iter_mut().filter(|f| inside(f)) {
                    f.highest_limit = f.highest_limit.max(limit);
                    f.lowest_limit = f.lowest_limit.min(limit);
                    f.last_limit = limit;
                    f.pinned_ms += u64::from(pinned);
                }
                match (pinned, pinned_since) {
                    (true, None) => pinned_since = Some(t),
                    (false, Some(since)) => {
                        pinned_since = None;
                        probes.push(Probe {
                            start: since,
                            length: t - since,
                            min_rtt: stats.adaptive_min_rtt.unwrap_or_default(),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    // Leave nothing inside for the next user of the resource.
    drop(calls);
    Run {
        stretches: out,
        probes,
    }
}
