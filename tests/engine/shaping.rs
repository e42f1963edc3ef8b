//! Traffic shaping: warm-up, throttling, related resources and per-rule windows, with time from
//! the MockClock (a throttled sync caller's wait moves the mock clock instead of sleeping).
//!
//! Every test installs the MockClock first, which also serialises the tests of this binary.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, sentinel, BlockError, BlockKind};

const SECOND: Duration = Duration::from_secs(1);

/// Sentinel's warm-up token model, second by second under full load: the calls admitted in
/// each second when `offered` arrive at its start. A plain transcription of Sentinel's warm-up
/// formulas (its `WarmUpController`), independent of the runtime's code.
fn warm_up_reference(
    threshold: f64,
    period_s: f64,
    cold: f64,
    offered: u32,
    seconds: usize,
) -> Vec<u32> {
    let warning = period_s * threshold / (cold - 1.0);
    let max = warning + 2.0 * period_s * threshold / (1.0 + cold);
    let slope = (cold - 1.0) / threshold / (max - warning);
    let mut tokens = 0.0_f64;
    let mut previous = 0.0_f64;
    let mut admitted = Vec::new();
    for second in 0..seconds {
        // Refill: the first second is long after "never", so it fills to max.
        let elapsed_s = if second == 0 { 1e9 } else { 1.0 };
        if tokens < warning || (tokens > warning && previous < threshold / cold) {
            tokens += elapsed_s * threshold;
        }
        tokens = (tokens.min(max) - previous).max(0.0);
        let rate = if tokens >= warning {
            1.0 / ((tokens - warning) * slope + 1.0 / threshold)
        } else {
            threshold
        };
        let n = (rate.floor() as u32).min(offered);
        admitted.push(n);
        previous = f64::from(n);
    }
    admitted
}

/// The calls admitted in each second by the runtime, `offered` at the start of each second.
fn warm_up_observed(resource: &str, clock: &MockClock, offered: u32, seconds: usize) -> Vec<u32> {
    (0..seconds)
        .map(|_| {
            let n = (0..offered).filter(|_| entry(resource).is_ok()).count() as u32;
            clock.advance(SECOND);
            n
        })
        .collect()
}

