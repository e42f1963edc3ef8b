//! Hardening: stale clock readings, rule reloads and panicking user code.
//!
//! Own test binary: the check slots and the state listener registered here are process-wide
//! (each acts only on its own resource names). Every test installs the MockClock first: it fixes
//! time and serialises the tests of this binary, which share the process-wide rules and
//! registry. Each test uses its own resource names and unloads the rules it loaded.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, Once, PoisonError};
use std::thread;
use std::time::Duration;

use sentinel_runtime::breaker::{self, CircuitState};
use sentinel_runtime::clock::{self, MockClock};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::slot::{
    register_check_slot, CheckSlot, SlotContext, CIRCUIT_BREAKER_SLOT_ORDER, FLOW_SLOT_ORDER,
};
use sentinel_runtime::{entry, metrics, BlockError, BlockKind, Entry};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
/// How long a step may take before the test calls it stuck.
const DEADLINE: Duration = Duration::from_secs(20);

/// The call to pause: its resource, where to report the clock reading it carries, and what
/// to wait on before going on.
type Pause = (&'static str, Sender<u64>, Receiver<()>);

static PAUSE: Mutex<Option<Pause>> = Mutex::new(None);

/// Before the flow check: pauses the one call armed in `PAUSE`, as if its thread were
/// preempted between reading the clock and reaching the flow gate.
struct PauseArmedCall;

impl CheckSlot for PauseArmedCall {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        let armed = {
            let mut pause = PAUSE.lock().unwrap_or_else(PoisonError::into_inner);
            match pause.as_ref() {
                Some((resource, _, _)) if *resource == ctx.resource() => pause.take(),
                _ => None,
            }
        };
        if let Some((_, reached, resume)) = armed {
            reached
                .send(ctx.now_nanos())
                .expect("the test waits for the paused call");
            resume
                .recv_timeout(DEADLINE)
                .expect("the test resumes the paused call");
        }
        Ok(())
    }
}

const PANIC_SLOT_RESOURCE: &str = "hr-panicking-slot";
static SLOT_PANICS: AtomicBool = AtomicBool::new(false);

/// After the flow check: panics on `PANIC_SLOT_RESOURCE` while `SLOT_PANICS` is set.
struct PanickingSlot;

impl CheckSlot for PanickingSlot {
    fn check(&self, ctx: &SlotContext<'_>) -> Result<(), BlockError> {
        if ctx.resource() == PANIC_SLOT_RESOURCE && SLOT_PANICS.load(Ordering::SeqCst) {
            panic!("a user's check slot panics on purpose");
        }
        Ok(())
    }
}

const PANIC_LISTENER_RESOURCE: &str = "hr-panicking-listener";

fn install_user_code() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        register_check_slot(FLOW_SLOT_ORDER - 100, PauseArmedCall);
        register_check_slot(
            (FLOW_SLOT_ORDER + CIRCUIT_BREAKER_SLOT_ORDER) / 2,
            PanickingSlot,
        );
        breaker::on_state_change(|change| {
            if change.resource == PANIC_LISTENER_RESOURCE && change.to == CircuitState::Open {
                panic!("a state listener panics on purpose");
            }
        });
    });
}

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("resource has a node")
}

/// Makes `calls` entries of `resource` held at once, then drops them: how many passed.
fn admitted(resource: &str, calls: usize) -> usize {
    let entries: Vec<Result<Entry, BlockError>> = (0..calls).map(|_| entry(resource)).collect();
    entries.iter().filter(|e| e.is_ok()).count()
}

/// Passes per second of `resource` from `last_minute`, as (second, passes).
fn passes_per_second(resource: &str) -> Vec<(u64, u64)> {
    metrics::last_minute(resource)
        .expect("resource has a node")
        .iter()
        .map(|s| (s.second, s.pass))
        .collect()
}

