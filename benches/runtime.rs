//! Entry + exit through the runtime, against governor and a naive `Mutex` window, in one run.
//!
//! Two-thread cases report the aggregate time per operation: wall time / (2 x iterations), so
//! a lower figure is a higher total throughput and 1-thread vs 2-thread figures compare directly.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use governor::{Quota, RateLimiter};
use sentinel_runtime::__private::{DefaultRule, FlowSpec, StaticNode};
use sentinel_runtime::clock::now_nanos;

static QPS_NODE: StaticNode = StaticNode::new("bench-qps", &[DefaultRule::Qps(2e9)]);
static STATS_NODE: StaticNode = StaticNode::new("bench-stats", &[]);

/// A QPS rule high enough that every call passes, with the given shaping.
const fn shaped(warm_up_ms: u64, max_wait_ms: Option<u64>) -> FlowSpec {
    FlowSpec {
        threshold: 2e9,
        window_ms: 1_000,
        strict: false,
        warm_up_ms,
        cold_factor: 3.0,
        max_wait_ms,
        relate: None,
    }
}

static WARM_UP_NODE: StaticNode =
    StaticNode::new("bench-warm-up", &[DefaultRule::Flow(shaped(10_000, None))]);
/// 2e9 per second: turns 0.5 ns apart, so a caller never waits; this measures the pacing CAS.
static THROTTLE_NODE: StaticNode =
    StaticNode::new("bench-throttle", &[DefaultRule::Flow(shaped(0, Some(500)))]);

/// Keys for the keyed cases: each thread walks 1 million distinct keys.
const KEYS: u64 = 1 << 20;

thread_local! {
    static NEXT_KEY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn next_key() -> u64 {
    NEXT_KEY.with(|k| {
        let key = k.get();
        k.set((key + 1) % KEYS);
        // Spread the keys (as user ids or addresses would be).
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    })
}

/// The simplest correct windowed limiter: one lock around ten 100 ms buckets.
/// A guarded call with one hotspot rule over its argument (a static node: no lookup by name).
#[sentinel_runtime::sentinel(
    resource = "bench-hot-attr",
    hotspot(param = key, qps = 1000000, capacity = 1000000)
)]
fn guarded_hot(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

/// The attribute's QPS call (the "guarded call"), every call admitted.
#[sentinel_runtime::sentinel(resource = "bench-qps-attr", qps = 2000000000)]
fn guarded_qps() -> Result<(), sentinel_runtime::BlockError> {
    Ok(())
}

/// The attribute with no rule: statistics only.
#[sentinel_runtime::sentinel(resource = "bench-stats-attr")]
fn guarded_stats() -> Result<(), sentinel_runtime::BlockError> {
    Ok(())
}

struct NaiveWindow {
    inner: Mutex<NaiveState>,
    limit: u64,
}

#[derive(Default)]
struct NaiveState {
    periods: [u64; 10],
    pass: [u64; 10],
    complete: [u64; 10],
    rt: [u64; 10],
}

impl NaiveWindow {
    fn enter(&self) -> Option<u64> {
        let now = now_nanos();
        let period = now / 100_000_000;
        let mut s = self.inner.lock().unwrap();
        let i = (period % 10) as usize;
        if s.periods[i] != period {
            s.periods[i] = period;
            s.pass[i] = 0;
            s.complete[i] = 0;
            s.rt[i] = 0;
        }
        let sum: u64 = (0..10)
            .filter(|&j| period - s.periods[j] < 10)
            .map(|j| s.pass[j])
            .sum();
        if sum >= self.limit {
            return None;
        }
        s.pass[i] += 1;
        Some(now)
    }

    fn exit(&self, start: u64) {
        let now = now_nanos();
        let i = ((now / 100_000_000) % 10) as usize;
        let mut s = self.inner.lock().unwrap();
        s.complete[i] += 1;
        s.rt[i] += now - start;
    }
}

/// Where the threads of the next multi-thread sample start in the keyed cases' key sequence.
/// Each sample's threads are new, so without it each sample would walk the first `iters` keys
/// again (a working set that can fit in the caches) instead of all 1 million in turn.
static THREAD_KEYS_START: AtomicU64 = AtomicU64::new(0);

/// Runs `op` `iters` times on each of `threads` threads released together; returns the
/// aggregate time per operation (scaled by `iters`, as criterion expects). The threads walk
/// the keyed cases' keys in step from where the previous sample stopped (every thread the same
/// keys in the same order, as before: two threads race for each key's state within
/// nanoseconds).
fn on_threads(threads: u32, iters: u64, op: &(impl Fn() + Sync)) -> Duration {
    on_threads_from(threads, iters, 0, op)
}

/// [`on_threads`], each thread starting `KEYS / threads` keys after the previous one: the
/// threads walk different keys (as requests of different clients on different threads do).
fn on_threads_apart(threads: u32, iters: u64, op: &(impl Fn() + Sync)) -> Duration {
    on_threads_from(threads, iters, KEYS / u64::from(threads), op)
}

fn on_threads_from(threads: u32, iters: u64, apart: u64, op: &(impl Fn() + Sync)) -> Duration {
    let barrier = Barrier::new(threads as usize + 1);
    let first_key = THREAD_KEYS_START.load(Relaxed);
    THREAD_KEYS_START.store((first_key + iters) % KEYS, Relaxed);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..u64::from(threads))
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    NEXT_KEY.with(|k| k.set((first_key + t * apart) % KEYS));
                    barrier.wait();
                    for _ in 0..iters {
                        op();
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().unwrap();
        }
        start.elapsed() / threads
    })
}

