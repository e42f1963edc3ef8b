//! The ejection share holds at every moment: sampled after every call while every endpoint's
//! calls and probes keep failing, for both detectors, under the MockClock; and under threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, OutlierRule};
use sentinel_runtime::{outlier, EntryBuilder};

const RECOVERY: Duration = Duration::from_millis(100);

/// One failing call to `endpoint` (blocked or not).
fn fail(resource: &str, endpoint: &str) {
    if let Ok(entry) = EntryBuilder::new(resource).endpoint(endpoint).enter() {
        entry.set_error();
    }
}

/// A small deterministic generator: the order of the calls changes from step to step.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Calls every one of `n` endpoints once per millisecond, in a shuffled order, every call
/// failing (probes too), for 4 s; after every call the ejected endpoints are at most
/// `allowed`, and `allowed` are at some moment.
fn sample_while_everything_fails(clock: &MockClock, resource: &str, n: usize, allowed: usize) {
    let endpoints: Vec<String> = (0..n).map(|i| format!("10.0.0.{i}:80")).collect();
    let mut rng = Lcg(n as u64);
    let mut most = 0;
    for step in 0..4_000 {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for i in order {
            fail(resource, &endpoints[i]);
            let out = outlier::ejected(resource).len();
            assert!(
                out <= allowed,
                "{resource}: {out} of {n} ejected at step {step} ({:?}), at most {allowed}",
                clock.elapsed()
            );
            most = most.max(out);
        }
        clock.advance(Duration::from_millis(1));
    }
    assert_eq!(most, allowed, "{resource}: the share was reached");
}

fn detectors(resource: &str) -> [OutlierRule; 2] {
    [
        OutlierRule::consecutive_errors(resource, 1),
        OutlierRule::error_ratio(resource, 0.5).min_requests(2),
    ]
}

#[test]
fn the_share_holds_after_every_call_while_failures_and_probes_keep_failing() {
    let clock = MockClock::install();
    for (n, allowed) in [(10, 5), (2, 1)] {
        for d in 0..2 {
            let resource = format!("outlier-share-{n}-{d}");
            let rule = detectors(&resource)[d].clone();
            let rule = rule.recovery(RECOVERY).max_ejection_percent(0.5);
            rules::load_outlier_rules(vec![rule]).unwrap();
            sample_while_everything_fails(&clock, &resource, n, allowed);
        }
    }
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn a_lowered_share_is_reached_as_failed_probes_return_and_then_holds() {
    let clock = MockClock::install();
    const R: &str = "outlier-share-lowered";
    let rule = OutlierRule::consecutive_errors(R, 1).recovery(RECOVERY);
    rules::load_outlier_rules(vec![rule.clone().max_ejection_percent(0.5)]).unwrap();
    let endpoints: Vec<String> = (0..10).map(|i| format!("10.0.1.{i}:80")).collect();
    let round = |clock: &MockClock| {
        for e in &endpoints {
            fail(R, e);
        }
        clock.advance(Duration::from_millis(1));
    };
    for _ in 0..500 {
        round(&clock);
    }
    assert_eq!(outlier::ejected(R).len(), 5);
    // A fifth of 10: at most 2. The ejected ones stay out until their probes; a failed probe
    // goes back into service while the share is full instead of being ejected again.
    rules::load_outlier_rules(vec![rule.max_ejection_percent(0.2)]).unwrap();
    // Every ejection ends within its longest length (16 recoveries): then the share holds.
    for _ in 0..1_600 {
        round(&clock);
    }
    for step in 0..2_000 {
        for e in &endpoints {
            fail(R, e);
            let out = outlier::ejected(R).len();
            assert!(out <= 2, "{out} ejected at step {step}, at most 2");
        }
        clock.advance(Duration::from_millis(1));
    }
    rules::load_outlier_rules(vec![]).unwrap();
}

#[test]
fn the_share_holds_at_every_sample_under_four_threads() {
    let clock = MockClock::install();
    const R: &str = "outlier-share-threads";
    const THREADS: usize = 4;
    rules::load_outlier_rules(vec![OutlierRule::consecutive_errors(R, 1)
        .recovery(RECOVERY)
        .max_ejection_percent(0.5)])
    .unwrap();
    let endpoints: Vec<String> = (0..10).map(|i| format!("10.0.2.{i}:80")).collect();
    let barrier = Barrier::new(THREADS + 1);
    let done = AtomicUsize::new(0);
    let (mut most, mut samples) = (0, 0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (endpoints, barrier, done) = (&endpoints, &barrier, &done);
            s.spawn(move || {
                barrier.wait();
                for i in 0..20_000 {
                    fail(R, &endpoints[(i * 7 + t * 3) % endpoints.len()]);
                }
                done.fetch_add(1, Ordering::AcqRel);
            });
        }
        // This thread owns the clock: it samples, and moves time 1 ms every 10 samples.
        barrier.wait();
        while done.load(Ordering::Acquire) < THREADS {
            let out = outlier::ejected(R).len();
            assert!(out <= 5, "{out} of 10 ejected at {:?}", clock.elapsed());
            most = most.max(out);
            samples += 1;
            if samples % 10 == 0 {
                clock.advance(Duration::from_millis(1));
            }
        }
    });
    assert!(outlier::ejected(R).len() <= 5);
    assert_eq!(most, 5, "the share was reached ({samples} samples)");
    rules::load_outlier_rules(vec![]).unwrap();
}
