//! [`ShadowStats`]: what a resource's shadow rules would have refused, by the kind of rule, and
//! the waits its shadow throttling rules would have imposed. Kept beside the statistics (a
//! resource's counts since it was created), not in its chain: a reload keeps them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use super::bucket::RULE_KINDS;
use crate::sync::AtomicWord;

/// A resource's shadow counts since it was created. Only chains with a shadow part write
/// here, once per call that a shadow rule would have refused or delayed.
#[derive(Debug, Default)]
pub(crate) struct ShadowStats {
    /// Calls a shadow rule would have blocked, by the kind of rule (the order of the block
    /// totals' kinds, `BlockTotals::RULES`).
    blocked: [AtomicU64; RULE_KINDS],
    /// Calls a shadow throttling rule would have made wait.
    waited: AtomicU64,
    /// Their waits added up, in nanoseconds.
    wait_nanos: AtomicU64,
    /// The would-be blocks of the last [`SECONDS`] seconds, one slot a second; made at the first
    /// would-be block, so that a resource without one carries only the empty cell.
    per_second: OnceLock<Box<[AtomicU64; SECONDS]>>,
    /// The `tracing` event's second (plus one; 0 before the first) and the would-be blocks it
    /// reported up to then.
    #[cfg(feature = "tracing")]
    event_second: AtomicU64,
    #[cfg(feature = "tracing")]
    reported: AtomicU64,
}

impl ShadowStats {
    /// No counts yet (a `const fn`: the process's inbound statistics are a plain static).
    pub(crate) const fn new() -> ShadowStats {
        ShadowStats {
            blocked: [const { AtomicU64::new(0) }; RULE_KINDS],
            waited: AtomicU64::new(0),
            wait_nanos: AtomicU64::new(0),
            per_second: OnceLock::new(),
            #[cfg(feature = "tracing")]
            event_second: AtomicU64::new(0),
            #[cfg(feature = "tracing")]
            reported: AtomicU64::new(0),
        }
    }

    /// Counts `count` calls a shadow rule of the kind `(index, name)` (its place and name in
    /// `BlockTotals::RULES`) would have blocked at `now`; with the `tracing` feature, reports
    /// them at most once a second per resource.
    #[cold]
    pub(crate) fn on_block(&self, resource: &str, now: u64, count: u32, kind: (usize, &str)) {
        if let Some(counter) = self.blocked.get(kind.0) {
            counter.fetch_add(u64::from(count), Relaxed);
        }
        let ring = self
            .per_second
            .get_or_init(|| Box::new(std::array::from_fn(|_| AtomicU64::new(0))));
        add_to_second(&ring[..], now / 1_000_000_000, count);
        #[cfg(feature = "tracing")]
        self.event(resource, now, kind.1);
        #[cfg(not(feature = "tracing"))]
        let _ = (resource, now);
    }

    /// Counts `count` calls a shadow throttling rule would have made wait `nanos`.
    #[cold]
    pub(crate) fn on_wait(&self, count: u32, nanos: u64) {
        self.waited.fetch_add(u64::from(count), Relaxed);
        self.wait_nanos.fetch_add(nanos, Relaxed);
    }

    /// The would-be blocks by kind of rule.
    pub(crate) fn blocks_by_rule(&self) -> [u64; RULE_KINDS] {
        std::array::from_fn(|i| self.blocked[i].load(Relaxed))
    }

    /// The would-be blocks (all kinds together) counted in the second `second` (whole seconds
    /// on the runtime clock), if it is one of the last [`SECONDS`] seconds the resource saw
    /// would-be blocks in; else 0.
    pub(crate) fn blocks_in_second(&self, second: u64) -> u64 {
        match self.per_second.get() {
            Some(ring) => count_in_second(&ring[..], second),
            None => 0,
        }
    }

    /// The would-be waits: how many calls, and their waits added up in nanoseconds.
    pub(crate) fn waits(&self) -> (u64, u64) {
        (self.waited.load(Relaxed), self.wait_nanos.load(Relaxed))
    }

    /// The "would block" event, if none was emitted in the second of `now` (one caller a
    /// second wins the compare-and-swap and reports the would-be blocks since the last event).
    #[cfg(feature = "tracing")]
    fn event(&self, resource: &str, now: u64, rule: &str) {
        use std::sync::atomic::Ordering::AcqRel;
        let second = now / 1_000_000_000 + 1;
        let last = self.event_second.load(Relaxed);
        if last >= second
            || self
                .event_second
                .compare_exchange(last, second, AcqRel, Relaxed)
                .is_err()
        {
            return;
        }
        let total: u64 = self.blocks_by_rule().iter().sum();
        let since = total.saturating_sub(self.reported.fetch_max(total, AcqRel));
        tracing::info!(
            target: "sentinel",
            resource,
            would_block = since,
            rule,
            "shadow rules would block: calls they would have refused since the last report (none \
             was refused)"
        );
    }
}

/// Seconds of would-be blocks a resource keeps (a minute, rounded up to a power of two).
pub(crate) const SECONDS: usize = 64;