#[test]
fn warm_up_follows_the_formula_second_by_second_for_several_thresholds_and_cold_factors() {
    let clock = MockClock::install();
    for (i, (threshold, period_s, cold)) in [(100.0, 10, 3.0), (50.0, 5, 2.0), (300.0, 20, 4.0)]
        .into_iter()
        .enumerate()
    {
        let resource = format!("warm-{i}");
        rules::load_flow_rules(vec![
            FlowRule::qps(&resource, threshold).warm_up(Duration::from_secs(period_s), cold)
        ])
        .unwrap();
        let seconds = 3 * period_s as usize;
        let offered = (threshold * 2.0) as u32;
        let expected = warm_up_reference(threshold, period_s as f64, cold, offered, seconds);
        let observed = warm_up_observed(&resource, &clock, offered, seconds);
        for (s, (o, e)) in observed.iter().zip(&expected).enumerate() {
            assert!(
                o.abs_diff(*e) <= 1,
                "{resource} (qps {threshold}, warm-up {period_s}s, cold {cold}) second {s}: \
                 admitted {o}, formula {e}\nobserved {observed:?}\nexpected {expected:?}"
            );
        }
        assert_eq!(
            observed[0],
            (threshold / cold).floor() as u32,
            "starts at threshold / cold"
        );
        assert!(
            observed[1..].windows(2).all(|w| w[1] >= w[0]),
            "rises: {observed:?}"
        );
        assert_eq!(
            *observed.last().unwrap(),
            threshold as u32,
            "warm: {observed:?}"
        );
    }
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_warm_system_stays_at_the_threshold() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("warm-steady", 40.0).warm_up(Duration::from_secs(4), 3.0)
    ])
    .unwrap();
    let warming = warm_up_observed("warm-steady", &clock, 80, 15);
    assert_eq!(*warming.last().unwrap(), 40, "{warming:?}");
    let warm = warm_up_observed("warm-steady", &clock, 40, 20);
    assert!(
        warm.iter().all(|&n| n == 40),
        "a warm system at full load: {warm:?}"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[sentinel(resource = "warm-attr", qps = 30, warm_up = "5s", cold_factor = 3, fallback = cold)]
fn warm_attr() -> bool {
    true
}

/// The fallback of every sync function here: "not admitted".
fn cold(_: BlockError) -> bool {
    false
}

#[test]
fn the_attribute_warms_up_from_cold() {
    let _clock = MockClock::install();
    assert_eq!(
        (0..50).filter(|_| warm_attr()).count(),
        10,
        "30 / cold_factor 3"
    );
}

#[sentinel(resource = "paced", qps = 5000, max_wait = "1ms", fallback = cold)]
fn paced() -> bool {
    true
}

#[test]
fn throttled_calls_pass_exactly_one_interval_apart() {
    let clock = MockClock::install();
    let mut passed_at = Vec::new();
    for _ in 0..20 {
        assert!(paced());
        passed_at.push(clock.now_nanos());
    }
    // A sync caller waits for its turn; under the MockClock the wait moves the clock.
    for (i, pair) in passed_at.windows(2).enumerate() {
        assert_eq!(
            pair[1] - pair[0],
            200_000,
            "calls {i} and {} at 5000/s",
            i + 1
        );
    }
}

#[test]
fn eight_threads_through_one_throttled_resource_take_distinct_consecutive_turns() {
    const THREADS: u32 = 8;
    const CALLS: u32 = 100;
    let clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("paced-8", 5_000.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    drop(entry("paced-8").unwrap()); // turn 0 at t0
    let t0 = clock.now_nanos();
    let barrier = Barrier::new(THREADS as usize);
    let passed = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..CALLS {
                    drop(entry("paced-8").expect("within max_wait"));
                    passed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(passed.into_inner(), THREADS * CALLS);
    // Each wait moved the clock to its own turn: if two callers had shared a turn, the last
    // turn (where the clock now stands) would come earlier.
    assert_eq!(
        clock.now_nanos() - t0,
        u64::from(THREADS * CALLS) * 200_000,
        "800 distinct turns 200 us apart after turn 0"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[sentinel(resource = "paced-async", qps = 10, max_wait = "250ms", fallback = async_busy)]
async fn paced_async(tag: u32) -> Result<u32, BlockKind> {
    Ok(tag)
}

async fn async_busy(_: u32, e: BlockError) -> Result<u32, BlockKind> {
    Err(e.kind())
}

#[test]
fn an_async_caller_waiting_for_its_turn_does_not_block_the_executor() {
    let _clock = MockClock::install();
    let log: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let waiter = async {
            for tag in 0..3 {
                let r = paced_async(tag).await; // turns at 0, 100 ms, 200 ms
                log.lock().unwrap().push(format!("call {tag}: {r:?}"));
            }
        };
        let other = async {
            for step in 0..3 {
                log.lock().unwrap().push(format!("other task {step}"));
                tokio::task::yield_now().await;
            }
        };
        tokio::join!(waiter, other);
    });
    let log = log.into_inner().unwrap();
    let position = |s: &str| log.iter().position(|l| l == s).unwrap();
    assert!(
        position("other task 2") < position("call 1: Ok(1)"),
        "the other task ran while call 1 waited 100 ms on the same thread: {log:?}"
    );
    assert_eq!(position("call 2: Ok(2)"), log.len() - 1, "{log:?}");
}

#[test]
fn async_callers_whose_turn_is_beyond_max_wait_are_rejected() {
    let _clock = MockClock::install();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        // At one instant: turns at 0, 100 and 200 ms fit within max_wait = 250 ms; the 4th
        // would wait 300 ms.
        let results = futures_join4(
            paced_async(10),
            paced_async(11),
            paced_async(12),
            paced_async(13),
        )
        .await;
        assert_eq!(results, (Ok(10), Ok(11), Ok(12), Err(BlockKind::Flow)));
    });
}

async fn futures_join4<A, B, C, D>(
    a: impl std::future::Future<Output = A>,
    b: impl std::future::Future<Output = B>,
    c: impl std::future::Future<Output = C>,
    d: impl std::future::Future<Output = D>,
) -> (A, B, C, D) {
    tokio::join!(a, b, c, d)
}

#[sentinel(
    resource = "paced-held",
    qps = 10,
    max_wait = "1s",
    concurrency = 2,
    fallback = held_busy
)]
async fn paced_held(gate: tokio::sync::oneshot::Receiver<()>) -> Result<(), BlockKind> {
    let _ = gate.await;
    Ok(())
}

