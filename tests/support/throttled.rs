//! Async calls of a throttled resource, polled by hand on a paused tokio runtime
//! (`custom_slot_cancel_list`, `custom_slot_cancel_snapshot`, `custom_slot_cancel_once`).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};

use sentinel_runtime::{Entry, EntryBuilder};

/// A current-thread runtime whose time is paused (its timers move only when told).
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// An async call of `resource` that takes its throttling turn at once (inside the runtime).
pub fn enter_now(resource: &str, cx: &mut Context<'_>) -> Entry {
    match pin!(EntryBuilder::new(resource).enter_async()).poll(cx) {
        Poll::Ready(Ok(entry)) => entry,
        other => panic!("the first call enters at once, got {other:?}"),
    }
}
