//! Tests of the table: layout and memory, the GCRA's figures, floods and eviction, pinning,
//! concurrency places, threads released together, and property tests against plain reference
//! models. The loom models are in `model_tests::loom_param_table`.

use super::table::{Bucket, State};
use super::*;
use crate::sync::AtomicWord;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64 as StdWord;
use std::sync::atomic::Ordering::AcqRel;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::{Arc, Barrier};
use std::thread;

use proptest::prelude::*;

use RateDecision::{Block, Pass, Wait};

const SECOND: u64 = 1_000_000_000;
/// Tests start an hour in (as the mock clock does).
const T0: u64 = 3_600 * SECOND;

type Table = ParamTable<StdWord>;

#[test]
fn every_key_has_two_distinct_buckets_in_its_shard_where_the_shard_has_two() {
    for buckets_per_shard in [1, 2, 3, 5, 64, 1000] {
        let t = Table::with_geometry(8, buckets_per_shard, Full::Evict);
        for i in 0..20_000u64 {
            let k = t.locate(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i);
            let first = k.shard * buckets_per_shard;
            for &b in k.buckets() {
                assert!(
                    (first..first + buckets_per_shard).contains(&b),
                    "{b} outside its shard"
                );
            }
            if buckets_per_shard > 1 {
                assert_eq!(k.distinct, 2, "key {i}: {:?}", k.buckets);
                assert_ne!(k.buckets[0], k.buckets[1], "key {i}");
            } else {
                assert_eq!(k.buckets(), &[first][..]);
            }
        }
    }
}

/// The caller's GCRA parameters for `threshold` per `window` with `burst`: the interval
/// `window / threshold` rounded up, the tolerance `(threshold + burst - 1) * interval`.
fn pace(threshold: u64, burst: u64, window: u64) -> (u64, u64) {
    let interval = u128::from(window).div_ceil(u128::from(threshold)).max(1);
    let tolerance = (u128::from(threshold) + u128::from(burst) - 1) * interval;
    (interval as u64, tolerance as u64)
}

