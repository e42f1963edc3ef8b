//! Hardening: breaker state across unloading, warm-up from cold, the mock clock's range, and
//! validation bounds.
//!
//! Every test that enters resources installs the MockClock first: it fixes time and serialises
//! the tests of this binary, which share the process-wide rules and registry. Each test uses its
//! own resource names and unloads the rules it loaded.

use std::process::Command;
use std::time::Duration;

use sentinel_runtime::breaker::CircuitState;
use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::{entry, metrics, BlockKind};

const SECOND: u64 = 1_000_000_000;

fn circuit(resource: &str) -> Option<CircuitState> {
    metrics::snapshot(resource)
        .expect("resource has a node")
        .circuit
}

/// A breaker that was unloaded and loaded again is a new breaker: closed. An identical rule
/// loaded again after an unload does not take over the open state of the one unloaded.
#[test]
fn a_breaker_unloaded_and_loaded_again_starts_closed() {
    const R: &str = "hd-breaker-reload";
    let _clock = MockClock::install();
    let t0 = clock::now_nanos();
    let rule = CircuitBreakerRule::error_count(R, 2)
        .min_requests(2)
        .recovery(Duration::from_secs(60));
    rules::load_circuit_breaker_rules(vec![rule.clone()]).unwrap();
    for _ in 0..2 {
        let call = entry(R).expect("closed breaker");
        call.set_error();
        drop(call);
    }
    assert_eq!(circuit(R), Some(CircuitState::Open), "2 errors of 2 calls");
    assert_eq!(
        entry(R).map(drop).map_err(|e| e.kind()),
        Err(BlockKind::CircuitBreaker)
    );

    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!(circuit(R), None, "unloaded");
    assert!(entry(R).is_ok(), "no breaker in force");

    rules::load_circuit_breaker_rules(vec![rule]).unwrap();
    let state = circuit(R);
    let next = entry(R).map(drop);
    assert_eq!(
        state,
        Some(CircuitState::Closed),
        "at t=+{} ns (recovery 60 s): the rule loaded again after unloading; next call: {next:?}",
        clock::now_nanos() - t0
    );
    assert!(next.is_ok(), "a closed breaker admits: {next:?}");
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

/// A warm-up rule starts cold, whatever the clock's reading: its curve is built cold (tokens
/// full) when the rule is loaded. Tokens counted from time 0 of the clock (machine boot) would
/// make a rule loaded less than half its warm-up period after boot start warm; the mock clock
/// starts a few hours after the real clock's reading, so a 10 h warm-up checks this on a
/// machine up for less than about 3 h.
#[test]
fn a_warm_up_rule_starts_cold_whatever_the_uptime() {
    const R: &str = "hd-warm-up";
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![
        FlowRule::qps(R, 90.0).warm_up(Duration::from_secs(10 * 3_600), 3.0)
    ])
    .unwrap();
    let passed = (0..300).filter(|_| entry(R).is_ok()).count();
    assert_eq!(
        passed,
        30,
        "at t={} s on the runtime clock (the first second of the rule): 300 calls against qps = \
         90 warming up over 10 h from cold factor 3: the cold rate is 90 / 3",
        t0 / SECOND
    );
    drop(clock);
    rules::load_flow_rules(vec![]).unwrap();
}

const CHILD_ENV: &str = "SENTINEL_HARDENING_CLOCK_CHILD";

/// `MockClock::advance(Duration::MAX)` never moves time backwards: a step is capped within the
/// room left in the clock's u64 of nanoseconds, so the reading never wraps around to before
/// where it started.
///
/// Pushing the clock to the end of its range would break every later test of this process, so
/// the test runs in a child process (this test binary, running only this test).
#[test]
fn advancing_the_mock_clock_by_duration_max_never_goes_backwards() {
    // The test's path in this binary: its module (the crate's name left out), then its name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::advancing_the_mock_clock_by_duration_max_never_goes_backwards");
    if std::env::var_os(CHILD_ENV).is_some() {
        let clock = MockClock::install();
        let before = clock::now_nanos();
        clock.advance(Duration::MAX);
        let after = clock::now_nanos();
        assert!(
            after >= before,
            "advance(Duration::MAX) moved time backwards: {before} ns -> {after} ns"
        );
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([name.as_str(), "--exact", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("running 1 test"),
        "the child did not run the test: {stdout}\n{stderr}"
    );
    let mut why: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.contains("panicked at") || l.contains("moved time"))
        .collect();
    why.dedup();
    assert!(
        out.status.success(),
        "in a child process: {}",
        why.join("\n")
    );
}

/// Values of the right type that cannot work (a cold factor of 1e308, a recovery of
/// `Duration::MAX`) are refused by validation.
#[test]
fn validation_refuses_a_huge_cold_factor_and_an_endless_recovery() {
    let warm = FlowRule::qps("hd-validate", 1.0).warm_up(Duration::from_secs(10), 1e308);
    assert_eq!(
        warm.validate().map_err(|e| e.field()),
        Err("cold_factor"),
        "{warm:?}"
    );
    let breaker = CircuitBreakerRule::error_count("hd-validate", 1).recovery(Duration::MAX);
    assert_eq!(
        breaker.validate().map_err(|e| e.field()),
        Err("recovery"),
        "{breaker:?}"
    );
}
