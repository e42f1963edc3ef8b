//! A guarded sync function's exit knows a panic of its body from the mark its generated code
//! leaves when the body returns, on every way in: statistics only, a lone QPS gate, a lone
//! hotspot gate, parameters with no rule, inbound, the stage runner, and a throttling wait.
//! For each, a panicking body counts as one error and leaves nothing inside; a call made while
//! another panic unwinds (in a `Drop`) and returning normally is no error. An entry made by
//! name and held across a panic is one error too. Time from the MockClock (installing it also
//! serialises these tests).

use std::panic::{catch_unwind, AssertUnwindSafe};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError};

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("the guarded function has been called")
}

/// Running totals of passes, exits and errors (zeros before the first call).
fn totals(resource: &str) -> [u64; 3] {
    metrics::snapshot(resource).map_or([0; 3], |s| [s.pass_total, s.complete_total, s.error_total])
}

#[sentinel(resource = "unwind-stats")]
fn stats_only(boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom");
    Ok(1)
}

#[sentinel(resource = "unwind-qps", qps = 1000)]
fn lone_qps(boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom");
    Ok(1)
}

#[sentinel(resource = "unwind-hot", hotspot(param = key, qps = 1000))]
fn lone_hot(key: u64, boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom {key}");
    Ok(1)
}

#[sentinel(resource = "unwind-params", params = [key])]
fn with_params(key: u64, boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom {key}");
    Ok(1)
}

#[sentinel(resource = "unwind-inbound", inbound = true)]
fn inbound(boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom");
    Ok(1)
}

#[sentinel(resource = "unwind-runner", concurrency = 10)]
fn runner(boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom");
    Ok(1)
}

#[sentinel(resource = "unwind-paced", qps = 10, max_wait = "1s")]
fn paced(boom: bool) -> Result<u8, BlockError> {
    assert!(!boom, "boom");
    Ok(1)
}

/// A guarded function, told whether its body panics.
type Guarded = fn(bool) -> Result<u8, BlockError>;

/// Each guarded function, by resource name.
fn cases() -> Vec<(&'static str, Guarded)> {
    vec![
        ("unwind-stats", stats_only),
        ("unwind-qps", lone_qps),
        ("unwind-hot", |boom| lone_hot(7, boom)),
        ("unwind-params", |boom| with_params(7, boom)),
        ("unwind-inbound", inbound),
        ("unwind-runner", runner),
        ("unwind-paced", paced),
    ]
}

#[test]
fn a_panicking_body_counts_one_error_and_leaves_nothing_inside() {
    let _clock = MockClock::install();
    for (name, call) in cases() {
        let before = totals(name);
        assert_eq!(call(false), Ok(1));
        assert!(catch_unwind(AssertUnwindSafe(|| call(true))).is_err());
        // Twice in one instant: the paced resource's second call waits for its turn.
        assert!(catch_unwind(AssertUnwindSafe(|| call(true))).is_err());
        let after = totals(name);
        let [pass, complete, error] = [0, 1, 2].map(|i| after[i] - before[i]);
        assert_eq!(
            (pass, complete, error),
            (3, 3, 2),
            "{name}: three passes and exits, two of them the panics"
        );
        assert_eq!(stats(name).concurrency, 0, "{name}: nothing inside");
    }
}

/// Calls every guarded function when dropped, while a panic unwinds past it.
struct CallsInDrop;

impl Drop for CallsInDrop {
    fn drop(&mut self) {
        for (_, call) in cases() {
            assert_eq!(call(false), Ok(1));
        }
    }
}

#[test]
fn a_call_that_returns_while_another_panic_unwinds_is_no_error() {
    let _clock = MockClock::install();
    let before: Vec<_> = cases().into_iter().map(|(name, _)| totals(name)).collect();
    let caught = catch_unwind(|| {
        let _calls = CallsInDrop;
        panic!("the request failed");
    });
    assert!(caught.is_err());
    for ((name, _), before) in cases().into_iter().zip(before) {
        let after = totals(name);
        assert_eq!(after[1] - before[1], 1, "{name}: one exit");
        assert_eq!(after[2], before[2], "{name}: the panic was not its own");
        assert_eq!(stats(name).concurrency, 0, "{name}: nothing inside");
    }
}

/// Calls every guarded function with a panicking body when dropped, while another panic
/// unwinds past it, catching each panic inside the `Drop`.
struct PanicsInDrop;

impl Drop for PanicsInDrop {
    fn drop(&mut self) {
        for (_, call) in cases() {
            assert!(catch_unwind(AssertUnwindSafe(|| call(true))).is_err());
            // Again at once: the paced resource's second call waits for its turn.
            assert!(catch_unwind(AssertUnwindSafe(|| call(true))).is_err());
        }
    }
}

