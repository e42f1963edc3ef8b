//! What the background work's tasks report when they finish: a heartbeat's view of the
//! instances, a refill, a check.

use super::connect::Failure;

/// The instances as one heartbeat saw them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    /// Heard from within `INSTANCE_TTL_MS`.
    pub(super) live: u32,
    /// Heard from within `RECENT_MS`.
    pub(super) recent: u32,
    /// Heard from within `GRACE_MS`.
    pub(super) known: u32,
    /// The set of instances was missing: the store lost it.
    pub(super) fresh: bool,
}

/// What a task of the background work (`background::serve`) finished with.
pub(crate) enum Done {
    Beat(Result<Seen, Failure>),
    Refill(Result<(), Failure>),
    Check(Result<(), Failure>),
}