/// A stale clock reading: `qps = 2`; two calls pass at +0 ms. A caller reads the clock at
/// +999 ms and is preempted (paused by a check slot that runs before the flow check); meanwhile
/// the clock moves to `resume_at_ms`, where the window no longer holds the first two passes, and
/// another call passes; then the stale caller goes on.
fn stale_reading(resource: &'static str, strict: bool, resume_at_ms: u64) {
    install_user_code();
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    assert_eq!(t0 % SECOND, 0, "the mock clock starts on a whole second");
    rules::load_flow_rules(vec![FlowRule::qps(resource, 2.0).strict(strict)]).unwrap();
    assert_eq!(admitted(resource, 3), 2, "t=+0 ms: qps = 2");

    clock.advance(Duration::from_millis(999));
    let (reached_tx, reached) = mpsc::channel();
    let (resume, resume_rx) = mpsc::channel();
    *PAUSE.lock().unwrap_or_else(PoisonError::into_inner) = Some((resource, reached_tx, resume_rx));
    let (done_tx, done) = mpsc::channel();
    thread::spawn(move || {
        let outcome = entry(resource).map(drop);
        let _ = done_tx.send(outcome);
    });
    let reading = reached
        .recv_timeout(DEADLINE)
        .expect("the stale caller reaches the pausing slot");
    assert_eq!(
        reading - t0,
        999 * MS,
        "the stale caller read the clock at +999 ms"
    );

    clock.advance(Duration::from_millis(resume_at_ms - 999));
    let fresh = entry(resource).map(drop);
    assert!(
        fresh.is_ok(),
        "t=+{resume_at_ms} ms (strict: {strict}): the window no longer holds the passes of +0 ms, \
         yet the call was blocked: {fresh:?}"
    );
    resume.send(()).expect("the stale caller waits");
    let stale = done
        .recv_timeout(DEADLINE)
        .expect("the stale caller finishes once resumed");

    let seconds = passes_per_second(resource);
    let first = t0 / SECOND;
    let in_second = |s: u64| {
        seconds
            .iter()
            .filter(|(second, _)| *second == s)
            .map(|(_, p)| p)
            .sum::<u64>()
    };
    let total: u64 = seconds.iter().map(|(_, p)| p).sum();
    let admitted_calls = 3 + u64::from(stale.is_ok());
    let report = format!(
        "strict: {strict}; passes at +0 ms (2), +999 ms stale reading ({}), +{resume_at_ms} ms \
         (1); mock time now +{} ms; passes per second (second, passes) with second 0 = {first}: \
         {seconds:?}",
        if stale.is_ok() { "passed" } else { "blocked" },
        (clock::now_nanos() - t0) / MS
    );
    assert!(
        in_second(first) <= 2,
        "second 0 holds more than qps = 2: {report}"
    );
    assert!(
        in_second(first + 1) <= 2,
        "second 1 holds more than qps = 2: {report}"
    );
    assert_eq!(
        total, admitted_calls,
        "every admitted call is counted once: {report}"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

/// Default window: the stale caller resumes after a call at +1000 ms. The gate counts it in the
/// +1000 ms bucket, and the statistics record it where the gate counted it: recorded at
/// +999 ms, second 0 would show 3 passes.
#[test]
fn a_stale_clock_reading_never_puts_more_than_the_threshold_in_one_second() {
    stale_reading("hr-stale-default", false, 1_000);
}

/// Strict window. The strict bound is "at most `threshold` passes in any true window of
/// 1 s". The schedule is chosen so that the window it would break is exactly second 0,
/// [+0 ms, +1000 ms), which `last_minute` reports: passes at +0 ms (2), the stale reading at
/// +999 ms, and a call at +1100 ms (the first time the strict window, 11 buckets of 100 ms, no
/// longer holds +0 ms). Checked: second 0 and second 1 each hold at most 2 passes, and the
/// seconds together hold exactly the admitted calls (not 3 passes in second 0).
#[test]
fn a_stale_clock_reading_never_breaks_the_strict_bound() {
    stale_reading("hr-stale-strict", true, 1_100);
}

/// Four QPS rules of different shapes loaded in turn within one second: a reload never grants
/// again what the previous rule already admitted (a new shape starting from an empty gate
/// would let 40 calls pass).
#[test]
fn reloading_rules_of_other_shapes_within_a_second_never_grants_a_second_budget() {
    const R: &str = "hr-reload-shapes";
    install_user_code();
    let clock = MockClock::install();
    let t0 = clock::now_nanos();
    let shapes = [
        FlowRule::qps(R, 10.0),
        FlowRule::qps(R, 10.0).strict(true),
        FlowRule::qps(R, 10.0).window(Duration::from_secs(1), 20),
        FlowRule::qps(R, 10.0).window(Duration::from_secs(1), 5),
    ];
    let mut per_load = Vec::new();
    for rule in shapes {
        let at = (clock::now_nanos() - t0) / MS;
        rules::load_flow_rules(vec![rule]).unwrap();
        per_load.push((at, admitted(R, 12)));
        clock.advance(Duration::from_millis(100));
    }
    let total: usize = per_load.iter().map(|(_, n)| n).sum();
    assert_eq!(
        total, 10,
        "qps = 10 rules loaded at +0, +100, +200 and +300 ms, 12 calls after each: admitted \
         (load time in ms, passes) {per_load:?}"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

/// A concurrency rule loaded while calls are inside counts them, and their exits release it
/// (a new gate starting at 0 inside would admit too many, then never see those calls leave).
#[test]
fn a_concurrency_rule_loaded_while_calls_are_inside_counts_them() {
    const R: &str = "hr-reload-concurrency";
    install_user_code();
    let _clock = MockClock::install();
    let t0 = clock::now_nanos();
    let mut inside: Vec<Entry> = (0..5).map(|_| entry(R).expect("no rule yet")).collect();
    rules::load_flow_rules(vec![FlowRule::concurrency(R, 2)]).unwrap();
    let at = || (clock::now_nanos() - t0) / MS;

    let more = entry(R).map(drop).map_err(|e| e.kind());
    assert_eq!(
        more,
        Err(BlockKind::Concurrency),
        "t=+{} ms: 5 calls inside, concurrency = 2 loaded: another call",
        at()
    );
    inside.truncate(2); // 3 exit, 2 still inside
    let more = entry(R).map(drop).map_err(|e| e.kind());
    assert_eq!(
        more,
        Err(BlockKind::Concurrency),
        "t=+{} ms: 2 calls still inside of concurrency = 2: another call",
        at()
    );
    drop(inside);
    assert_eq!(stats(R).concurrency, 0);
    assert_eq!(
        admitted(R, 3),
        2,
        "t=+{} ms: all exited: 3 calls held at once against concurrency = 2",
        at()
    );
    rules::load_flow_rules(vec![]).unwrap();
}

/// A check slot that panics after the concurrency check: the slot's panic reaches the caller
/// (it is the user's own code failing), and whatever the chain had reserved for that call (here
/// a concurrency permit) is given back; a permit kept per panic would block every call after
/// two.
#[test]
fn a_panicking_check_slot_reaches_the_caller_and_leaks_no_permit() {
    const R: &str = PANIC_SLOT_RESOURCE;
    install_user_code();
    let _clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![FlowRule::concurrency(R, 2)]).unwrap();
    SLOT_PANICS.store(true, Ordering::SeqCst);
    let outcomes: Vec<String> = (0..5)
        .map(
            |_| match catch_unwind(AssertUnwindSafe(|| entry(R).map(drop))) {
                Err(_) => "panicked".to_owned(),
                Ok(Ok(())) => "passed".to_owned(),
                Ok(Err(e)) => format!("blocked ({:?})", e.kind()),
            },
        )
        .collect();
    SLOT_PANICS.store(false, Ordering::SeqCst);
    let passed = admitted(R, 3);
    assert_eq!(
        passed,
        2,
        "t=+{} ms: after 5 calls whose check slot panicked ({outcomes:?}), 3 calls held at once \
         against concurrency = 2",
        (clock::now_nanos() - t0) / MS
    );
    assert!(
        outcomes.iter().all(|o| o == "panicked"),
        "every call whose slot panics sees the panic: {outcomes:?}"
    );
    assert_eq!(stats(R).concurrency, 0);
    rules::load_flow_rules(vec![]).unwrap();
}

/// A state listener that panics when the breaker opens: the listener's panic is contained (the
/// call whose exit opened the breaker does not panic), and that exit is still recorded in full:
/// complete and error counted, concurrency back to 0, the concurrency permit released; a panic
/// escaping the entry's drop halfway would skip the statistics.
#[test]
fn a_panicking_state_listener_is_contained_and_the_exit_is_recorded() {
    const R: &str = PANIC_LISTENER_RESOURCE;
    install_user_code();
    let _clock = MockClock::install();
    let t0 = clock::now_nanos();
    rules::load_flow_rules(vec![FlowRule::concurrency(R, 1)]).unwrap();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(R, 1)
        .min_requests(1)
        .recovery(Duration::from_secs(60))])
    .unwrap();
    let call = entry(R).expect("closed breaker, nobody inside");
    call.set_error();
    let exit = catch_unwind(AssertUnwindSafe(move || drop(call)));
    let s = stats(R);
    let next = entry(R).map(drop).map_err(|e| e.kind());
    let report = format!(
        "t=+{} ms: after the exit that opened the breaker (its listener panicked; the exit \
         {}): {s:?}; next call: {next:?}",
        (clock::now_nanos() - t0) / MS,
        if exit.is_ok() { "returned" } else { "panicked" }
    );
    assert_eq!(
        (s.concurrency, s.complete_qps, s.error_qps),
        (0, 1.0, 1.0),
        "(concurrency, complete, error): {report}"
    );
    assert_eq!(s.circuit, Some(CircuitState::Open), "{report}");
    assert_eq!(
        next,
        Err(BlockKind::CircuitBreaker),
        "the permit is released, so the open breaker (not concurrency = 1) blocks: {report}"
    );
    assert!(
        exit.is_ok(),
        "the listener's panic reached the caller: {report}"
    );
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_flow_rules(vec![]).unwrap();
}

/// Two throttling rules of one shape (same window and `max_wait`), 10/s and 100/s: loaded again
/// in the other order, each keeps its own pacing (the kept gates taken in list order would give
/// the 10/s rule the 100/s rule's latest turn and let a call through 90 ms early).
#[test]
fn a_reload_that_reorders_the_same_throttling_rules_keeps_each_ones_pace() {
    let clock = MockClock::install();
    let resource = "reload-throttle-order";
    let slow = FlowRule::qps(resource, 10.0).throttle(Duration::from_secs(1));
    let fast = FlowRule::qps(resource, 100.0).throttle(Duration::from_secs(1));
    rules::load_flow_rules(vec![slow.clone(), fast.clone()]).unwrap();
    // A sync caller sleeps until its turn: under the mock clock, the clock moves to it.
    for _ in 0..5 {
        drop(entry(resource).unwrap());
    }
    assert_eq!(
        clock.elapsed(),
        Duration::from_millis(400),
        "10/s: 100 ms apart"
    );
    rules::load_flow_rules(vec![fast, slow]).unwrap();
    drop(entry(resource).unwrap());
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        clock.elapsed(),
        Duration::from_millis(500),
        "the next call waits its 100 ms"
    );
}