/// Distinct keys spread like hashes; `key_of(0) == 0`.
fn key_of(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// `n` distinct keys of one shard of `t`.
fn same_shard<A: AtomicWord>(t: &ParamTable<A>, n: usize) -> Vec<u64> {
    let shard = t.locate(key_of(1)).shard;
    (1..)
        .map(key_of)
        .filter(|&k| t.locate(k).shard == shard)
        .take(n)
        .collect()
}

fn admitted(d: RateDecision) -> bool {
    matches!(d, Pass | Wait(_))
}

#[test]
fn memory_is_24_bytes_a_slot_and_at_most_8_more_for_the_sketch() {
    // The keys on one line, the states on the next two.
    assert_eq!(std::mem::size_of::<Bucket<StdWord>>(), 192);
    assert_eq!(std::mem::align_of::<Bucket<StdWord>>(), 64);
    assert_eq!(std::mem::offset_of!(Bucket<StdWord>, states), 64);
    assert_eq!(std::mem::size_of::<State<StdWord>>(), 16);
    for capacity in [1, 100, 1_000, 4_096, 100_000, 1_000_000] {
        let t = Table::new(capacity, Full::Evict);
        let bytes = t.allocated_bytes();
        let per_slot = bytes as f64 / t.capacity() as f64;
        let per_value = bytes as f64 / capacity as f64;
        eprintln!(
            "capacity {capacity}: {} slots, {bytes} bytes, {per_slot:.1} B/slot, \
             {per_value:.1} B/requested value",
            t.capacity()
        );
        assert!(t.capacity() >= 2 * capacity, "{capacity}");
        assert_eq!(t.len(), 0);
        assert_eq!(
            Table::bytes_for(capacity),
            bytes,
            "{capacity}: known before it is built"
        );
        let sketch = DebtSketch::<StdWord>::bytes_for(t.capacity());
        assert!(
            sketch <= 8 * t.capacity(),
            "{capacity}: the sketch, {sketch} bytes"
        );
        if capacity >= 1_000 {
            // The slots' 24 bytes, and a cell of the sketch of evicted debts for every
            // second slot (4 bytes a slot, up to 8 where its rows round up to a power of 2).
            assert!(per_slot < 33.0, "{capacity}: {per_slot} B/slot");
            assert!(per_value <= 68.0, "{capacity}: {per_value} B/value");
        }
    }
}

#[test]
fn an_idle_key_admits_threshold_plus_burst_then_one_per_interval() {
    let t = Table::new(16, Full::Evict);
    let (iv, tau) = pace(10, 5, SECOND);
    for i in 0..15 {
        assert_eq!(
            t.acquire_rate(42, T0, 1, iv, tau, 0),
            Pass,
            "call {i} at T0"
        );
    }
    assert_eq!(
        t.acquire_rate(42, T0, 1, iv, tau, 0),
        Block { retry_after: iv }
    );
    assert_eq!(
        t.acquire_rate(42, T0 + iv - 1, 1, iv, tau, 0),
        Block { retry_after: 1 }
    );
    assert_eq!(t.acquire_rate(42, T0 + iv, 1, iv, tau, 0), Pass);
    assert_eq!(
        t.acquire_rate(42, T0 + iv, 1, iv, tau, 0),
        Block { retry_after: iv }
    );
    // With a wait allowed, the next call waits for its turn.
    assert_eq!(t.acquire_rate(42, T0 + iv, 1, iv, tau, iv), Wait(iv));
    assert_eq!(
        t.acquire_rate(42, T0 + iv, 1, iv, tau, iv),
        Block {
            retry_after: 2 * iv
        }
    );
    assert_eq!(t.tat(42), Some(T0 + 17 * iv));
    // A batch larger than the burst never fits: its retry-after says never.
    assert_eq!(
        t.acquire_rate(7, T0, 16, iv, tau, 0),
        Block {
            retry_after: u64::MAX
        }
    );
    assert_eq!(t.tat(7), None, "a call blocked while fresh takes no slot");
    assert_eq!(t.acquire_rate(7, T0, 15, iv, tau, 0), Pass);
}

#[test]
fn key_zero_and_extreme_keys_are_keys_like_any_other() {
    let t = Table::new(16, Full::Evict);
    let (iv, tau) = pace(1, 0, SECOND);
    for key in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63] {
        assert_eq!(t.acquire_rate(key, T0, 1, iv, tau, 0), Pass, "key {key:#x}");
    }
    for key in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63] {
        assert!(
            !admitted(t.acquire_rate(key, T0, 1, iv, tau, 0)),
            "key {key:#x}"
        );
    }
    assert_eq!(t.len(), 5);
    assert_eq!(t.acquire_inflight(0, 1).map(|_| ()), Ok(()));
    assert_eq!(t.inside(0), Some(1));
    assert_eq!(t.tat(0), Some(T0 + iv), "the two kinds of key 0 are apart");
}

#[test]
fn a_threshold_of_zero_passes_nothing() {
    let t = Table::new(16, Full::Evict);
    for now in [0, 1, T0, u64::MAX] {
        assert_eq!(
            t.acquire_rate(3, now, 1, u64::MAX, 0, u64::MAX),
            Block {
                retry_after: u64::MAX
            }
        );
    }
    assert_eq!(t.len(), 0);
    assert_eq!(t.acquire_inflight(3, 0), Err(()));
}

#[test]
fn threads_admit_exactly_threshold_plus_burst_per_key() {
    const THREADS: usize = 8;
    const KEYS: u64 = 1_000;
    const ROUNDS: usize = 3;
    let (threshold, burst) = (5, 2);
    let (iv, tau) = pace(threshold, burst, SECOND);
    let table = Arc::new(Table::new(4 * KEYS as usize, Full::Evict));
    let barrier = Arc::new(Barrier::new(THREADS));
    let started = std::time::Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (table, barrier) = (Arc::clone(&table), Arc::clone(&barrier));
            thread::spawn(move || {
                let mut passes = vec![0u64; KEYS as usize];
                let mut blocks = 0u64;
                barrier.wait();
                for _ in 0..ROUNDS {
                    for i in 0..KEYS {
                        match table.acquire_rate(key_of(i), T0, 1, iv, tau, 0) {
                            Pass => passes[i as usize] += 1,
                            Block { .. } => blocks += 1,
                            Wait(w) => panic!("a wait of {w} ns without max_wait"),
                        }
                    }
                }
                (passes, blocks)
            })
        })
        .collect();
    let mut passes = vec![0u64; KEYS as usize];
    let mut blocks = 0;
    for worker in workers {
        let (p, b) = worker.join().unwrap();
        passes.iter_mut().zip(p).for_each(|(sum, p)| *sum += p);
        blocks += b;
    }
    eprintln!(
        "{} calls in {:?}",
        THREADS * ROUNDS * KEYS as usize,
        started.elapsed()
    );
    for (i, &p) in passes.iter().enumerate() {
        assert_eq!(p, threshold + burst, "key {i} at frozen now {T0}");
    }
    assert_eq!(
        passes.iter().sum::<u64>() + blocks,
        (THREADS * ROUNDS) as u64 * KEYS
    );
    assert_eq!((table.live_evictions(), table.refused()), (0, 0));
    assert_eq!(table.len(), KEYS as usize);
}

