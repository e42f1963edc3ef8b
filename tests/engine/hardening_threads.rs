//! Hardening: the window bounds hold under threads while the clock moves (stale clock
//! readings, under real concurrency).
//!
//! Eight threads released by a barrier call `entry(r)` in a loop while the main thread moves the
//! MockClock forward in 1 ms steps, waiting between steps until the threads have made a few more
//! calls (each thread makes at most a few per clock reading), so that calls interleave with the
//! clock's moves. Every admitted entry records
//! `Entry::start_nanos()` (the time its pass is counted at) and the clock reading its thread took
//! just before entering. The bounds are checked exactly on the recorded start times; the same
//! checks on the raw readings are only reported (a call admitted late counts at its start time,
//! not at the reading its thread took before entering, so the raw readings may break the bounds).
//!
//! Every test installs the MockClock first: it fixes time and serialises the tests of this
//! binary, which share the process-wide rules and registry. Each test uses its own resource
//! names and unloads the rules it loaded.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const THREADS: usize = 8;
/// Calls the threads make (together) at least, at each clock reading, before the next step.
const CALLS_PER_STEP: u64 = 16;
/// Calls each thread makes at most at one clock reading (then it waits for the next step), so
/// that the main thread gets to move the clock and the run takes seconds, not minutes.
const CALLS_PER_THREAD_PER_STEP: u64 = 4;
/// How long a step may wait for the threads' calls before the test calls it stuck.
const STEP_DEADLINE: Duration = Duration::from_secs(20);

/// An admitted call: the clock reading its thread took just before entering, and its
/// `Entry::start_nanos()`, both relative to the mock clock's start.
#[derive(Clone, Copy, Debug)]
struct Pass {
    raw: u64,
    start: u64,
}

/// What a run recorded.
#[derive(Debug)]
struct Run {
    passes: Vec<Pass>,
    blocks: u64,
    /// Admitted calls whose start time is later than their thread's raw reading.
    late: usize,
    /// The mock clock's start (a whole hour, so every bucket boundary is a multiple of the
    /// bucket length from it).
    t0: u64,
    wall: Duration,
}

impl Run {
    fn starts(&self) -> Vec<u64> {
        self.passes.iter().map(|p| p.start).collect()
    }

    fn raws(&self) -> Vec<u64> {
        self.passes.iter().map(|p| p.raw).collect()
    }
}

/// `THREADS` threads call `entry(resource)` in a loop while the clock moves `steps` times by
/// 1 ms. The rules must be loaded and the clock installed by the caller.
fn hammer(clock: &MockClock, resource: &'static str, steps: u64) -> Run {
    let t0 = clock.now_nanos();
    assert_eq!(t0 % SECOND, 0, "the mock clock starts on a whole second");
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (barrier, stop, calls) = (barrier.clone(), stop.clone(), calls.clone());
            thread::spawn(move || {
                let mut passes = Vec::new();
                let mut blocks = 0u64;
                // The reading this thread made its last calls at, and how many.
                let (mut reading, mut at_reading) = (u64::MAX, 0);
                barrier.wait();
                while !stop.load(Ordering::Acquire) {
                    let raw = clock::now_nanos() - t0;
                    if raw != reading {
                        (reading, at_reading) = (raw, 0);
                    } else if at_reading == CALLS_PER_THREAD_PER_STEP {
                        thread::yield_now();
                        continue;
                    }
                    at_reading += 1;
                    match entry(resource) {
                        Ok(e) => passes.push(Pass {
                            raw,
                            start: e.start_nanos() - t0,
                        }),
                        Err(block) => {
                            assert_eq!(block.kind(), BlockKind::Flow, "{block}");
                            blocks += 1;
                        }
                    }
                    calls.fetch_add(1, Ordering::AcqRel);
                }
                (passes, blocks)
            })
        })
        .collect();
    let started = Instant::now();
    barrier.wait();
    for step in 0..steps {
        // Counted before the move: calls made at the new reading before this thread looks again
        // count towards it (each thread makes only a few per reading).
        let due = calls.load(Ordering::Acquire) + CALLS_PER_STEP;
        clock.advance(Duration::from_millis(1));
        let waiting = Instant::now();
        while calls.load(Ordering::Acquire) < due {
            if waiting.elapsed() > STEP_DEADLINE {
                stop.store(true, Ordering::Release);
                panic!(
                    "step {step}: the threads made {} of {CALLS_PER_STEP} calls in {STEP_DEADLINE:?}",
                    CALLS_PER_STEP + calls.load(Ordering::Acquire) - due
                );
            }
            thread::yield_now();
        }
    }
    stop.store(true, Ordering::Release);
    let mut run = Run {
        passes: Vec::new(),
        blocks: 0,
        late: 0,
        t0,
        wall: Duration::ZERO,
    };
    for w in workers {
        let (passes, blocks) = w.join().expect("worker thread");
        run.passes.extend(passes);
        run.blocks += blocks;
    }
    run.wall = started.elapsed();
    run.passes.sort_by_key(|p| (p.start, p.raw));
    run.late = run.passes.iter().filter(|p| p.start > p.raw).count();
    run
}

