//! The rule watchers running in this process, so that others (the fleet's summary) can say
//! which document version is in force here without holding a [`RuleWatcher`](super::RuleWatcher).

use std::sync::{Mutex, PoisonError, Weak};

/// What a running watcher says about itself (the watcher's status implements it).
pub(crate) trait InForce: Send + Sync {
    /// The document version in force, or `None` before the first load.
    fn in_force(&self) -> Option<u64>;
}

/// The live watchers, in the order they started (a stopped one's is gone: its `RuleWatcher`
/// and its thread held the only strong references).
static WATCHERS: Mutex<Vec<Weak<dyn InForce>>> = Mutex::new(Vec::new());

/// Records a watcher that starts.
pub(crate) fn register(watcher: Weak<dyn InForce>) {
    let mut watchers = WATCHERS.lock().unwrap_or_else(PoisonError::into_inner);
    watchers.retain(|w| w.strong_count() > 0);
    watchers.push(watcher);
}

/// The document version the first live watcher has in force; `None` when no watcher runs or
/// none has loaded a document.
pub(crate) fn version_in_force() -> Option<u64> {
    let watchers = WATCHERS.lock().unwrap_or_else(PoisonError::into_inner);
    (watchers.iter().filter_map(Weak::upgrade)).find_map(|watcher| watcher.in_force())
}