/// A second's tag in its slot: the second plus one, truncated to 32 bits (0: a slot never
/// written).
fn tag(second: u64) -> u32 {
    second.wrapping_add(1) as u32
}

/// Adds `count` to `second`'s slot of `ring`. A slot is one word, the second's tag above its
/// count (saturating at `u32::MAX` a second), replaced whole by one compare-and-swap: a slot
/// still holding an older second starts afresh with this one (nothing of that second is lost
/// that could still be read: it is more than [`SECONDS`] seconds old), and one already holding
/// a newer second is left alone (a caller delayed by a minute drops its count).
///
/// Generic over the word so that the model tests run it on loom's atomics; `ring` holds
/// [`SECONDS`] slots (an empty one counts nothing).
pub(crate) fn add_to_second<A: AtomicWord>(ring: &[A], second: u64, count: u32) {
    let Some(slot) = ring.get(second as usize % SECONDS) else {
        return;
    };
    let mine = tag(second);
    let mut word = slot.load(Relaxed);
    loop {
        let (held, n) = ((word >> 32) as u32, word as u32);
        let n = match held {
            _ if held == mine => n.saturating_add(count),
            // Newer than this second by less than half the tag's range: leave it.
            _ if held != 0 && (held.wrapping_sub(mine) as i32) > 0 => return,
            _ => count,
        };
        let new = (u64::from(mine) << 32) | u64::from(n);
        match slot.compare_exchange_weak(word, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(seen) => word = seen,
        }
    }
}

/// The count of `second` in `ring` (see [`add_to_second`]): its slot's count if the slot holds
/// that second, else 0.
pub(crate) fn count_in_second<A: AtomicWord>(ring: &[A], second: u64) -> u64 {
    let Some(slot) = ring.get(second as usize % SECONDS) else {
        return 0;
    };
    let word = slot.load(Relaxed);
    match word >> 32 == u64::from(tag(second)) {
        true => word & u64::from(u32::MAX),
        false => 0,
    }
}

#[cfg(test)]
mod second_tests {
    use super::*;

    #[test]
    fn each_second_keeps_its_own_count_for_a_minute() {
        let stats = ShadowStats::default();
        assert_eq!(stats.blocks_in_second(0), 0, "none yet");
        const S: u64 = 1_000_000_000;
        stats.on_block("shadow-seconds", 0, 2, (0, "flow"));
        stats.on_block("shadow-seconds", S / 2, 1, (1, "concurrency"));
        stats.on_block("shadow-seconds", 3 * S, 4, (0, "flow"));
        assert_eq!(stats.blocks_in_second(0), 3);
        assert_eq!(stats.blocks_in_second(1), 0);
        assert_eq!(stats.blocks_in_second(3), 4);
        // 64 seconds later the slot of second 0 is second 64's.
        stats.on_block("shadow-seconds", 64 * S, 5, (0, "flow"));
        assert_eq!(stats.blocks_in_second(64), 5);
        assert_eq!(stats.blocks_in_second(0), 0, "over a minute old");
        // A late caller with second 0 leaves second 64's count alone.
        stats.on_block("shadow-seconds", 0, 7, (0, "flow"));
        assert_eq!(stats.blocks_in_second(64), 5);
        assert_eq!(stats.blocks_by_rule()[0], 18, "the totals count every call");
    }

    #[test]
    fn a_seconds_count_saturates_instead_of_reaching_the_tag() {
        let stats = ShadowStats::default();
        stats.on_block("shadow-saturate", 5_000_000_000, u32::MAX, (0, "flow"));
        stats.on_block("shadow-saturate", 5_000_000_000, 3, (0, "flow"));
        assert_eq!(stats.blocks_in_second(5), u64::from(u32::MAX));
        assert_eq!(stats.blocks_in_second(6), 0);
    }
}

#[cfg(test)]
#[cfg(feature = "tracing")]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};

    use super::ShadowStats;

    /// Keeps the level and the `would_block` field of the events on target `sentinel`.
    struct Events(Arc<Mutex<Vec<(tracing::Level, u64)>>>);
    struct WouldBlock(u64);
    impl Visit for WouldBlock {
        fn record_u64(&mut self, field: &Field, value: u64) {
            if field.name() == "would_block" {
                self.0 = value;
            }
        }
        fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
    }
    impl tracing::Subscriber for Events {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if event.metadata().target() == "sentinel" {
                let mut seen = WouldBlock(u64::MAX);
                event.record(&mut seen);
                let level = *event.metadata().level();
                self.0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((level, seen.0));
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn would_block_is_reported_at_info_at_most_once_a_second() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stats = ShadowStats::default();
        const S: u64 = 1_000_000_000;
        tracing::subscriber::with_default(Events(Arc::clone(&seen)), || {
            for at in [0, S / 4, S / 2, S + 1, S + 2, 3 * S] {
                stats.on_block("shadow-event", at, 2, (0, "flow"));
            }
        });
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        use tracing::Level;
        // The first of each second reports what was counted since the last report.
        assert_eq!(
            seen,
            vec![(Level::INFO, 2), (Level::INFO, 6), (Level::INFO, 4)]
        );
        assert_eq!(stats.blocks_by_rule()[0], 12);
    }
}