/// Sentinel's window: the most passes (at the relative times `times`) in `buckets` consecutive
/// buckets of `bucket` ns, over every bucket boundary; and the boundary (relative ns) where the
/// first maximum is.
fn max_in_sentinel_windows(times: &[u64], bucket: u64, buckets: u64) -> (u64, u64) {
    let mut per_bucket: BTreeMap<u64, u64> = BTreeMap::new();
    for t in times {
        *per_bucket.entry(t / bucket).or_default() += 1;
    }
    let last = per_bucket.keys().next_back().copied().unwrap_or(0);
    let mut best = (0, 0);
    for end in 1..=last + buckets {
        let sum: u64 = per_bucket
            .range(end.saturating_sub(buckets)..end)
            .map(|(_, n)| n)
            .sum();
        if sum > best.0 {
            best = (sum, end * bucket);
        }
    }
    best
}

/// The most passes in any true interval `[t, t + len)`, and the first `t` where it is.
fn max_in_true_intervals(times: &[u64], len: u64) -> (u64, u64) {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    let mut best = (0, 0);
    let mut end = 0;
    for (i, &t) in sorted.iter().enumerate() {
        while end < sorted.len() && sorted[end] < t + len {
            end += 1;
        }
        let n = (end - i) as u64;
        if n > best.0 {
            best = (n, t);
        }
    }
    best
}

/// Passes per second: (second relative to the mock's start, passes), seconds without passes
/// left out.
type PerSecond = Vec<(u64, u64)>;

/// Passes per second from `metrics::last_minute` and from the recorded start times.
fn per_second(resource: &str, run: &Run) -> (PerSecond, PerSecond) {
    let first = run.t0 / SECOND;
    let stats: Vec<(u64, u64)> = metrics::last_minute(resource)
        .expect("resource has a node")
        .iter()
        .filter(|s| s.pass > 0)
        .map(|s| (s.second - first, s.pass))
        .collect();
    let mut recorded: BTreeMap<u64, u64> = BTreeMap::new();
    for p in &run.passes {
        *recorded.entry(p.start / SECOND).or_default() += 1;
    }
    (stats, recorded.into_iter().collect())
}

fn summary(run: &Run, steps: u64) -> String {
    format!(
        "{THREADS} threads, {steps} steps of 1 ms, {:?} of wall time: {} passes, {} blocks; {} \
         passes start later than their thread's reading before entering",
        run.wall,
        run.passes.len(),
        run.blocks,
        run.late
    )
}

