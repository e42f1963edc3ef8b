//! The adaptive concurrency limit against a simulated downstream on the mock clock: the
//! scenario of `cargo run --example overload_protection` (a latency spike), a collapse and its
//! recovery, a healthy downstream under capacity, and degenerate latencies.

#[path = "../../examples/overload_protection/sim.rs"]
mod sim;

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AdaptiveConcurrency, FlowRule};
use sentinel_runtime::{metrics, EntryBuilder};

use sim::{Figures, Scenario, MS, SECOND, SPIKE, WORKERS};

fn probe_limit() -> u64 {
    u64::from(AdaptiveConcurrency::default().probe_limit)
}

fn print(name: &str, stretches: &[Figures]) {
    println!("{name}: from-to s, service, goodput / capacity, latency, limit lowest..highest");
    for f in stretches {
        println!(
            "  {:>2}-{:>2} s  {:>3} ms  {:>6.0} / {:>6.0} ({:>5.1}%)  {:>6.1} ms ({:.2}x)  {}..{}",
            f.from / SECOND,
            f.to / SECOND,
            f.service / MS,
            f.goodput(),
            f.capacity,
            100.0 * f.goodput() / f.capacity,
            f.latency() / MS as f64,
            f.latency() / f.service as f64,
            f.lowest_limit,
            f.highest_limit
        );
    }
}

/// Goodput at least 95% of the capacity and latency within 1.3x of the service time.
fn assert_near_capacity_without_creep(name: &str, f: &Figures) {
    let (from, to) = (f.from / SECOND, f.to / SECOND);
    assert!(
        f.goodput() >= 0.95 * f.capacity,
        "{name}, {from}-{to} s: goodput {:.0}/s under 95% of {:.0}/s",
        f.goodput(),
        f.capacity
    );
    assert!(
        f.latency() <= 1.3 * f.service as f64,
        "{name}, {from}-{to} s: latency {:.2} ms over 1.3x the service time ({} ms)",
        f.latency() / MS as f64,
        f.service / MS
    );
}

/// The highest limit allowed once settled: 1.3x the workers.
fn settled_limit() -> u64 {
    (1.3 * WORKERS as f64) as u64
}

