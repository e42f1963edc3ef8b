//! The level of the `tracing` events (feature `tracing`) that are routine rather than alarming.
//!
//! Blocks are what limits are for: a per-client limit blocks all day, so block events are
//! `INFO` by default (at most one a second per resource). Circuit-breaker transitions and
//! refused rule loads stay `WARN`: each says something changed or went wrong.

use std::sync::atomic::{AtomicU8, Ordering};

use tracing::Level;

const OFF: u8 = 0;

static BLOCK_LEVEL: AtomicU8 = AtomicU8::new(encode(Some(Level::INFO)));

const fn encode(level: Option<Level>) -> u8 {
    match level {
        None => OFF,
        Some(Level::TRACE) => 1,
        Some(Level::DEBUG) => 2,
        Some(Level::INFO) => 3,
        Some(Level::WARN) => 4,
        Some(Level::ERROR) => 5,
    }
}

fn decode(code: u8) -> Option<Level> {
    match code {
        1 => Some(Level::TRACE),
        2 => Some(Level::DEBUG),
        3 => Some(Level::INFO),
        4 => Some(Level::WARN),
        5 => Some(Level::ERROR),
        _ => None,
    }
}

/// Sets the level of the block events ("calls blocked since the last report"); `None` turns
/// them off. Default `INFO`.
pub(crate) fn set_block_level(level: Option<Level>) {
    BLOCK_LEVEL.store(encode(level), Ordering::Relaxed);
}

/// The level of the block events, `None` when they are off.
pub(crate) fn block_level() -> Option<Level> {
    decode(BLOCK_LEVEL.load(Ordering::Relaxed))
}

/// `tracing::event!` at a level known only at run time (the macro takes a constant).
macro_rules! event_at {
    ($level:expr, target: $target:expr, $($rest:tt)+) => {
        match $level {
            ::tracing::Level::TRACE => ::tracing::event!(target: $target, ::tracing::Level::TRACE, $($rest)+),
            ::tracing::Level::DEBUG => ::tracing::event!(target: $target, ::tracing::Level::DEBUG, $($rest)+),
            ::tracing::Level::INFO => ::tracing::event!(target: $target, ::tracing::Level::INFO, $($rest)+),
            ::tracing::Level::WARN => ::tracing::event!(target: $target, ::tracing::Level::WARN, $($rest)+),
            ::tracing::Level::ERROR => ::tracing::event!(target: $target, ::tracing::Level::ERROR, $($rest)+),
        }
    };
}
pub(crate) use event_at;
