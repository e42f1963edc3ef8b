//! The concurrency check: at most `limit` calls inside a resource at once, counted by the
//! resource itself so that a reloaded rule counts the calls already inside.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use crossbeam_utils::CachePadded;

/// The calls inside one resource, counted exactly from the first time a concurrency rule is put
/// in force on it (before that, counting would cost every call a shared atomic add).
///
/// When counting starts, the calls already inside (the node's statistics know how many) become
/// the *seed*: they did not take the counter, and each of them takes one off the seed when it
/// exits. So a concurrency rule loaded while calls are inside counts them. A call racing with the
/// very load (entering within the same few nanoseconds) may be missed by the seed and then takes
/// one off it anyway: the error is at most that many calls, only until those calls exit, and on
/// the side of admitting. The seed counts a call already inside as one place, whatever its
/// batch (the statistics count calls, not places).
#[derive(Debug, Default)]
pub(crate) struct ConcurrencyCounter {
    /// Places held by the calls inside that took the counter (a batch holds one per pass).
    inside: CachePadded<AtomicU64>,
    /// Calls that were inside when counting started and have not exited yet.
    seed: AtomicU64,
    /// Counting has started: every entry takes the counter from now on.
    tracking: AtomicBool,
}

impl ConcurrencyCounter {
    /// Whether entries take the counter.
    #[inline(always)]
    pub(crate) fn is_tracking(&self) -> bool {
        self.tracking.load(Acquire)
    }

    /// Starts counting (once); `inflight()` is the number of calls inside by the statistics.
    pub(crate) fn start(&self, inflight: impl FnOnce() -> i64) {
        if self.tracking.swap(true, SeqCst) {
            return;
        }
        // Entries that saw `tracking` take the counter before their statistics count them, so
        // this never counts one of them twice.
        let untracked = inflight() - self.inside.load(SeqCst) as i64;
        self.seed.store(untracked.max(0) as u64, SeqCst);
    }

    /// Takes `n` places if the calls inside plus `n` stay within `limit` (any number without a
    /// limit), as Sentinel's `DefaultController.canPass` decides for a thread-count rule: a call
    /// that acquires `n` holds `n` places while it is inside.
    #[inline]
    pub(crate) fn try_acquire(&self, limit: Option<u64>, n: u64) -> bool {
        let inside = self.inside.fetch_add(n, AcqRel).saturating_add(n);
        match limit {
            Some(limit) if inside.saturating_add(self.seed.load(Acquire)) > limit => {
                self.inside.fetch_sub(n, AcqRel);
                false
            }
            _ => true,
        }
    }

    /// A call that took `n` places exits (or is given up).
    #[inline]
    pub(crate) fn release(&self, n: u64) {
        self.inside.fetch_sub(n, AcqRel);
    }

    /// A call exits: `held` is the places it took (0: none; then, if counting started after it
    /// entered, it leaves the seed, which counts each call already inside as one place).
    #[inline]
    pub(crate) fn exit(&self, held: u64) {
        if held != 0 {
            self.release(held);
        } else if self.is_tracking() {
            self.release_untracked();
        }
    }

    /// A call that did not take a place (it entered before counting started) exits.
    #[inline]
    pub(crate) fn release_untracked(&self) {
        let _ = self
            .seed
            .fetch_update(AcqRel, Acquire, |seed| seed.checked_sub(1));
    }

    /// Calls inside, as counted.
    pub(crate) fn current(&self) -> u64 {
        self.inside.load(Acquire) + self.seed.load(Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_calls_already_inside_when_counting_starts() {
        let c = ConcurrencyCounter::default();
        c.start(|| 5);
        assert!(!c.try_acquire(Some(2), 1));
        for _ in 0..3 {
            c.release_untracked();
        }
        assert!(!c.try_acquire(Some(2), 1), "2 of the 5 are still inside");
        c.release_untracked();
        c.release_untracked();
        c.release_untracked(); // one more than the seed: saturates
        assert!(c.try_acquire(Some(2), 1));
        assert!(c.try_acquire(Some(2), 1));
        assert!(!c.try_acquire(Some(2), 1));
        assert_eq!(c.current(), 2);
        c.release(1);
        assert!(c.try_acquire(Some(2), 1));
        assert!(c.try_acquire(None, 1), "no limit: always a place");
    }

    #[test]
    fn a_batch_takes_and_gives_back_its_places() {
        let c = ConcurrencyCounter::default();
        c.start(|| 0);
        assert!(!c.try_acquire(Some(10), u64::from(u32::MAX)));
        assert!(!c.try_acquire(Some(10), 11));
        assert!(c.try_acquire(Some(10), 9));
        assert!(!c.try_acquire(Some(10), 2), "9 inside + 2 > 10");
        assert!(c.try_acquire(Some(10), 1));
        assert_eq!(c.current(), 10);
        c.exit(9);
        assert_eq!(c.current(), 1);
        assert!(c.try_acquire(Some(10), 9));
    }
}
