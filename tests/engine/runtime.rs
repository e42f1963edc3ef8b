//! The runtime through its public API, with time from the MockClock.
//!
//! Every test installs the MockClock first: besides fixing time, that serialises the tests of
//! this binary, which share the process-wide rules and registry.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use sentinel_runtime::__private::{DefaultRule, StaticNode};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind, Entry, EntryBuilder};

const THREADS: usize = 8;

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("resource has a node")
}

#[test]
fn entry_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Entry>();
}

#[test]
fn qps_limit_is_exact_under_eight_threads() {
    let _clock = MockClock::install();
    const LIMIT: u64 = 1_000;
    const CALLS: u64 = 600; // per thread: 4,800 in all
    rules::load_flow_rules(vec![FlowRule::qps("stress-qps", LIMIT as f64)]).unwrap();
    let passed = AtomicU64::new(0);
    let blocked = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..CALLS {
                    match entry("stress-qps") {
                        Ok(_entry) => passed.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            assert_eq!(e.kind(), BlockKind::Flow);
                            blocked.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            });
        }
    });
    let (p, b) = (passed.into_inner(), blocked.into_inner());
    assert_eq!(
        p, LIMIT,
        "passes at a frozen time must equal the limit exactly"
    );
    assert_eq!(
        p + b,
        THREADS as u64 * CALLS,
        "every call is a pass or a block"
    );
    let s = stats("stress-qps");
    assert_eq!(
        s.pass_qps, LIMIT as f64,
        "a rejected call is never counted as a pass"
    );
    assert_eq!(s.block_qps, b as f64);
    assert_eq!(s.complete_qps, LIMIT as f64);
    assert_eq!(s.concurrency, 0);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn concurrency_limit_is_never_exceeded_under_eight_threads() {
    let _clock = MockClock::install();
    const LIMIT: u64 = 3;
    const CALLS: u64 = 3_000;
    rules::load_flow_rules(vec![FlowRule::concurrency("stress-conc", LIMIT as u32)]).unwrap();
    let inside = AtomicU64::new(0);
    let max_inside = AtomicU64::new(0);
    let passed = AtomicU64::new(0);
    let blocked = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..CALLS {
                    match entry("stress-conc") {
                        Ok(entry) => {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            max_inside.fetch_max(now, Ordering::SeqCst);
                            std::hint::spin_loop();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(entry);
                            passed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            assert_eq!(e.kind(), BlockKind::Concurrency);
                            blocked.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let max = max_inside.into_inner();
    assert!(max <= LIMIT, "{max} callers were inside a limit of {LIMIT}");
    assert!(max >= 1);
    assert_eq!(
        passed.into_inner() + blocked.into_inner(),
        THREADS as u64 * CALLS
    );
    assert_eq!(stats("stress-conc").concurrency, 0, "every exit released");
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_panic_inside_an_entry_releases_concurrency_and_counts_an_error() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::concurrency("panics", 1)]).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _entry = entry("panics").expect("first call is admitted");
        assert_eq!(stats("panics").concurrency, 1);
        panic!("the guarded code fails");
    }));
    assert!(result.is_err());
    let s = stats("panics");
    assert_eq!((s.concurrency, s.error_qps, s.complete_qps), (0, 1.0, 1.0));
    assert!(entry("panics").is_ok(), "the panic released the only slot");
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn set_error_counts_an_error_and_response_time_is_recorded() {
    let clock = MockClock::install();
    let e = entry("errors").unwrap();
    clock.advance(Duration::from_millis(30));
    e.set_error();
    drop(e);
    let ok = entry("errors").unwrap();
    clock.advance(Duration::from_millis(10));
    drop(ok);
    let s = stats("errors");
    assert_eq!((s.pass_qps, s.complete_qps, s.error_qps), (2.0, 2.0, 1.0));
    assert_eq!(
        s.avg_rt_ms,
        20.0,
        "(30 ms + 10 ms) / 2 at t={:?}",
        clock.elapsed()
    );
}