#[test]
fn a_body_that_panics_while_another_panic_unwinds_is_an_error() {
    let _clock = MockClock::install();
    let before: Vec<_> = cases().into_iter().map(|(name, _)| totals(name)).collect();
    let caught = catch_unwind(|| {
        let _calls = PanicsInDrop;
        panic!("the request failed");
    });
    assert!(caught.is_err());
    for ((name, _), before) in cases().into_iter().zip(before) {
        let after = totals(name);
        assert_eq!(after[1] - before[1], 2, "{name}: two exits");
        assert_eq!(after[2] - before[2], 2, "{name}: the body's own panics");
        assert_eq!(stats(name).concurrency, 0, "{name}: nothing inside");
    }
}

/// Enters through the API when dropped, while a panic unwinds past it: one entry left as is,
/// one marked as an error.
struct EntersInDrop;

impl Drop for EntersInDrop {
    fn drop(&mut self) {
        drop(sentinel_runtime::entry("unwind-api").expect("no rule"));
        let failed = sentinel_runtime::entry("unwind-api").expect("no rule");
        failed.set_error();
        drop(failed);
    }
}

#[test]
fn an_api_entry_made_while_a_panic_unwinds_is_judged_by_set_error() {
    let _clock = MockClock::install();
    let before = totals("unwind-api");
    let caught = catch_unwind(|| {
        let _entries = EntersInDrop;
        panic!("the request failed");
    });
    assert!(caught.is_err());
    let after = totals("unwind-api");
    assert_eq!(after[1] - before[1], 2, "two exits");
    assert_eq!(
        after[2] - before[2],
        1,
        "the one marked, not the unwinding panic"
    );
}

/// Panics when dropped (unless already unwinding).
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("dropped");
        }
    }
}

/// Its body leaves a part of its argument unused: that part is dropped inside the call (the
/// fallback takes the arguments, so the pattern is taken apart where the body runs).
#[sentinel(resource = "unwind-destructured", fallback = destructured_blocked)]
fn destructured((code, _unused): (u8, PanicsOnDrop)) -> u8 {
    code
}

fn destructured_blocked((code, _unused): (u8, PanicsOnDrop), _: BlockError) -> u8 {
    code
}

#[test]
fn a_panic_dropping_an_unused_part_of_an_argument_is_the_calls_error() {
    let _clock = MockClock::install();
    let before = totals("unwind-destructured");
    assert!(catch_unwind(|| destructured((1, PanicsOnDrop))).is_err());
    let after = totals("unwind-destructured");
    assert_eq!(after[1] - before[1], 1, "one exit");
    assert_eq!(
        after[2] - before[2],
        1,
        "the drop's panic is the call's error"
    );
    assert_eq!(stats("unwind-destructured").concurrency, 0);
}

/// Its body moves the mock clock on by `ms`: its exit is in a later 100 ms bucket of the
/// statistics than its entry.
#[sentinel(resource = "exit-later-bucket")]
fn takes(clock: &MockClock, ms: u64) -> Result<(), BlockError> {
    clock.advance(std::time::Duration::from_millis(ms));
    Ok(())
}

#[test]
fn an_exit_in_a_later_bucket_than_its_entry_is_counted_with_its_response_time() {
    let clock = MockClock::install();
    let before = metrics::snapshot("exit-later-bucket")
        .map_or((0, 0), |s| (s.complete_total, s.rt_total.as_millis()));
    for ms in [0, 150, 40, 1_100] {
        assert_eq!(takes(&clock, ms), Ok(()));
    }
    let s = stats("exit-later-bucket");
    assert_eq!(s.complete_total - before.0, 4, "every exit counted");
    assert_eq!(
        s.rt_total.as_millis() - before.1,
        1_290,
        "with its response time"
    );
    assert_eq!(s.concurrency, 0);
    // The last exit is in the second of its exit time, its entry 1.1 s before: the window of
    // now holds that exit, with its response time, and no pass.
    assert_eq!((s.complete_qps, s.pass_qps), (1.0, 0.0), "{s:?}");
    assert_eq!(s.avg_rt_ms, 1_100.0, "{s:?}");
}

#[test]
fn an_api_entry_held_across_a_panic_counts_one_error_and_leaves_nothing_inside() {
    use sentinel_runtime::{entry, EntryBuilder};
    let _clock = MockClock::install();
    // By name, with and without a parameter (no rule: statistics only), and a batch.
    /// Enters the resource named, by name.
    type Enter = fn(&str) -> sentinel_runtime::Entry;
    let enter: [(&str, Enter); 3] = [
        ("unwind-api-plain", |r| entry(r).unwrap()),
        ("unwind-api-param", |r| {
            EntryBuilder::new(r).param(&7u64).enter().unwrap()
        }),
        ("unwind-api-batch", |r| {
            EntryBuilder::new(r).acquire(3).enter().unwrap()
        }),
    ];
    for (resource, enter) in enter {
        let before = totals(resource);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _held = enter(resource);
            panic!("the work failed");
        }));
        assert!(caught.is_err());
        drop(enter(resource));
        let after = totals(resource);
        let passes = after[0] - before[0];
        assert_eq!(
            after[1] - before[1],
            passes,
            "{resource}: every exit counted"
        );
        assert_eq!(
            after[2] - before[2],
            passes / 2,
            "{resource}: the entry held across the panic is an error, the next one is not"
        );
        assert_eq!(stats(resource).concurrency, 0, "{resource}: nothing inside");
    }
}
