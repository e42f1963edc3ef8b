//! The rule watchers running in this process, so that others (the fleet's summary) can say
//! which document version is in force here without holding a [`RuleWatcher`](super::RuleWatcher).

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::WatchStatus;

/// The live watchers' status, in the order they started (a stopped one's is gone: its
/// `RuleWatcher` and its thread held the only strong references).
static WATCHERS: Mutex<Vec<Weak<Mutex<WatchStatus>>>> = Mutex::new(Vec::new());

/// Records a watcher that starts.
pub(crate) fn register(status: &Arc<Mutex<WatchStatus>>) {
    let mut watchers = WATCHERS.lock().unwrap_or_else(PoisonError::into_inner);
    watchers.retain(|w| w.strong_count() > 0);
    watchers.push(Arc::downgrade(status));
}

/// The document version the first live watcher has in force; `None` when no watcher runs or
/// none has loaded a document.
pub(crate) fn version_in_force() -> Option<u64> {
    let watchers = WATCHERS.lock().unwrap_or_else(PoisonError::into_inner);
    watchers
        .iter()
        .filter_map(Weak::upgrade)
        .find_map(|status| {
            let status = status.lock().unwrap_or_else(PoisonError::into_inner);
            (status.loads > 0).then_some(status.version)
        })
}
