//! Issue "Hotspot limits", its speed targets, measured in paired rounds: a `#[sentinel]`
//! guarded call with one hotspot rule against governor's keyed `check_key`, over the same
//! 1 million keys, alternated round by round in one process.
//!
//! Why rounds and not only criterion's figures (`cargo bench -p sentinel-benches --bench runtime`): both loops are
//! bound by memory (1 million keys do not fit in the caches), and this class of machine moves
//! such a loop by up to 2x between minutes, as its neighbours load the memory. Criterion runs
//! one case after the other, so a ratio of two of its figures carries that drift. Here each
//! round runs both libraries back to back (which goes first alternates), so drift falls on
//! both alike; the figure that decides is the median of the rounds' ratios.
//!
//! Run: `cargo bench -p sentinel-benches --bench hotspot_paired` (about a minute). Optional arguments: the number
//! of rounds (default 15) and the calls per thread in a round (default 1 048 576, one walk
//! over the keys).

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Barrier;
use std::time::Instant;

use governor::{Quota, RateLimiter};

/// Keys: each thread walks 1 million distinct keys.
const KEYS: u64 = 1 << 20;

/// The guarded call of `benches/runtime.rs`: one hotspot rule over its argument, a static node.
#[sentinel_runtime::sentinel(
    resource = "paired-hot-attr",
    hotspot(param = key, qps = 1000000, capacity = 1000000)
)]
fn guarded_hot(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

/// The `i`th key of the walk, spread as user ids or addresses would be.
fn key(i: u64) -> u64 {
    (i % KEYS).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// How the threads of a case walk the keys.
#[derive(Clone, Copy)]
enum Walk {
    /// One thread.
    Alone,
    /// Two threads over the same keys in the same order (they race for each key's state).
    Contended,
    /// Two threads half the keys apart (different clients on different threads).
    Apart,
}

impl Walk {
    fn threads(self) -> u64 {
        match self {
            Walk::Alone => 1,
            Walk::Contended | Walk::Apart => 2,
        }
    }

    fn offset(self, thread: u64) -> u64 {
        match self {
            Walk::Alone | Walk::Contended => 0,
            Walk::Apart => thread * KEYS / 2,
        }
    }
}

/// Runs `op` over `calls` keys on each thread of `walk`, from key `first`, the threads released
/// together; returns the aggregate nanoseconds per call (wall time / all calls).
fn round(walk: Walk, first: u64, calls: u64, op: &(impl Fn(u64) + Sync)) -> f64 {
    let threads = walk.threads();
    let barrier = Barrier::new(threads as usize + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let start = first + walk.offset(t);
                    barrier.wait();
                    for i in start..start + calls {
                        op(key(i));
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().expect("a bench thread");
        }
        start.elapsed().as_nanos() as f64 / (threads * calls) as f64
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench -p sentinel-benches` passes `--bench`; the numbers are ours.
    let numbers: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = numbers.first().copied().unwrap_or(15).max(1);
    let calls = numbers.get(1).copied().unwrap_or(KEYS).max(1);

    let governor = RateLimiter::keyed(Quota::per_second(NonZeroU32::MAX));
    let sentinel = |k: u64| {
        black_box(guarded_hot(black_box(k))).expect("passes");
    };
    let governor_check = |k: u64| {
        black_box(governor.check_key(&k)).expect("passes");
    };
    // Both start with every key in their tables, as after a first walk.
    round(Walk::Alone, 0, KEYS, &sentinel);
    round(Walk::Alone, 0, KEYS, &governor_check);

    println!("hotspot, paired rounds: {rounds} rounds of {calls} calls per thread, 1M keys");
    println!(
        "{:<22} {:>12} {:>12} {:>14} {:>14} {:>8}",
        "case", "sentinel ns", "governor ns", "ratio median", "ratio min-max", "target"
    );
    let mut next = 0u64;
    for (name, walk, target) in [
        ("1 thread", Walk::Alone, 1.0),
        ("2 threads, contended", Walk::Contended, 1.5),
        ("2 threads, apart", Walk::Apart, 1.5),
    ] {
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            // Both libraries walk the same keys in a round; which goes first alternates.
            let (s, g) = if r % 2 == 0 {
                let s = round(walk, next, calls, &sentinel);
                (s, round(walk, next, calls, &governor_check))
            } else {
                let g = round(walk, next, calls, &governor_check);
                (round(walk, next, calls, &sentinel), g)
            };
            next = (next + calls) % KEYS;
            ours.push(s);
            theirs.push(g);
            // Throughput of ours over governor's (> 1: ours is faster).
            ratios.push(g / s);
        }
        let met = ratios.iter().filter(|&&r| r >= target).count();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        println!(
            "{:<22} {:>12.1} {:>12.1} {:>13.2}x {:>7.2}-{:.2}x {:>4.1}x: {met}/{rounds} rounds",
            name,
            median(&mut ours),
            median(&mut theirs),
            median(&mut ratios),
            lo,
            hi,
            target,
        );
    }
}