fn bench(c: &mut Criterion) {
    let governor = RateLimiter::direct(Quota::per_second(NonZeroU32::MAX));
    let naive = NaiveWindow {
        inner: Mutex::new(NaiveState::default()),
        limit: u64::MAX,
    };
    let sentinel_qps = || drop(black_box(QPS_NODE.enter().unwrap()));
    let sentinel_stats = || drop(black_box(STATS_NODE.enter().unwrap()));
    let sentinel_warm_up = || drop(black_box(WARM_UP_NODE.enter().unwrap()));
    let sentinel_throttle = || drop(black_box(THROTTLE_NODE.enter().unwrap()));
    let sentinel_by_name = || drop(black_box(sentinel_runtime::entry("bench-by-name").unwrap()));
    sentinel_runtime::rules::load_flow_rules(vec![sentinel_runtime::rules::FlowRule::qps(
        "bench-by-name-qps",
        2e9,
    )])
    .unwrap();
    // Other resources in the registry, so a lookup is not alone in its table.
    for i in 0..1_000 {
        drop(sentinel_runtime::entry(&format!("bench-filler-{i}")));
    }
    let sentinel_by_name_qps = || {
        drop(black_box(
            sentinel_runtime::entry("bench-by-name-qps").unwrap(),
        ))
    };
    let governor_check = || {
        black_box(governor.check()).unwrap();
    };
    // Keyed: one limit per key over a million keys, high enough that every call passes.
    sentinel_runtime::rules::load_hotspot_rules(vec![sentinel_runtime::rules::HotspotRule::qps(
        "bench-hot",
        0,
        1e6,
    )
    .capacity(KEYS as usize)])
    .unwrap();
    let governor_keyed = RateLimiter::keyed(Quota::per_second(NonZeroU32::MAX));
    let sentinel_hot = || {
        let key = next_key();
        drop(black_box(
            sentinel_runtime::EntryBuilder::new("bench-hot")
                .param(&key)
                .enter()
                .unwrap(),
        ));
    };
    let sentinel_qps_attr = || black_box(guarded_qps()).unwrap();
    let sentinel_stats_attr = || black_box(guarded_stats()).unwrap();
    let sentinel_hot_attr = || {
        black_box(guarded_hot(black_box(next_key()))).unwrap();
    };
    // The hotspot rule's table alone (hash, clock, GCRA step): what the guarded call adds to it
    // is the entry and its statistics.
    let hot_table = sentinel_runtime::__private::BenchParamTable::new(KEYS as usize, 1_000_000);
    let sentinel_hot_table = || {
        assert!(hot_table.acquire(&next_key()));
    };
    let governor_keyed_check = || {
        let key = next_key();
        black_box(governor_keyed.check_key(&key)).unwrap();
    };
    let naive_entry_exit = || {
        let start = naive.enter().unwrap();
        naive.exit(black_box(start));
    };

    let mut one = c.benchmark_group("1 thread");
    one.bench_function("sentinel static node, qps rule: entry+exit", |b| {
        b.iter(sentinel_qps)
    });
    one.bench_function("sentinel static node, no rule: entry+exit", |b| {
        b.iter(sentinel_stats)
    });
    one.bench_function("sentinel #[sentinel(qps)] guarded call", |b| {
        b.iter(sentinel_qps_attr)
    });
    one.bench_function("sentinel #[sentinel] guarded call, no rule", |b| {
        b.iter(sentinel_stats_attr)
    });
    one.bench_function("sentinel entry(&str), no rule: entry+exit", |b| {
        b.iter(sentinel_by_name)
    });
    one.bench_function("sentinel entry(&str), qps rule: entry+exit", |b| {
        b.iter(sentinel_by_name_qps)
    });
    one.bench_function("sentinel static node, warm-up rule: entry+exit", |b| {
        b.iter(sentinel_warm_up)
    });
    one.bench_function("sentinel static node, throttling rule: entry+exit", |b| {
        b.iter(sentinel_throttle)
    });
    one.bench_function("governor check", |b| b.iter(governor_check));
    one.bench_function("sentinel hotspot rule, 1M keys: entry+exit", |b| {
        b.iter(sentinel_hot)
    });
    one.bench_function("sentinel #[sentinel(hotspot)] guarded call, 1M keys", |b| {
        b.iter(sentinel_hot_attr)
    });
    one.bench_function("sentinel hotspot table alone, 1M keys", |b| {
        b.iter(sentinel_hot_table)
    });
    one.bench_function("governor keyed check_key, 1M keys", |b| {
        b.iter(governor_keyed_check)
    });
    one.bench_function("naive mutex window: entry+exit", |b| {
        b.iter(naive_entry_exit)
    });
    one.finish();

    let mut two = c.benchmark_group("2 threads, aggregate per op");
    two.bench_function("sentinel static node, qps rule: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_qps))
    });
    two.bench_function("sentinel static node, no rule: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_stats))
    });
    two.bench_function("sentinel #[sentinel(qps)] guarded call", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_qps_attr))
    });
    two.bench_function("sentinel #[sentinel] guarded call, no rule", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_stats_attr))
    });
    two.bench_function("sentinel entry(&str), no rule: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_by_name))
    });
    two.bench_function("sentinel entry(&str), qps rule: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_by_name_qps))
    });
    two.bench_function("sentinel hotspot rule, 1M keys: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_hot))
    });
    two.bench_function("sentinel #[sentinel(hotspot)] guarded call, 1M keys", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_hot_attr))
    });
    two.bench_function("sentinel hotspot table alone, 1M keys", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &sentinel_hot_table))
    });
    two.bench_function("governor keyed check_key, 1M keys", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &governor_keyed_check))
    });
    two.bench_function(
        "sentinel #[sentinel(hotspot)] guarded call, 1M keys, threads apart",
        |b| b.iter_custom(|iters| on_threads_apart(2, iters, &sentinel_hot_attr)),
    );
    two.bench_function("governor keyed check_key, 1M keys, threads apart", |b| {
        b.iter_custom(|iters| on_threads_apart(2, iters, &governor_keyed_check))
    });
    two.bench_function("governor check", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &governor_check))
    });
    two.bench_function("naive mutex window: entry+exit", |b| {
        b.iter_custom(|iters| on_threads(2, iters, &naive_entry_exit))
    });
    two.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