/// Default window, `qps = 100` in 10 buckets of 100 ms: at every bucket boundary the 10 buckets
/// ending there (the window Sentinel sums) hold at most 100 passes; the statistics count every
/// pass in the second of its start time.
#[test]
fn default_window_under_threads_never_holds_more_than_the_threshold() {
    const R: &str = "ht-default";
    const STEPS: u64 = 20_000;
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 100.0)]).unwrap();
    let run = hammer(&clock, R, STEPS);
    rules::load_flow_rules(vec![]).unwrap();

    let (max, at) = max_in_sentinel_windows(&run.starts(), 100 * MS, 10);
    let (raw_max, raw_at) = max_in_sentinel_windows(&run.raws(), 100 * MS, 10);
    let (true_max, true_at) = max_in_true_intervals(&run.starts(), SECOND);
    let (stats, recorded) = per_second(R, &run);
    let report = format!(
        "{}; most passes in 10 buckets of 100 ms: {max} (window ending at +{} ms); the same on \
         the raw readings: {raw_max} (ending at +{} ms); most in any true 1 s interval: \
         {true_max} (from +{} ms; the default window's bound is 2 x 100); passes per second \
         (second, passes) from last_minute {stats:?}, from start times {recorded:?}",
        summary(&run, STEPS),
        at / MS,
        raw_at / MS,
        true_at / MS
    );
    println!("{report}");
    assert!(
        run.passes.len() as u64 >= STEPS / 10 && run.blocks > 0,
        "enough calls: {report}"
    );
    assert!(max <= 100, "Sentinel's window over 100 passes: {report}");
    assert_eq!(
        max, 100,
        "the threads reached the threshold (else the check proves little): {report}"
    );
    assert_eq!(
        stats, recorded,
        "the statistics count each pass in the second of its start time: {report}"
    );
}

/// Strict window, `qps = 5` per 10 ms in 1 ms buckets: any true interval `[t, t + 10 ms)` holds
/// at most 5 passes; the statistics count every pass in the second of its start time.
#[test]
fn strict_window_under_threads_never_holds_more_than_the_threshold_in_any_interval() {
    const R: &str = "ht-strict";
    const STEPS: u64 = 10_000;
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 5.0)
        .window(Duration::from_millis(10), 10)
        .strict(true)])
    .unwrap();
    let run = hammer(&clock, R, STEPS);
    rules::load_flow_rules(vec![]).unwrap();

    let (max, at) = max_in_true_intervals(&run.starts(), 10 * MS);
    let (raw_max, raw_at) = max_in_true_intervals(&run.raws(), 10 * MS);
    let (stats, recorded) = per_second(R, &run);
    let report = format!(
        "{}; most passes in any true interval of 10 ms: {max} (from +{} ms); the same on the \
         raw readings: {raw_max} (from +{} ms); passes per second (second, passes) from \
         last_minute {stats:?}, from start times {recorded:?}",
        summary(&run, STEPS),
        at / MS,
        raw_at / MS
    );
    println!("{report}");
    assert!(
        run.passes.len() as u64 >= STEPS / 3 && run.blocks > 0,
        "enough calls: {report}"
    );
    assert!(
        max <= 5,
        "a true 10 ms interval holds over 5 passes: {report}"
    );
    assert_eq!(
        max, 5,
        "the threads reached the threshold (else the check proves little): {report}"
    );
    assert_eq!(
        stats, recorded,
        "the statistics count each pass in the second of its start time: {report}"
    );
}

/// The checks above can fail: they find a window over the threshold in made-up times.
#[test]
fn the_window_checks_detect_a_violation() {
    // 100 passes at +950 ms and 1 at +1050 ms: the 10 buckets ending at +1100 ms hold 101.
    let mut times = vec![950 * MS; 100];
    times.push(1_050 * MS);
    assert_eq!(
        max_in_sentinel_windows(&times, 100 * MS, 10),
        (101, 1_100 * MS)
    );
    // The 101st at +1900 ms instead: no window of 10 buckets holds it with the 100...
    times[100] = 1_900 * MS;
    assert_eq!(
        max_in_sentinel_windows(&times, 100 * MS, 10),
        (100, 1_000 * MS)
    );
    // ...but the true interval [+950 ms, +1950 ms) does.
    assert_eq!(max_in_true_intervals(&times, SECOND), (101, 950 * MS));
    // 6 passes within [+3 ms, +13 ms), none within any shorter run of 5.
    let times = [3, 5, 7, 9, 11, 12].map(|t| t * MS);
    assert_eq!(max_in_true_intervals(&times, 10 * MS), (6, 3 * MS));
    assert_eq!(max_in_true_intervals(&times, 9 * MS), (5, 3 * MS));
}
