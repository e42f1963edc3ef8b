//! `EntryBuilder::enter_async`: a throttled manual entry awaits its turn on a timer instead of
//! sleeping the executor's thread; its future is `Send`; dropping it while it waits gives back
//! what the checks reserved.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{metrics, BlockKind, EntryBuilder};

fn assert_send<T: Send + 'static>(value: T) -> T {
    value
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

#[test]
fn a_throttled_entry_awaits_its_turn_without_blocking_the_executor() {
    let clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("async-paced", 10.0).throttle(Duration::from_secs(1))
    ])
    .unwrap();
    let runtime = paused_runtime();
    let start = clock.now_nanos();
    let (first_at, second_at, other_done_at) = runtime.block_on(async {
        let first = assert_send(EntryBuilder::new("async-paced").enter_async())
            .await
            .expect("the first turn is now");
        let first_at = first.start_nanos();
        drop(first);
        // The second call's turn is 100 ms away: while it waits, another task on this
        // single-threaded executor runs to completion.
        let second = tokio::spawn(EntryBuilder::new("async-paced").enter_async());
        let other = tokio::spawn(async { sentinel_runtime::clock::now_nanos() });
        let other_done_at = other.await.unwrap();
        let second = second.await.unwrap().expect("within max_wait");
        (first_at, second.start_nanos(), other_done_at)
    });
    assert_eq!(first_at, start, "t={start}");
    assert_eq!(
        other_done_at, start,
        "the other task ran while the second call waited"
    );
    assert!(
        second_at >= start + 100_000_000,
        "the second call entered at its turn, 100 ms later (entered at +{} ns)",
        second_at - start
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn dropping_a_waiting_entry_gives_back_its_place() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("async-held", 10.0).throttle(Duration::from_secs(1)),
        FlowRule::concurrency("async-held", 2),
    ])
    .unwrap();
    let runtime = paused_runtime();
    let _in_runtime = runtime.enter(); // tokio timers need a runtime context when polled
    let mut cx = Context::from_waker(Waker::noop());
    // A: turn now, holds one of the 2 places.
    let a = match pin!(EntryBuilder::new("async-held").enter_async()).poll(&mut cx) {
        Poll::Ready(Ok(entry)) => entry,
        other => panic!("A should enter at once, got {other:?}"),
    };
    // B: turn 100 ms away; while it waits it holds the second place.
    let mut b = Box::pin(EntryBuilder::new("async-held").enter_async());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    // C: no place left.
    match pin!(EntryBuilder::new("async-held").enter_async()).poll(&mut cx) {
        Poll::Ready(Err(e)) => assert_eq!(e.kind(), BlockKind::Concurrency),
        other => panic!("C should be blocked by concurrency, got {other:?}"),
    }
    // Dropping B while it waits gives its place back: D gets in line instead of being blocked.
    drop(b);
    let mut d = Box::pin(EntryBuilder::new("async-held").enter_async());
    assert!(
        d.as_mut().poll(&mut cx).is_pending(),
        "B's place was given back"
    );
    drop(d);
    drop(a);
    assert_eq!(metrics::snapshot("async-held").unwrap().concurrency, 0);
    rules::load_flow_rules(vec![]).unwrap();
}