#[test]
fn high_rates_are_paced_exactly() {
    for threshold in [1_001, 5_000, 1_000_000] {
        let (iv, _) = pace(threshold, 0, SECOND);
        let t = Table::new(16, Full::Evict);
        // Tolerance 0 and unlimited waits: each call's turn is exactly one interval after
        // the one before.
        let mut last = None;
        for i in 0..2_000 {
            let turn = match t.acquire_rate(9, T0, 1, iv, 0, u64::MAX) {
                Pass => T0,
                Wait(w) => T0 + w,
                Block { retry_after } => panic!("call {i} blocked ({retry_after})"),
            };
            if let Some(last) = last {
                assert_eq!(turn - last, iv, "threshold {threshold}, call {i}");
            }
            last = Some(turn);
        }
    }
}

/// Calls arriving every `step` ns for `duration` without waiting: the admitted ones, in
/// order.
fn stream(threshold: u64, burst: u64, step: u64, duration: u64) -> (Vec<u64>, u64) {
    let (iv, tau) = pace(threshold, burst, SECOND);
    let t = Table::new(16, Full::Evict);
    let mut passed = Vec::new();
    let mut now = T0;
    while now < T0 + duration {
        if t.acquire_rate(5, now, 1, iv, tau, 0) == Pass {
            passed.push(now);
        }
        now += step;
    }
    (passed, iv)
}

#[test]
fn any_k_windows_hold_at_most_k_plus_1_thresholds_plus_burst() {
    for (threshold, burst, step) in [
        (1_001, 3, 97_003),
        (5_000, 10, 31_013),
        (1_000_000, 50, 397),
    ] {
        let duration = 3 * SECOND + SECOND / 2;
        let (passed, iv) = stream(threshold, burst, step, duration);
        for k in 1..=3u64 {
            let bound = (k + 1) * threshold + burst;
            let mut end = 0;
            for (start, &at) in passed.iter().enumerate() {
                while end < passed.len() && passed[end] < at + k * SECOND {
                    end += 1;
                }
                let held = (end - start) as u64;
                assert!(held <= bound, "{threshold}/s: {held} in {k} s from {at}");
            }
        }
        // And the rate is kept: threshold + burst at once, then one per interval.
        let expected = (threshold + burst) as f64 + duration as f64 / iv as f64;
        let got = passed.len() as f64;
        assert!(
            (got - expected).abs() <= 2.0 + expected * 1e-3,
            "{threshold}/s: {got} passed, {expected} expected"
        );
    }
}