#[test]
fn acquire_counts_a_batch() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("batch", 10.0)]).unwrap();
    let a = EntryBuilder::new("batch").acquire(6).enter();
    let b = EntryBuilder::new("batch").acquire(6).enter();
    let c = EntryBuilder::new("batch").acquire(4).enter();
    assert!(a.is_ok() && b.is_err() && c.is_ok());
    drop((a, c));
    assert_eq!(stats("batch").pass_qps, 10.0);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_window_passes_the_threshold_again_once_it_slides() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("sliding", 4.0)]).unwrap();
    let count = || (0..10).filter(|_| entry("sliding").is_ok()).count();
    assert_eq!(count(), 4, "t={:?}", clock.elapsed());
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        count(),
        0,
        "t={:?}: still the same 1 s window",
        clock.elapsed()
    );
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        count(),
        4,
        "t={:?}: the first bucket left the window",
        clock.elapsed()
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn strict_window_holds_at_a_bucket_boundary_where_the_default_lets_twice_through() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("boundary-default", 50.0),
        FlowRule::qps("boundary-strict", 50.0).strict(true),
    ])
    .unwrap();
    let burst = |r: &str| (0..100).filter(|_| entry(r).is_ok()).count();
    clock.advance(Duration::from_millis(99)); // the end of the first bucket
    assert_eq!(
        (burst("boundary-default"), burst("boundary-strict")),
        (50, 50)
    );
    clock.advance(Duration::from_millis(901)); // 901 ms later: the 11th bucket starts
    assert_eq!(
        burst("boundary-default"),
        50,
        "default: 100 passes within 901 ms"
    );
    assert_eq!(
        burst("boundary-strict"),
        0,
        "strict: never more than 50 in any 1 s"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

static DEFAULTED: StaticNode = StaticNode::new("defaulted", &[DefaultRule::Qps(2.0)]);

#[test]
fn loaded_rules_override_defaults_and_unloading_restores_them_keeping_statistics() {
    let clock = MockClock::install();
    let burst = || (0..10).filter(|_| DEFAULTED.enter().is_ok()).count();
    assert_eq!(burst(), 2, "the attribute's default qps = 2");
    rules::load_flow_rules(vec![FlowRule::qps("defaulted", 5.0)]).unwrap();
    assert_eq!(
        stats("defaulted").pass_qps,
        2.0,
        "loading kept the statistics"
    );
    // The loaded rule has the default rule's shape, so it keeps its count: 3 more, not 5.
    assert_eq!(
        burst(),
        3,
        "loaded qps = 5 in force, t={:?}",
        clock.elapsed()
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(burst(), 5);
    rules::load_flow_rules(vec![FlowRule::qps("other", 1.0)]).unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(burst(), 2, "no longer named: back to the default");
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_bad_rule_is_refused_by_field_and_the_old_rules_stay() {
    let _clock = MockClock::install();
    let good = vec![FlowRule::qps("guarded", 3.0)];
    rules::load_flow_rules(good.clone()).unwrap();
    let bad_sets: Vec<(FlowRule, &str)> = vec![
        (FlowRule::qps("guarded", f64::NAN), "threshold"),
        (FlowRule::qps("guarded", -5.0), "threshold"),
        (FlowRule::qps("guarded", f64::INFINITY), "threshold"),
        (FlowRule::qps("", 1.0), "resource"),
        (
            FlowRule::qps("guarded", 1.0).window(Duration::from_secs(1), 0),
            "sample_count",
        ),
        (
            FlowRule::qps("guarded", 1.0).window(Duration::from_secs(1), 7),
            "window",
        ),
        (
            FlowRule::qps("guarded", 1.0).window(Duration::ZERO, 1),
            "window",
        ),
    ];
    for (bad, field) in bad_sets {
        // A good rule before the bad one must not be applied either.
        let err = rules::load_flow_rules(vec![FlowRule::qps("guarded", 100.0), bad.clone()])
            .expect_err("a set with a bad rule is refused");
        assert_eq!(err.field(), field, "{bad:?}: {err}");
        assert!(err.to_string().contains(field));
        assert_eq!(rules::flow_rules(), good, "old rules stay after {bad:?}");
    }
    assert_eq!((0..10).filter(|_| entry("guarded").is_ok()).count(), 3);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn metrics_list_every_resource() {
    let _clock = MockClock::install();
    drop(entry("listed-a"));
    drop(entry("listed-b"));
    let all = metrics::all();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"listed-a") && names.contains(&"listed-b"),
        "{names:?}"
    );
    assert!(metrics::snapshot("never-entered").is_none());
}

#[test]
fn the_minute_window_keeps_each_second_after_the_second_window_moves_on() {
    let clock = MockClock::install();
    // Calls every 100 ms for 3 s: 10 a second, so every 100 ms bucket is reused (and its old
    // counts folded into the minute window) twice.
    for _ in 0..30 {
        drop(entry("minute").unwrap());
        clock.advance(Duration::from_millis(100));
    }
    clock.advance(Duration::from_secs(5));
    let seconds = metrics::last_minute("minute").unwrap();
    let passes: Vec<u64> = seconds.iter().map(|s| s.pass).collect();
    assert_eq!(passes, vec![10, 10, 10], "{seconds:?}");
    assert!(seconds.windows(2).all(|w| w[1].second == w[0].second + 1));
    assert_eq!(
        stats("minute").pass_qps,
        0.0,
        "the second-level window moved on"
    );
    clock.advance(Duration::from_secs(60));
    assert!(
        metrics::last_minute("minute").unwrap().is_empty(),
        "a minute later"
    );
}

#[test]
fn a_second_mock_clock_waits_for_the_first() {
    let first = MockClock::install();
    first.advance(Duration::from_secs(5));
    let first_end = first.now_nanos();
    let waiter = thread::spawn(|| {
        let second = MockClock::install();
        second.now_nanos()
    });
    drop(first);
    let second_start = waiter.join().unwrap();
    assert!(
        second_start > first_end,
        "the second mock started after the first ended"
    );
}

#[test]
fn the_oldest_second_of_the_minute_window_keeps_all_its_buckets() {
    let clock = MockClock::install();
    // One call late in second 0; the same 100 ms bucket is reused (and folded) 59.9 s later,
    // when second 0 is still the oldest of the 60 the minute window reports.
    clock.advance(Duration::from_millis(950));
    drop(entry("minute-edge").unwrap());
    clock.advance(Duration::from_millis(59_000));
    drop(entry("minute-edge").unwrap());
    let seconds = metrics::last_minute("minute-edge").unwrap();
    let passes: Vec<u64> = seconds.iter().map(|s| s.pass).collect();
    assert_eq!(passes, vec![1, 1], "{seconds:?}");
    assert_eq!(seconds[1].second - seconds[0].second, 59);
}
