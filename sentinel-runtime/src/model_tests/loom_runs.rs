//! How many executions a loom model explored, counted per call (the model tests run at once:
//! a count they shared was reset by one while another ran).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Runs `f` under `builder` over every interleaving it explores; returns how many executions
/// that was.
pub(super) fn explored(
    builder: loom::model::Builder,
    f: impl Fn() + Sync + Send + 'static,
) -> usize {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    builder.check(move || {
        counted.fetch_add(1, Relaxed);
        f()
    });
    runs.load(Relaxed)
}
