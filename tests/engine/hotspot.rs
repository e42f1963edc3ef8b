//! Hotspot rules through the public API: per-value limits, exact under threads, paced exactly at
//! high rates, concurrency per value, exceptions, reloads that keep state. Time from the
//! MockClock (installing it also serialises these tests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::{metrics, BlockKind, Entry, EntryBuilder};

fn call(resource: &str, value: u64) -> Result<Entry, sentinel_runtime::BlockError> {
    EntryBuilder::new(resource).param(&value).enter()
}

#[test]
fn each_value_admits_exactly_threshold_plus_burst_under_eight_threads() {
    let _clock = MockClock::install();
    const VALUES: u64 = 1_000;
    const THRESHOLD: u64 = 10;
    const BURST: u64 = 5;
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("hot-exact", 0, THRESHOLD as f64).burst(BURST as u32)
    ])
    .unwrap();
    let passes: Vec<AtomicU64> = (0..VALUES).map(|_| AtomicU64::new(0)).collect();
    let blocks = AtomicU64::new(0);
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (passes, blocks, barrier) = (&passes, &blocks, &barrier);
            s.spawn(move || {
                barrier.wait();
                for round in 0..4u64 {
                    for v in 0..VALUES {
                        // Threads walk the values in different orders.
                        let v = (v * 7 + t * 131 + round) % VALUES;
                        match call("hot-exact", v) {
                            Ok(_entry) => passes[v as usize].fetch_add(1, Ordering::Relaxed),
                            Err(e) => {
                                assert_eq!(e.kind(), BlockKind::HotParam);
                                blocks.fetch_add(1, Ordering::Relaxed)
                            }
                        };
                    }
                }
            });
        }
    });
    let total: u64 = passes.iter().map(|p| p.load(Ordering::Relaxed)).sum();
    for (v, p) in passes.iter().enumerate() {
        assert_eq!(
            p.load(Ordering::Relaxed),
            THRESHOLD + BURST,
            "value {v}: threshold + burst at a frozen time"
        );
    }
    assert_eq!(
        total + blocks.load(Ordering::Relaxed),
        8 * 4 * VALUES,
        "pass + block = calls"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn high_rates_are_paced_to_the_nanosecond() {
    let clock = MockClock::install();
    for (i, threshold) in [1_001u64, 5_000, 1_000_000].into_iter().enumerate() {
        let resource = format!("hot-rate-{i}");
        rules::load_hotspot_rules(vec![HotspotRule::qps(&*resource, 0, threshold as f64)]).unwrap();
        // The emission interval, rounded up: never faster than the rule.
        let interval = 1_000_000_000u64.div_ceil(threshold);
        let passed = (0..threshold + 5)
            .filter(|_| call(&resource, 1).is_ok())
            .count() as u64;
        assert_eq!(
            passed, threshold,
            "{threshold}/s: a full second's worth from idle"
        );
        let err = call(&resource, 1).unwrap_err();
        assert_eq!(err.kind(), BlockKind::HotParam);
        assert_eq!(err.param_index(), Some(0));
        assert_eq!(
            err.retry_after(),
            Some(Duration::from_nanos(interval)),
            "{threshold}/s: the next slot is one interval away"
        );
        for step in 0..20 {
            clock.advance(Duration::from_nanos(interval - 1));
            assert!(
                call(&resource, 1).is_err(),
                "{threshold}/s, step {step}: 1 ns before the slot"
            );
            clock.advance(Duration::from_nanos(1));
            assert!(
                call(&resource, 1).is_ok(),
                "{threshold}/s, step {step}: at the slot"
            );
        }
        // Over a thousand intervals of steady calls (4 per interval), exactly one passes per
        // interval: no drift.
        let mut steady = 0u64;
        let step = interval / 4;
        for _ in 0..4_000 {
            clock.advance(Duration::from_nanos(step));
            steady += u64::from(call(&resource, 1).is_ok());
        }
        let expected = 4_000 * step / interval;
        assert!(
            steady.abs_diff(expected) <= 1,
            "{threshold}/s: {steady} passed in {} ns of steady calls, expected {expected}",
            4_000 * step
        );
    }
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn values_are_limited_separately_and_exceptions_have_their_own_threshold() {
    let clock = MockClock::install();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("hot-users", 0, 2.0).exception("vip", 5.0)
    ])
    .unwrap();
    let user = |name: &str| EntryBuilder::new("hot-users").param(name).enter();
    assert_eq!((0..10).filter(|_| user("alice").is_ok()).count(), 2);
    assert_eq!((0..10).filter(|_| user("bob").is_ok()).count(), 2);
    assert_eq!(
        (0..10)
            .filter(|_| user(&String::from("vip")).is_ok())
            .count(),
        5
    );
    // A call without the parameter is not limited by the rule.
    assert!((0..10).all(|_| EntryBuilder::new("hot-users").enter().is_ok()));
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        (0..10).filter(|_| user("alice").is_ok()).count(),
        1,
        "one slot every 500 ms"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn a_threshold_only_reload_keeps_every_value_state() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-reload", 0, 5.0).burst(5)]).unwrap();
    assert_eq!(
        (0..20).filter(|_| call("hot-reload", 7).is_ok()).count(),
        10
    );
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-reload", 0, 6.0).burst(5)]).unwrap();
    assert_eq!(
        (0..20).filter(|_| call("hot-reload", 7).is_ok()).count(),
        0,
        "no fresh burst after a threshold-only reload"
    );
    assert_eq!(
        (0..20).filter(|_| call("hot-reload", 8).is_ok()).count(),
        11,
        "a new value gets the new threshold + burst"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn concurrency_per_value_is_never_exceeded_and_returns_to_zero() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::concurrency("hot-inside", 0, 2)]).unwrap();
    let inside: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    let most: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (inside, most, barrier) = (&inside, &most, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..2_000u64 {
                    let v = (i + t) % 4;
                    if let Ok(entry) = call("hot-inside", v) {
                        let now = inside[v as usize].fetch_add(1, Ordering::SeqCst) + 1;
                        most[v as usize].fetch_max(now, Ordering::SeqCst);
                        std::hint::spin_loop();
                        inside[v as usize].fetch_sub(1, Ordering::SeqCst);
                        drop(entry);
                    }
                }
            });
        }
    });
    for (v, m) in most.iter().enumerate() {
        let m = m.load(Ordering::SeqCst);
        assert!(m <= 2, "value {v}: {m} inside at once under a limit of 2");
    }
    // Every place was given back: each value admits 2 again, then blocks.
    for v in 0..4 {
        let a = call("hot-inside", v).expect("first place");
        let b = call("hot-inside", v).expect("second place");
        assert_eq!(
            call("hot-inside", v).unwrap_err().kind(),
            BlockKind::HotParam
        );
        drop((a, b));
    }
    // A panic inside the guarded work gives the place back too.
    let panicked = std::panic::catch_unwind(|| {
        let _entry = call("hot-inside", 9).unwrap();
        panic!("inside");
    });
    assert!(panicked.is_err());
    let a = call("hot-inside", 9).expect("the panicking call's place came back");
    let b = call("hot-inside", 9).expect("second place");
    drop((a, b));
    assert_eq!(metrics::snapshot("hot-inside").unwrap().concurrency, 0);
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn a_dropped_async_entry_gives_its_place_back() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::concurrency("hot-async", 0, 1)]).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    // A future holding an entry for value 3, dropped before it finishes.
    let holder = async {
        let entry = EntryBuilder::new("hot-async")
            .param(&3u64)
            .enter_async()
            .await;
        std::future::pending::<()>().await;
        drop(entry);
    };
    {
        let mut holder = Box::pin(holder);
        assert!(holder.as_mut().poll(&mut cx).is_pending());
        assert!(call("hot-async", 3).is_err(), "the place is held");
    }
    let fresh = pin!(EntryBuilder::new("hot-async").param(&3u64).enter_async()).poll(&mut cx);
    assert!(
        matches!(fresh, Poll::Ready(Ok(_))),
        "the dropped future gave its place back"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn bad_rules_are_refused_by_field_and_the_old_ones_stay() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-bad", 0, 1.0)]).unwrap();
    let err = rules::load_hotspot_rules(vec![HotspotRule::qps("hot-bad", 9, 1.0)]).unwrap_err();
    assert_eq!((err.resource(), err.field()), ("hot-bad", "param_index"));
    assert_eq!(
        rules::hotspot_rules(),
        vec![HotspotRule::qps("hot-bad", 0, 1.0)]
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// Exceptions are pinned in the rule's table: a list too long for the capacity could fill every
/// slot an ordinary value may take and block that value for good. Such a rule is refused at
/// load (the rules in force stay), and the longest list accepted leaves fresh values free.
#[test]
fn exceptions_cannot_crowd_ordinary_values_out_of_the_table() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-crowd", 0, 100.0).capacity(1_000)])
        .unwrap();
    let crowded = (0..2_500u64).fold(
        HotspotRule::qps("hot-crowd", 0, 100.0).capacity(1_000),
        |rule, i| rule.exception(&(1_000_000 + i), 100.0),
    );
    let refused = rules::load_hotspot_rules(vec![crowded]).unwrap_err();
    assert_eq!(refused.field(), "exceptions", "{refused}");
    assert_eq!(rules::hotspot_rules().len(), 1, "the rules in force stay");
    assert!(rules::hotspot_rules()[0].exceptions.is_empty());

    let fullest = (0..250u64).fold(
        HotspotRule::qps("hot-crowd", 0, 100.0).capacity(1_000),
        |rule, i| rule.exception(&(1_000_000 + i), 100.0),
    );
    rules::load_hotspot_rules(vec![fullest]).unwrap();
    let blocked: Vec<u64> = (0..10_000u64)
        .filter(|&v| call("hot-crowd", v).is_err())
        .collect();
    assert!(blocked.is_empty(), "fresh values blocked: {blocked:?}");
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// A batch larger than a value's threshold and burst can never pass: its block gives no
/// retry-after (one that said 1.5 s was a promise the rule could not keep), while a batch that
/// fits is told when it may pass.
#[test]
fn a_batch_too_large_for_the_rule_gets_no_retry_after() {
    let clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps("hot-batch", 0, 2.0)]).unwrap();
    let batch = |n| {
        EntryBuilder::new("hot-batch")
            .param(&1u64)
            .acquire(n)
            .enter()
    };
    let too_large = batch(5).unwrap_err();
    assert_eq!(too_large.kind(), BlockKind::HotParam);
    assert_eq!(too_large.retry_after(), None, "{too_large:?}");
    clock.advance(Duration::from_secs(60));
    assert!(batch(5).is_err(), "still never passes");
    drop(batch(2).unwrap());
    let fits = batch(2).unwrap_err();
    let hint = fits.retry_after().expect("a batch that fits is told when");
    clock.advance(hint);
    assert!(batch(2).is_ok(), "passes after its retry-after ({hint:?})");
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// A reload that changes only the burst keeps every value's state (the gate stays) and puts
/// the new burst in force for the listed values too, not only for the others.
#[test]
fn a_burst_only_reload_applies_to_exceptions() {
    let _clock = MockClock::install();
    let rule = |burst| {
        HotspotRule::qps("hot-burst-vip", 0, 10.0)
            .burst(burst)
            .exception("vip", 10.0)
    };
    rules::load_hotspot_rules(vec![rule(100)]).unwrap();
    // The node exists (and with it the gate a reload keeps).
    drop(EntryBuilder::new("hot-burst-vip").enter().unwrap());
    rules::load_hotspot_rules(vec![rule(0)]).unwrap();
    let passes = |value: &str| {
        (0..200)
            .filter(|_| {
                EntryBuilder::new("hot-burst-vip")
                    .param(value)
                    .enter()
                    .is_ok()
            })
            .count()
    };
    assert_eq!(
        (passes("alice"), passes("vip")),
        (10, 10),
        "burst 0: 10 at once each"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// A reload that adds, retunes or removes an exception keeps every value's state: no value gets
/// a fresh burst from it, and the listed value's new threshold paces it from the state it has.
#[test]
fn a_reload_that_changes_exceptions_keeps_every_value_state() {
    let clock = MockClock::install();
    let resource = "hot-reload-exceptions";
    let passes = |value: u64| (0..50).filter(|_| call(resource, value).is_ok()).count();
    let rule = || HotspotRule::qps(resource, 0, 10.0);
    rules::load_hotspot_rules(vec![rule()]).unwrap();
    // From idle at t0: 10 each, their TATs at t0 + 1 s.
    assert_eq!((passes(1), passes(2)), (10, 10));
    // Value 2 becomes a VIP of 15 a second (one per 66.7 ms). At t0 + 200 ms value 1 has 2
    // slots, value 2 three of its own pace (a fresh table would give 10 and 15).
    rules::load_hotspot_rules(vec![rule().exception(&2u64, 15.0)]).unwrap();
    clock.advance(Duration::from_millis(200));
    assert_eq!(
        (passes(1), passes(2)),
        (2, 3),
        "adding an exception keeps every value's state"
    );
    // Retuned to 20 a second: 300 ms later value 2 has 5 slots (at 15 it would have 4).
    rules::load_hotspot_rules(vec![rule().exception(&2u64, 20.0)]).unwrap();
    clock.advance(Duration::from_millis(300));
    assert_eq!((passes(1), passes(2)), (3, 5), "retuning an exception");
    // Removed: value 2 is back at 10 a second from where it stood (at 20 it would have 6).
    rules::load_hotspot_rules(vec![rule()]).unwrap();
    clock.advance(Duration::from_millis(300));
    assert_eq!((passes(1), passes(2)), (3, 3), "removing an exception");
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// The calls inside a value survive a reload that changes the exceptions of a concurrency rule:
/// the per-value limit holds across it, and every place comes back.
#[test]
fn a_concurrency_limit_holds_across_a_reload_of_its_exceptions() {
    let _clock = MockClock::install();
    let resource = "hot-reload-inside";
    rules::load_hotspot_rules(vec![HotspotRule::concurrency(resource, 0, 2)]).unwrap();
    let inside: Vec<Entry> = (0..2).map(|_| call(resource, 1).unwrap()).collect();
    assert!(call(resource, 1).is_err());
    rules::load_hotspot_rules(vec![
        HotspotRule::concurrency(resource, 0, 2).exception(&9u64, 5.0)
    ])
    .unwrap();
    assert!(
        call(resource, 1).is_err(),
        "two calls are still inside value 1"
    );
    let vip: Vec<Entry> = (0..5).map(|_| call(resource, 9).unwrap()).collect();
    assert!(call(resource, 9).is_err(), "the exception's own limit");
    rules::load_hotspot_rules(vec![HotspotRule::concurrency(resource, 0, 2)]).unwrap();
    assert!(
        call(resource, 9).is_err(),
        "five inside, above the rule's 2"
    );
    drop(inside);
    drop(vip);
    let again: Vec<Entry> = (0..2).map(|_| call(resource, 1).unwrap()).collect();
    assert!(call(resource, 1).is_err());
    let nine: Vec<Entry> = (0..2).map(|_| call(resource, 9).unwrap()).collect();
    assert!(
        call(resource, 9).is_err(),
        "every place came back, at the rule's 2"
    );
    drop((again, nine));
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// A reload that changes only the window keeps every value's state: a TAT is a time, and the
/// debt it holds stands under the new pace (no fresh burst).
#[test]
fn a_window_only_reload_keeps_every_value_state() {
    let _clock = MockClock::install();
    let resource = "hot-reload-window";
    rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 10.0)]).unwrap();
    assert_eq!((0..50).filter(|_| call(resource, 1).is_ok()).count(), 10);
    // 10 per 2 s (one per 200 ms): the value owes 1 s of its 2 s, so 5 more pass, not 10.
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(resource, 0, 10.0).window(Duration::from_secs(2))
    ])
    .unwrap();
    assert_eq!(
        (0..50).filter(|_| call(resource, 1).is_ok()).count(),
        5,
        "the debt stands"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// A call waiting for its slot when a reload changes the pace gives back, when its future is
/// dropped, exactly what it was charged: one slot at the old pace, not at the new one.
#[test]
fn a_dropped_wait_gives_back_its_slot_at_the_pace_it_was_charged() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let _clock = MockClock::install();
    let resource = "hot-cancel-pace";
    // One a second, waiting up to 10 s: at t0 one passes, the next waits 1 s.
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(resource, 0, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    drop(call(resource, 1).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let mut cx = Context::from_waker(Waker::noop());
    runtime.block_on(async {
        let mut waiting = Box::pin(EntryBuilder::new(resource).param(&1u64).enter_async());
        assert!(
            waiting.as_mut().poll(&mut cx).is_pending(),
            "waits for t0 + 1 s"
        );
        // Ten a second, no wait. The waiting call was charged 1 s; giving back 100 ms (the new
        // interval) would leave the value 900 ms further in debt.
        rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 10.0)]).unwrap();
        drop(waiting);
    });
    let err = call(resource, 1).unwrap_err();
    assert_eq!(
        err.retry_after(),
        Some(Duration::from_millis(100)),
        "the value owes 1 s (the call that passed), as before the wait"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// Admits calls of `value` at the frozen time until one is blocked (at most 10 000).
fn drain(resource: &str, value: u64) -> usize {
    (0..10_000)
        .take_while(|_| call(resource, value).is_ok())
        .count()
}

/// Two rules of one shape (parameter, metric, capacity) on a resource, 10/s and 100/min: a reload
/// that drops the per-second rule leaves the per-minute rule its own values' state, not the
/// per-second rule's (whose debt is at most a second: about 98 fresh calls at once).
#[test]
fn a_reload_that_drops_a_rule_leaves_the_others_their_own_state() {
    let clock = MockClock::install();
    let resource = "hot-reload-drop-sibling";
    let per_second = HotspotRule::qps(resource, 0, 10.0);
    let per_minute = HotspotRule::qps(resource, 0, 100.0).window(Duration::from_secs(60));
    rules::load_hotspot_rules(vec![per_second, per_minute.clone()]).unwrap();
    let mut admitted = 0;
    for _ in 0..100 {
        admitted += drain(resource, 7);
        clock.advance(Duration::from_millis(100));
    }
    rules::load_hotspot_rules(vec![per_minute]).unwrap();
    let at_once = drain(resource, 7);
    admitted += at_once;
    for _ in 0..490 {
        clock.advance(Duration::from_millis(100));
        admitted += drain(resource, 7);
    }
    rules::load_hotspot_rules(vec![]).unwrap();
    assert!(at_once <= 10, "{at_once} calls at once after the reload");
    // Within one 60 s window a 100/min rule admits at most 2 x 100 (any interval of k windows:
    // (k + 1) x threshold + burst).
    assert!(admitted <= 200, "{admitted} calls within 60 s");
}

/// The same rules loaded again in another order change nothing: each keeps its own state. Two
/// resources go through the same calls; only the second's rules are reordered.
#[test]
fn a_reload_that_reorders_the_same_rules_changes_nothing() {
    let clock = MockClock::install();
    let rules_of = |resource: &str| {
        [
            HotspotRule::qps(resource, 0, 10.0),
            HotspotRule::qps(resource, 0, 100.0).window(Duration::from_secs(60)),
        ]
    };
    let [kept_second, kept_minute] = rules_of("hot-reorder-kept");
    let [moved_second, moved_minute] = rules_of("hot-reorder-moved");
    rules::load_hotspot_rules(vec![
        kept_second.clone(),
        kept_minute.clone(),
        moved_second.clone(),
        moved_minute.clone(),
    ])
    .unwrap();
    let both = |admitted: &mut [usize; 2]| {
        admitted[0] += drain("hot-reorder-kept", 7);
        admitted[1] += drain("hot-reorder-moved", 7);
    };
    let mut admitted = [0; 2];
    for _ in 0..100 {
        both(&mut admitted);
        clock.advance(Duration::from_millis(100));
    }
    rules::load_hotspot_rules(vec![kept_second, kept_minute, moved_minute, moved_second]).unwrap();
    let before = admitted;
    for _ in 0..100 {
        clock.advance(Duration::from_millis(100));
        both(&mut admitted);
    }
    rules::load_hotspot_rules(vec![]).unwrap();
    assert_eq!(before[0], before[1]);
    assert_eq!(
        admitted[0], admitted[1],
        "after the reload (before it: {before:?})"
    );
}

/// A rule so slow that its burst's worth of calls (or one call) does not fit in the clock's
/// nanoseconds would quietly admit less than `threshold + burst` from idle: such a rule is
/// refused, naming the field, and a slow rule that fits admits exactly its promise.
#[test]
fn a_rule_too_slow_to_keep_its_promise_is_refused_by_field() {
    let _clock = MockClock::install();
    let resource = "hot-too-slow";
    // One call per 31.7 years, and 20 more at once: 634 years of debt.
    let err =
        rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 1e-9).burst(20)]).unwrap_err();
    assert_eq!((err.resource(), err.field()), (resource, "burst"));
    assert!(err.to_string().contains("at most 8"), "{err}");
    // One call per ~585 years: even the first call's debt does not fit.
    let err =
        rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 1.0 / 1.8e10)]).unwrap_err();
    assert_eq!(err.field(), "threshold");
    let err = rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 1.0)
        .exception(&1u64, 1e-9)
        .burst(20)])
    .unwrap_err();
    assert_eq!(err.field(), "exceptions");
    // The largest burst that fits is honoured exactly.
    rules::load_hotspot_rules(vec![HotspotRule::qps(resource, 0, 1e-9).burst(8)]).unwrap();
    assert_eq!(
        (0..20).filter(|_| call(resource, 5).is_ok()).count(),
        9,
        "threshold (at least 1) + burst from idle"
    );
    rules::load_hotspot_rules(vec![]).unwrap();
}