#[test]
fn the_limit_comes_back_down_after_a_latency_spike() {
    let clock = MockClock::install();
    let resource = "overload-spike";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    // Settled before, during, and from 10 s after the spike (the last 16 s).
    let phases = [
        (2 * SECOND, SPIKE.0),
        (SPIKE.0 + 3 * SECOND, SPIKE.1),
        (SPIKE.1 + 10 * SECOND, 40 * SECOND),
    ];
    let run = sim::run(
        &Scenario::SPIKE,
        resource,
        &clock,
        40,
        &phases,
        probe_limit(),
    );
    print("latency spike", &run.stretches);
    for p in &run.probes {
        println!(
            "  probe at {:.2} s: {} ms, min RTT {:?}",
            p.start as f64 / 1e9,
            p.length / MS,
            p.min_rtt
        );
    }
    for f in &run.stretches {
        assert_near_capacity_without_creep("latency spike", f);
    }
    let after = &run.stretches[2];
    assert!(
        after.highest_limit <= settled_limit(),
        "from 10 s after the spike the limit reached {} (over 1.3x {WORKERS} workers)",
        after.highest_limit
    );
    // Each probe is short, and measured the service time in force.
    assert!(!run.probes.is_empty());
    for p in &run.probes {
        assert!(p.length <= SECOND, "a probe of {} ms", p.length / MS);
        let service = sim::service_time(p.start);
        assert_eq!(p.min_rtt, Duration::from_nanos(service), "{p:?}");
    }
    // The measured minimum RTT and its age are in the snapshot and the Prometheus text.
    let stats = metrics::snapshot(resource).unwrap();
    assert_eq!(stats.adaptive_min_rtt, Some(Duration::from_millis(10)));
    let last = run.probes.last().unwrap();
    let age = stats.adaptive_min_rtt_age.unwrap();
    // The last probe ended within the millisecond before the limit was read unpinned.
    let read_unpinned = Duration::from_nanos(40 * SECOND - last.start - last.length);
    assert!(
        age >= read_unpinned && age < read_unpinned + Duration::from_millis(1),
        "measured when the last probe ended: {age:?}, {read_unpinned:?}"
    );
    let text = metrics::prometheus::encode_text();
    let gauge = |name: &str| {
        let prefix = format!("{name}{{resource=\"{resource}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(
        gauge("sentinel_adaptive_min_rtt_seconds"),
        Some(0.01),
        "{text}"
    );
    assert_eq!(
        gauge("sentinel_adaptive_min_rtt_age_seconds"),
        Some(age.as_secs_f64())
    );
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(metrics::snapshot(resource).unwrap().adaptive_min_rtt, None);
}

#[test]
fn the_limit_recovers_after_a_collapse() {
    let clock = MockClock::install();
    // Every call fails from 5 s to 8 s; then a stall (500 ms per call) from 14 s to 17 s.
    let scenario = Scenario {
        fails: |t| (5 * SECOND..8 * SECOND).contains(&t),
        service: |t| {
            if (14 * SECOND..17 * SECOND).contains(&t) {
                500 * MS
            } else {
                10 * MS
            }
        },
        ..Scenario::SPIKE
    };
    let resource = "overload-collapse";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    let stretches = [
        (2 * SECOND, 5 * SECOND),
        (7 * SECOND, 8 * SECOND),
        (10 * SECOND, 14 * SECOND),
        (16 * SECOND, 17 * SECOND),
        (20 * SECOND, 30 * SECOND),
    ];
    let run = sim::run(&scenario, resource, &clock, 30, &stretches, probe_limit());
    print("failures, then a stall", &run.stretches);
    let min_limit = u64::from(AdaptiveConcurrency::default().min_limit);
    assert_eq!(
        run.stretches[1].highest_limit, min_limit,
        "failures: the limit collapsed to min_limit"
    );
    // The stall: a probe measures the slower downstream, and the limit follows it.
    let stall = &run.stretches[3];
    assert!(
        stall.goodput() >= 0.9 * stall.capacity,
        "the stall: goodput {:.0}/s of {:.0}/s",
        stall.goodput(),
        stall.capacity
    );
    for i in [0, 2, 4] {
        assert_near_capacity_without_creep("recovered", &run.stretches[i]);
        assert!(run.stretches[i].highest_limit <= settled_limit());
    }
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_healthy_downstream_under_capacity_is_never_blocked() {
    let clock = MockClock::install();
    // 3 000 calls a second to a downstream that can take 4 000: 30 calls inside.
    let scenario = Scenario {
        offered_per_second: 3_000,
        service: |_| 10 * MS,
        ..Scenario::SPIKE
    };
    let resource = "overload-healthy";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    // After the first second (the initial limit, 20, is under the 30 calls inside), for a
    // minute: several periodic probes would have been due.
    let run = sim::run(
        &scenario,
        resource,
        &clock,
        61,
        &[(SECOND, 61 * SECOND)],
        probe_limit(),
    );
    print("healthy, under capacity", &run.stretches);
    let f = &run.stretches[0];
    assert_eq!(f.refused, 0, "blocked calls: {f:?}");
    assert_eq!(f.latency(), 10.0 * MS as f64);
    assert!(run.probes.is_empty(), "{:?}", run.probes);
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn the_limit_is_never_zero_one_or_nan_under_zero_or_hour_long_latencies() {
    let clock = MockClock::install();
    let resource = "overload-degenerate";
    rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
    let snapshot = || metrics::snapshot(resource).unwrap();
    let sane = |what: &str| {
        let limit = snapshot().concurrency_limit.unwrap();
        // A NaN limit would read 0 (`NaN as u64`). A probe pins it at probe_limit (4).
        assert!(
            limit == probe_limit() || (20..=200).contains(&limit),
            "{what}: limit {limit}"
        );
    };
    // Up to 20 calls at once (a probe may refuse some), taking `rtt` each.
    let calls = |rtt: Duration| {
        let inside: Vec<_> = (0..20)
            .filter_map(|_| EntryBuilder::new(resource).enter().ok())
            .collect();
        clock.advance(rtt);
        drop(inside);
    };
    // Calls that take no time at all, for a minute.
    for _ in 0..600 {
        calls(Duration::ZERO);
        clock.advance(Duration::from_millis(100));
        sane("zero latencies");
    }
    assert_eq!(
        snapshot().adaptive_min_rtt,
        None,
        "a zero RTT is no measurement"
    );
    // Calls that take an hour, 20 at a time, for a day.
    for _ in 0..24 {
        calls(Duration::from_secs(3_600));
        sane("hour-long latencies");
    }
    let rtt = snapshot().adaptive_min_rtt.unwrap();
    assert_eq!(rtt, Duration::from_secs(3_600));
    // Then 10 ms again: the minimum falls at once.
    for _ in 0..100 {
        calls(Duration::from_millis(10));
        sane("10 ms again");
    }
    assert_eq!(snapshot().adaptive_min_rtt, Some(Duration::from_millis(10)));
    rules::load_flow_rules(vec![]).unwrap();
}

/// The cost of re-measuring the minimum RTT, at a steady 10 ms and 25 ms for a minute: a
/// probe every 10 to 11.5 s (`min_rtt_interval` plus jitter), each pinning the limit for about
/// 6 service times and costing at most 6 service times of the downstream's work.
#[test]
fn probes_are_periodic_short_and_cheap() {
    fn ten(_: u64) -> u64 {
        10 * MS
    }
    fn twenty_five(_: u64) -> u64 {
        25 * MS
    }
    for service in [ten as fn(u64) -> u64, twenty_five] {
        let clock = MockClock::install();
        let scenario = Scenario {
            service,
            ..Scenario::SPIKE
        };
        let resource = "overload-probe-cost";
        rules::load_flow_rules(vec![FlowRule::adaptive_concurrency(resource)]).unwrap();
        let seconds = 62;
        let stretch = [(2 * SECOND, seconds * SECOND)];
        let run = sim::run(
            &scenario,
            resource,
            &clock,
            seconds,
            &stretch,
            probe_limit(),
        );
        rules::load_flow_rules(vec![]).unwrap();
        drop(clock);
        print("steady", &run.stretches);
        let f = &run.stretches[0];
        let lost = f.capacity * f.seconds() - f.done as f64;
        let probes = run.probes.len();
        let lengths: Vec<u64> = run.probes.iter().map(|p| p.length / MS).collect();
        println!(
            "  {probes} probes of {lengths:?} ms; {lost:.0} calls lost ({:.2}% of the goodput)",
            100.0 * lost / (f.capacity * f.seconds())
        );
        assert!((5..=6).contains(&probes), "{probes} probes in 60 s");
        for p in &run.probes {
            assert!(p.length <= 7 * f.service, "{p:?}");
            assert_eq!(p.min_rtt, Duration::from_nanos(f.service));
        }
        assert!(
            lost <= (6 * WORKERS * probes) as f64,
            "{lost:.0} calls lost to {probes} probes"
        );
        assert_near_capacity_without_creep("steady", f);
    }
}