async fn held_busy(_: tokio::sync::oneshot::Receiver<()>, e: BlockError) -> Result<(), BlockKind> {
    Err(e.kind())
}

#[test]
fn a_future_dropped_while_waiting_for_its_turn_gives_back_what_it_reserved() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let _clock = MockClock::install();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let _in_runtime = runtime.enter(); // tokio timers need a runtime context when polled
    let mut cx = Context::from_waker(Waker::noop());
    let mut senders = Vec::new(); // kept alive: the bodies wait on their gates
    let mut gate = || {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        senders.push(tx);
        rx
    };
    // A: turn now, enters the body and waits there, holding one of the 2 slots.
    let mut a = Box::pin(paced_held(gate()));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    // B: turn 100 ms away; its reservation holds the second slot while it waits.
    let mut b = Box::pin(paced_held(gate()));
    assert!(b.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        metrics::snapshot("paced-held").unwrap().concurrency,
        1,
        "B has not entered"
    );
    // C: no slot left.
    let mut c = Box::pin(paced_held(gate()));
    assert_eq!(
        c.as_mut().poll(&mut cx),
        Poll::Ready(Err(BlockKind::Concurrency))
    );
    // Dropping B while it waits gives its slot back: D gets in line.
    drop(b);
    let mut d = Box::pin(paced_held(gate()));
    assert!(
        d.as_mut().poll(&mut cx).is_pending(),
        "B's slot was given back"
    );
    assert_eq!(
        metrics::snapshot("paced-held").unwrap().concurrency,
        1,
        "only A entered"
    );
}

#[test]
fn a_related_rule_blocks_while_the_other_resource_is_busy() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("rel-reads", 5.0).relate("rel-writes")]).unwrap();
    assert_eq!(
        (0..10).filter(|_| entry("rel-reads").is_ok()).count(),
        10,
        "no node for rel-writes yet: reads pass"
    );
    for _ in 0..4 {
        drop(entry("rel-writes").unwrap());
    }
    assert!(entry("rel-reads").is_ok(), "4 writes + 1 <= 5");
    drop(entry("rel-writes").unwrap());
    let blocked = entry("rel-reads").unwrap_err();
    assert_eq!(blocked.related(), Some("rel-writes"));
    assert_eq!(
        blocked.to_string(),
        "resource `rel-reads` blocked by flow rule (qps 5) counting related resource `rel-writes`"
    );
    clock.advance(SECOND);
    assert!(
        entry("rel-reads").is_ok(),
        "the writes left the last second"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[sentinel(resource = "per-minute", qps = 3, window = "1m", fallback = cold)]
fn per_minute() -> bool {
    true
}

#[test]
fn a_per_minute_window_limits_calls_per_minute_while_metrics_stay_per_second() {
    let clock = MockClock::install();
    assert_eq!((0..5).filter(|_| per_minute()).count(), 3, "3 per minute");
    clock.advance(Duration::from_secs(30));
    assert!(!per_minute(), "30 s later: still the same minute");
    let stats = metrics::snapshot("per-minute").unwrap();
    assert_eq!(stats.block_qps, 1.0, "per second: only this second's block");
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        (0..5).filter(|_| per_minute()).count(),
        3,
        "a minute on: 3 more"
    );
}

#[sentinel(
    resource = "paced-warm",
    qps = 100,
    warm_up = "10s",
    cold_factor = 3,
    max_wait = "1s"
)]
fn paced_warm() -> Result<(), BlockError> {
    Ok(())
}

#[test]
fn warm_up_with_throttling_paces_at_the_warm_up_rate() {
    let clock = MockClock::install();
    let spacing = |calls: usize| {
        let mut at = Vec::new();
        for _ in 0..calls {
            paced_warm().expect("within max_wait");
            at.push(clock.now_nanos());
        }
        at.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>()
    };
    // Cold: the rate is 100 / 3 per second, so turns are exactly 30 ms apart.
    let cold = spacing(10);
    assert!(
        cold.iter().all(|&gap| gap == 30_000_000),
        "cold spacing {cold:?}"
    );
    // Keep it busy through the warm-up period: the spacing shrinks to 1 / 100 s.
    for _ in 0..12 {
        spacing(101);
    }
    let warm = spacing(10);
    assert!(
        warm.iter().all(|&gap| gap == 10_000_000),
        "warm spacing {warm:?}"
    );
}