/// Each rule's table is allocated whole, so the tables of the loaded rules together have a
/// budget (1 GiB by default): a set beyond it is refused before anything is built, naming the
/// `capacity` of the first rule beyond it, and the rules in force stay. Without it, a rule file
/// of a few dozen rules of the largest capacity (768 MiB each) takes every byte of the machine.
#[test]
fn rules_whose_tables_exceed_the_memory_budget_are_refused_by_capacity() {
    // Loads replace every hotspot rule: one test at a time (the mock clock's lock).
    let _clock = MockClock::install();
    let kept = HotspotRule::qps("hot-budget-kept", 0, 1.0);
    rules::load_hotspot_rules(vec![kept.clone()]).unwrap();
    let largest =
        |resource: &str| HotspotRule::qps(resource, 0, 10.0).capacity(rules::MAX_HOTSPOT_CAPACITY);
    let too_much = vec![
        kept.clone(),
        largest("hot-budget-a"),
        largest("hot-budget-b"),
    ];
    let err = rules::load_hotspot_rules(too_much.clone()).unwrap_err();
    assert_eq!((err.resource(), err.field()), ("hot-budget-b", "capacity"));
    assert!(err.message().contains("1024 MiB"), "{err}");
    assert_eq!(rules::hotspot_rules(), vec![kept.clone()]);
    // The same through a whole rule set (as from a file): its kind and position.
    let mut set = rules::RuleSet::default();
    set.hotspot = too_much;
    let err = rules::load(set).unwrap_err();
    let entry = &err.entries()[0];
    assert_eq!(
        (entry.kind, entry.index, entry.field.as_deref()),
        (Some("hotspot"), Some(2), Some("capacity"))
    );
    assert_eq!(rules::hotspot_rules(), vec![kept.clone()]);
    // One rule of the largest capacity fits.
    rules::load_hotspot_rules(vec![kept, largest("hot-budget-a")]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
}