#[test]
fn ten_million_values_stay_in_the_fixed_allocation() {
    const THREADS: u64 = 2;
    const VALUES: u64 = 10_000_000;
    let t = Arc::new(Table::new(100_000, Full::Evict));
    let bytes = t.allocated_bytes();
    let capacity = t.capacity();
    // One call per value, 10 new values a microsecond of a shared clock, each live for
    // 1 ms: about 10,000 live at a time, the rest idle.
    let (iv, tau) = pace(1, 0, 1_000_000);
    let clock = Arc::new(StdWord::new(T0));
    let started = std::time::Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|n| {
            let (t, clock) = (Arc::clone(&t), Arc::clone(&clock));
            thread::spawn(move || {
                for i in (n..VALUES).step_by(THREADS as usize) {
                    let now = clock.fetch_add(100, Relaxed) + 100;
                    let decision = t.acquire_rate(key_of(i), now, 1, iv, tau, 0);
                    debug_assert_eq!(decision, Pass, "value {i} at {now}");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    eprintln!(
        "10M values through {capacity} slots in {:?}",
        started.elapsed()
    );
    assert_eq!(t.len(), capacity, "every slot in use, none added");
    assert_eq!(t.allocated_bytes(), bytes);
    assert_eq!((t.live_evictions(), t.refused()), (0, 0));
    // In the full table, 5,000 more values (live for the rest of the test) all find room
    // among the idle ones and keep it.
    let mut now = clock.load(Relaxed);
    let newest = VALUES..VALUES + 5_000;
    for i in newest.clone() {
        now += 100;
        assert_eq!(
            t.acquire_rate(key_of(i), now, 1, iv, tau, 0),
            Pass,
            "value {i}"
        );
    }
    for i in newest {
        assert!(
            t.tat(key_of(i)).is_some_and(|tat| tat > now),
            "value {i} at {now}"
        );
    }
    assert_eq!((t.len(), t.live_evictions()), (capacity, 0));
}

#[test]
fn a_flood_of_live_values_evicts_the_least_debt_and_never_grows() {
    let t = Table::new(1_000, Full::Evict);
    let bytes = t.allocated_bytes();
    let (iv, tau) = pace(1, 0, SECOND);
    let passed = (0..200_000u64)
        .filter(|&i| admitted(t.acquire_rate(key_of(i), T0, 1, iv, tau, 0)))
        .count() as u64;
    assert_eq!(t.len(), t.capacity());
    assert_eq!(t.allocated_bytes(), bytes);
    // Every value admitted beyond the slots took a live one's place; once the evicted
    // debts cover every cell of the sketch, new values are held back instead.
    assert_eq!(t.live_evictions(), passed - t.capacity() as u64);
    assert!(passed < 200_000, "{passed}");
    // No value passes again within its second: the admitted ones owe it (in their slots or
    // in the sketch), the rest are held back by the sketch.
    for i in 0..200_000u64 {
        let decision = t.acquire_rate(key_of(i), T0 + iv / 2, 1, iv, tau, 0);
        assert!(!admitted(decision), "value {i}: {decision:?}");
    }
    // A second later every debt is paid: new and old values pass again.
    for i in 0..1_000u64 {
        let decision = t.acquire_rate(key_of(i), T0 + iv, 1, iv, tau, 0);
        assert_eq!(decision, Pass, "value {i}");
    }
}

/// A stream of new values, each called once (so none is hot: every block is a false
/// one), at a pace that keeps `live` values owing time at once: `live` per window of a rule
/// of 1 per window. After two windows to settle, the share of the third window's values
/// blocked, and the live evictions per value.
pub(super) fn false_blocks(capacity: usize, live: u64) -> (f64, f64) {
    let t = Table::new(capacity, Full::Evict);
    let window = 10 * SECOND;
    let (iv, tau) = pace(1, 0, window);
    let step = window / live;
    let (mut blocked, mut measured) = (0u64, 0u64);
    let evictions_before_last = |i: u64| i == 2 * live;
    let mut evicted = 0;
    for i in 0..3 * live {
        if evictions_before_last(i) {
            evicted = t.live_evictions();
        }
        let decision = t.acquire_rate(key_of(i + 1), T0 + i * step, 1, iv, tau, 0);
        if i >= 2 * live {
            measured += 1;
            blocked += u64::from(!admitted(decision));
        }
    }
    let evictions = (t.live_evictions() - evicted) as f64 / measured as f64;
    (blocked as f64 / measured as f64, evictions)
}

/// The false-block rate of the sketch of evicted debts (`examples/hotspot_flood.rs`
/// measures it at the default capacity): new values are never held back while the table
/// holds every value that owes time, rarely at twice its capacity, and mostly once the
/// values owing time outnumber the sketch's cells (it holds back rather than forget).
#[test]
fn innocent_values_held_back_at_1_2_10_100_times_the_capacity() {
    let capacity = 1_024;
    let mut rates = Vec::new();
    for times in [1, 2, 10, 100] {
        let (rate, evictions) = false_blocks(capacity, times * capacity as u64);
        eprintln!(
            "{times}x the capacity owing at once: {:.2}% of new values held back, {:.3} \
             live evictions per value",
            100.0 * rate,
            evictions
        );
        rates.push(rate);
    }
    assert_eq!(rates[0], 0.0, "{rates:?}");
    assert!(rates[1] < 0.03, "{rates:?}");
    assert!(rates[1] < rates[2] && rates[2] < rates[3], "{rates:?}");
}

#[test]
fn evict_takes_the_live_value_with_the_least_debt() {
    let t = Table::with_geometry(8, 1, Full::Evict);
    let keys = same_shard(&t, 9);
    let (iv, tau) = (SECOND, 10 * SECOND);
    // Debts of 3, 2, 4, 5, ... intervals: the second key owes least.
    for (j, &key) in keys[..8].iter().enumerate() {
        let count = if j == 1 { 2 } else { 3 + j as u32 };
        assert_eq!(t.acquire_rate(key, T0, count, iv, tau, 0), Pass);
    }
    assert_eq!(t.acquire_rate(keys[8], T0, 1, iv, tau, 0), Pass);
    assert_eq!(t.live_evictions(), 1);
    assert_eq!(t.tat(keys[1]), None);
    assert_eq!(t.tat(keys[8]), Some(T0 + iv));
    assert_eq!(t.tat(keys[0]), Some(T0 + 3 * iv));
}

#[test]
fn idle_values_are_evicted_first_and_one_shot_floods_spare_live_ones() {
    let t = Table::new(1_000, Full::Evict);
    let live: Vec<u64> = (0..500).map(|i| key_of(1 << 40 | i)).collect();
    let hour = 3_600 * SECOND;
    for &key in &live {
        assert_eq!(t.acquire_rate(key, T0, 1, hour, 0, 0), Pass);
    }
    // One-shot values, each idle by the time the next arrives.
    let mut now = T0;
    for i in 0..300_000 {
        now += 2_000;
        assert_eq!(t.acquire_rate(key_of(i), now, 1, 1_000, 0, 0), Pass);
    }
    assert_eq!((t.live_evictions(), t.refused()), (0, 0));
    for &key in &live {
        assert_eq!(t.tat(key), Some(T0 + hour));
    }
    assert!(t.len() <= t.capacity());
}

#[test]
fn block_policy_refuses_new_values_while_full_of_live_ones() {
    let t = Table::with_geometry(8, 1, Full::Block);
    let keys = same_shard(&t, 9);
    let (iv, tau) = (SECOND, 0);
    for &key in &keys[..8] {
        assert_eq!(t.acquire_rate(key, T0, 1, iv, tau, 0), Pass);
    }
    assert_eq!(
        t.acquire_rate(keys[8], T0 + 10, 1, iv, tau, 0),
        Block {
            retry_after: iv - 10
        },
        "refused until the first live value is idle"
    );
    assert_eq!((t.refused(), t.live_evictions()), (1, 0));
    assert_eq!(t.tat(keys[8]), None);
    for &key in &keys[..8] {
        assert_eq!(t.tat(key), Some(T0 + iv));
    }
    // Once they are idle, the new value takes a slot.
    assert_eq!(t.acquire_rate(keys[8], T0 + iv, 1, iv, tau, 0), Pass);
    assert_eq!(t.refused(), 1);
    // A table full of calls inside refuses a new concurrency value.
    let c = Table::with_geometry(8, 1, Full::Evict);
    for &key in &keys[..8] {
        assert!(c.acquire_inflight(key, 1).is_ok());
    }
    assert_eq!(c.acquire_inflight(keys[8], 1), Err(()));
    assert_eq!(c.refused(), 1);
}

#[test]
fn pinned_values_survive_floods() {
    let t = Table::with_geometry(8, 2, Full::Evict);
    let pinned = same_shard(&t, 3);
    let (iv, tau) = (SECOND, 0);
    assert!(t.pin(pinned[0]));
    // Already present: pinning keeps its state.
    assert_eq!(t.acquire_rate(pinned[1], T0, 1, iv, tau, 0), Pass);
    assert!(t.pin(pinned[1]));
    assert_eq!(t.tat(pinned[1]), Some(T0 + iv));
    assert_eq!(t.tat(pinned[0]), Some(0), "pinned with a fresh state");
    assert_eq!(t.acquire_rate(pinned[0], T0, 1, iv, tau, 0), Pass);
    // The pinned values owe the least, yet a flood of live values never takes them.
    for i in 0..20_000 {
        let _ = t.acquire_rate(key_of(1 << 50 | i), T0, 2, iv, iv, 0);
    }
    assert!(t.live_evictions() > 0);
    assert_eq!(t.tat(pinned[0]), Some(T0 + iv));
    assert_eq!(t.tat(pinned[1]), Some(T0 + iv));
    // A pinned key serves concurrency too.
    assert!(t.pin(pinned[2]));
    let slot = t.acquire_inflight(pinned[2], 1).unwrap();
    assert_eq!(t.acquire_inflight(pinned[2], 1), Err(()));
    t.release_inflight(slot);
    assert_eq!(t.inside(pinned[2]), Some(0));
}

#[test]
fn an_unpinned_value_keeps_its_state_and_can_be_evicted_again() {
    let t = Table::with_geometry(8, 2, Full::Evict);
    let keys = same_shard(&t, 2);
    let (iv, tau) = (SECOND, 0);
    assert!(t.pin(keys[0]));
    assert_eq!(t.acquire_rate(keys[0], T0, 1, iv, tau, 0), Pass);
    t.unpin(keys[0], Kind::Rate);
    assert_eq!(t.tat(keys[0]), Some(T0 + iv), "its state stays");
    assert_eq!(
        t.acquire_rate(keys[0], T0, 1, iv, tau, 0),
        Block { retry_after: iv },
        "and still counts"
    );
    // A flood of live values that owe more now takes it.
    for i in 0..20_000 {
        let _ = t.acquire_rate(key_of(1 << 50 | i), T0, 2, iv, iv, 0);
    }
    assert_eq!(t.tat(keys[0]), None, "evicted like any other");
    // A concurrency value keeps its calls inside across an unpin, and is not evicted while
    // they are.
    assert!(t.pin(keys[1]));
    let slot = t.acquire_inflight(keys[1], 2).unwrap();
    t.unpin(keys[1], Kind::Inflight);
    assert_eq!(t.inside(keys[1]), Some(1));
    let second = t.acquire_inflight(keys[1], 2).unwrap();
    assert_eq!(
        t.acquire_inflight(keys[1], 2),
        Err(()),
        "the limit counts both"
    );
    for i in 0..20_000 {
        let _ = t.acquire_rate(key_of(1 << 51 | i), T0, 2, iv, iv, 0);
    }
    assert_eq!(t.inside(keys[1]), Some(2), "not evicted with calls inside");
    t.release_inflight(slot);
    t.release_inflight(second);
    assert_eq!(t.inside(keys[1]), Some(0));
    // Unpinning a value that is not pinned changes nothing.
    t.unpin(key_of(1 << 52), Kind::Rate);
    assert_eq!(t.tat(key_of(1 << 52)), None);
}

#[test]
fn concurrency_limit_holds_under_threads_and_returns_to_zero() {
    const THREADS: usize = 8;
    const MAX: u64 = 3;
    let table = Arc::new(Table::new(64, Full::Evict));
    let ghost = Arc::new(StdWord::new(0));
    let peak = Arc::new(StdWord::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|n| {
            let (table, ghost, peak, barrier) = (
                Arc::clone(&table),
                Arc::clone(&ghost),
                Arc::clone(&peak),
                Arc::clone(&barrier),
            );
            thread::spawn(move || {
                barrier.wait();
                let mut taken = 0;
                for i in 0..20_000u64 {
                    // Other values come and go beside the contended one.
                    if let Ok(s) = table.acquire_inflight(key_of(i % 500 + 1), 1) {
                        table.release_inflight(s);
                    }
                    if let Ok(slot) = table.acquire_inflight(0, MAX) {
                        let inside = ghost.fetch_add(1, AcqRel) + 1;
                        peak.fetch_max(inside, AcqRel);
                        if (i + n as u64).is_multiple_of(7) {
                            thread::yield_now();
                        }
                        ghost.fetch_sub(1, AcqRel);
                        table.release_inflight(slot);
                        taken += 1;
                    }
                }
                taken
            })
        })
        .collect();
    let taken: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let peak = peak.load(Acquire);
    assert!(peak <= MAX, "{peak} inside with a limit of {MAX}");
    assert!(taken > 0);
    assert_eq!(table.inside(0), Some(0));
}

#[test]
fn a_value_with_calls_inside_survives_a_flood() {
    let t = Table::new(1, Full::Evict);
    let held = t.acquire_inflight(77, 1).unwrap();
    let (iv, tau) = (SECOND, 0);
    for i in 0..50_000 {
        if let Ok(slot) = t.acquire_inflight(key_of(i + 1), 2) {
            t.release_inflight(slot);
        }
        // Live rate values too (Evict policy): never the one with a call inside.
        let _ = t.acquire_rate(key_of((i + 1) << 32), T0, 1, iv, tau, 0);
    }
    assert!(t.live_evictions() > 0);
    assert_eq!(t.inside(77), Some(1));
    assert_eq!(t.acquire_inflight(77, 1), Err(()));
    t.release_inflight(held);
    assert_eq!(t.inside(77), Some(0));
    let again = t.acquire_inflight(77, 1).unwrap();
    assert_eq!(again, held, "the same counter");
}

#[test]
fn cancel_gives_back_exactly_and_never_below_zero() {
    let t = Table::new(16, Full::Evict);
    let (iv, tau) = pace(3, 0, SECOND);
    for _ in 0..3 {
        assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
    }
    assert!(!admitted(t.acquire_rate(1, T0, 1, iv, tau, 0)));
    t.cancel_rate(1, 1, iv);
    assert_eq!(t.tat(1), Some(T0 + 2 * iv));
    assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
    assert!(!admitted(t.acquire_rate(1, T0, 1, iv, tau, 0)));
    t.cancel_rate(1, u32::MAX, u64::MAX);
    assert_eq!(t.tat(1), Some(0));
    for _ in 0..3 {
        assert_eq!(t.acquire_rate(1, T0, 1, iv, tau, 0), Pass);
    }
    // An absent key: nothing to give back, nothing inserted.
    t.cancel_rate(2, 1, iv);
    assert_eq!((t.tat(2), t.len()), (None, 1));
    t.cancel_rate(1, 0, iv);
    assert_eq!(t.tat(1), Some(T0 + 3 * iv));
}

#[test]
fn a_threshold_reload_keeps_every_values_state() {
    let t = Table::new(16, Full::Evict);
    let (iv, tau) = pace(10, 0, SECOND);
    for _ in 0..10 {
        assert_eq!(t.acquire_rate(4, T0, 1, iv, tau, 0), Pass);
    }
    // A lower threshold admits nothing the old one had spent.
    let (iv2, tau2) = pace(5, 0, SECOND);
    assert!(!admitted(t.acquire_rate(4, T0, 1, iv2, tau2, 0)));
    assert_eq!(t.tat(4), Some(T0 + SECOND));
    // A higher one keeps the debt in time: the old rule spent a whole window (TAT 1 s
    // ahead), which is the new rule's whole tolerance too; it then paces at its own rate.
    let (iv3, tau3) = pace(20, 0, SECOND);
    assert!(!admitted(t.acquire_rate(4, T0, 1, iv3, tau3, 0)));
    assert_eq!(t.acquire_rate(4, T0 + iv3, 1, iv3, tau3, 0), Pass);
    assert!(!admitted(t.acquire_rate(4, T0 + iv3, 1, iv3, tau3, 0)));
    assert_eq!(t.acquire_rate(4, T0 + 2 * iv3, 1, iv3, tau3, 0), Pass);
}

/// The GCRA as specified, in `u128`, over an unbounded map.
#[derive(Default)]
struct Reference {
    tats: HashMap<u64, u128>,
}

impl Reference {
    fn acquire(
        &mut self,
        key: u64,
        now: u64,
        count: u32,
        iv: u64,
        tau: u64,
        max_wait: u64,
    ) -> RateDecision {
        let tat = self.tats.get(&key).copied().unwrap_or(0);
        let now = u128::from(now);
        let new = tat.max(now) + u128::from(count) * u128::from(iv);
        if new > u128::from(u64::MAX) {
            return Block {
                retry_after: u64::MAX,
            };
        }
        let ahead = new - now;
        let limit = u128::from(tau) + u128::from(iv);
        let decision = if ahead <= limit {
            Pass
        } else if ahead - limit <= u128::from(max_wait) {
            Wait((ahead - limit) as u64)
        } else {
            let from_idle = u128::from(count) * u128::from(iv);
            let never = from_idle > limit && from_idle - limit > u128::from(max_wait);
            return Block {
                retry_after: if never {
                    u64::MAX
                } else {
                    (ahead - limit).min(u128::from(u64::MAX)) as u64
                },
            };
        };
        self.tats.insert(key, new);
        decision
    }

    fn cancel(&mut self, key: u64, count: u32, iv: u64) {
        if let Some(tat) = self.tats.get_mut(&key) {
            *tat = tat.saturating_sub(u128::from(count) * u128::from(iv));
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// key index, time step, count, max_wait choice
    Acquire(u16, u8, u32, u8),
    /// key index, count
    Cancel(u16, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u16>(), 0u8..7, 1u32..4, 0u8..3)
            .prop_map(|(k, step, count, wait)| Op::Acquire(k, step, count, wait)),
        1 => (any::<u16>(), 1u32..3).prop_map(|(k, count)| Op::Cancel(k, count)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn decisions_match_an_unbounded_reference(
        threshold in prop::sample::select(vec![1u64, 3, 10, 1_001, 5_000, 1_000_000]),
        burst in 0u64..4,
        window in prop::sample::select(vec![1_000_000u64, 100_000_000, SECOND]),
        large in any::<bool>(),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let (iv, tau) = pace(threshold, burst, window);
        let keys: u64 = if large { 300 } else { 4 };
        let t = Table::new(4 * keys as usize, Full::Evict);
        let mut model = Reference::default();
        let mut now = T0;
        for (n, op) in ops.iter().enumerate() {
            match *op {
                Op::Acquire(k, step, count, wait) => {
                    let key = key_of(u64::from(k) % keys);
                    now = match step {
                        0 => now,
                        1 => now + 1,
                        2 => now + iv / 2,
                        3 => now + iv,
                        4 => now + 3 * iv,
                        5 => now + window,
                        _ => now - iv / 2, // a stale reading
                    };
                    let max_wait = [0, iv, window][usize::from(wait)];
                    let got = t.acquire_rate(key, now, count, iv, tau, max_wait);
                    let want = model.acquire(key, now, count, iv, tau, max_wait);
                    prop_assert_eq!(got, want, "op {} {:?} at {}", n, op, now);
                }
                Op::Cancel(k, count) => {
                    let key = key_of(u64::from(k) % keys);
                    t.cancel_rate(key, count, iv);
                    model.cancel(key, count, iv);
                }
            }
        }
        for (&key, &tat) in &model.tats {
            prop_assert_eq!(t.tat(key).map(u128::from), Some(tat), "key {:#x}", key);
        }
        prop_assert_eq!((t.live_evictions(), t.refused()), (0, 0));
    }
}

/// The table under floods that force live evictions, against the GCRA of each value over the
/// calls the table actually admitted.
mod eviction_model {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64 as StdWord;

    use proptest::prelude::*;

    use crate::slot::param_table::{Full, ParamTable, RateDecision};

    const T0: u64 = 3_600_000_000_000;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Whatever the table forgets, it never admits a call that the value's own GCRA, over
        /// the calls of that value admitted before, would refuse: a value evicted while it owed
        /// time comes back owing it. (The reverse may differ: a new value colliding in the
        /// sketch with ones that owe more is held back.)
        #[test]
        fn evictions_never_admit_beyond_each_values_own_limit(
            ops in prop::collection::vec((0u64..400, 0u8..10, any::<bool>()), 1..600),
            hot in 0u64..8,
            threshold in 1u64..4,
            burst in 0u64..3,
        ) {
            // 8 shards of one bucket: 64 slots for up to 400 values, evictions all the time.
            let t = ParamTable::<StdWord>::with_geometry(8, 1, Full::Evict);
            let iv = SECOND_MS / threshold;
            let tau = (threshold + burst - 1) * iv;
            let mut tats: HashMap<u64, u64> = HashMap::new();
            let mut now = T0;
            for (n, &(value, step, whole)) in ops.iter().enumerate() {
                now += [0, 1, iv / 50, iv][usize::from(step) / 3];
                // A few values call far more often than the rest; a call may take a value's
                // whole allowance at once (a debt that outbids the hot values' for a slot).
                let value = if value % 4 == 0 { value % (hot + 1) } else { value };
                let count = if whole { (threshold + burst) as u32 } else { 1 };
                let key = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let decision = t.acquire_rate(key, now, count, iv, tau, 0);
                let tat = tats.get(&value).copied().unwrap_or(0).max(now);
                let new = tat + u64::from(count) * iv;
                if decision == RateDecision::Pass {
                    prop_assert!(
                        new - now <= tau + iv,
                        "op {}: value {} x{} admitted at {} while it owed until {}",
                        n, value, count, now, tat
                    );
                    tats.insert(value, new);
                }
            }
        }
    }

    const SECOND_MS: u64 = 1_000_000;
}
