//! A counter word that carries its own period: `tag` (upper 32 bits) is the bucket period the
//! value (lower 32 bits) belongs to.
//!
//! Because period and value change together in one atomic word, a stale counter is recognised
//! and restarted by the same single store or CAS that adds the first count of the new period:
//! there is no separate "reset" step for a concurrent add to slip past, so no count is lost.

use std::sync::atomic::{AtomicU64, Ordering};

/// How a counter combines a new value with the one it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    /// Saturating sum (counts, response-time sums).
    Add,
    /// Keep the larger (the minimum response time, stored as `u32::MAX - rt`).
    Max,
}

impl Merge {
    #[inline]
    pub(crate) fn apply(self, held: u32, new: u32) -> u32 {
        match self {
            Merge::Add => held.saturating_add(new),
            Merge::Max => held.max(new),
        }
    }
}

#[inline]
pub(crate) const fn pack(tag: u32, value: u32) -> u64 {
    ((tag as u64) << 32) | value as u64
}

#[inline]
pub(crate) const fn tag(word: u64) -> u32 {
    (word >> 32) as u32
}

#[inline]
pub(crate) const fn value(word: u64) -> u32 {
    word as u32
}

/// The 32-bit tag of a period.
#[inline]
pub(crate) const fn tag_of(period: u64) -> u32 {
    period as u32
}

/// Tags further ahead than this are taken as stale wrap-arounds, not as newer periods.
const NEWER_LIMIT: i32 = 1 << 30;

/// How many periods `word_tag` lies behind `period`: 0 is the same period, positive is older,
/// negative is newer (the caller's reading is older than the counter's period).
#[inline]
pub(crate) fn age(period: u32, word_tag: u32) -> i32 {
    period.wrapping_sub(word_tag) as i32
}

/// Where an add lands, given the word it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landing {
    /// The word's period is the caller's or newer: merge into it.
    Merge,
    /// The word is stale: restart it at the caller's period; its old value is displaced.
    Restart,
}

#[inline]
pub(crate) fn landing(period: u32, word_tag: u32) -> Landing {
    let age = age(period, word_tag);
    if age == 0 || (age < 0 && age > -NEWER_LIMIT) {
        Landing::Merge
    } else {
        Landing::Restart
    }
}

/// A value pushed out of a counter by a new period: `age` periods before the add's period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Displaced {
    pub(crate) age: u32,
    pub(crate) value: u32,
}

/// The word after adding `add` at `period`, and what it displaced.
#[inline]
fn step(word: u64, period: u32, add: u32, merge: Merge) -> (u64, Option<Displaced>) {
    // The common case first: same period, no saturation.
    if tag(word) == period {
        match merge {
            Merge::Add if value(word) <= u32::MAX - add => return (word + u64::from(add), None),
            Merge::Max if value(word) >= add => return (word, None),
            _ => {}
        }
    }
    match landing(period, tag(word)) {
        Landing::Merge => (pack(tag(word), merge.apply(value(word), add)), None),
        Landing::Restart => {
            let displaced = Displaced {
                age: age(period, tag(word)) as u32,
                value: value(word),
            };
            (pack(period, add), Some(displaced))
        }
    }
}

/// Adds with a CAS loop: any number of threads may add to the word at once, exactly.
#[inline]
pub(crate) fn add_shared(
    word: &AtomicU64,
    period: u32,
    add: u32,
    merge: Merge,
) -> Option<Displaced> {
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let (next, displaced) = step(current, period, add, merge);
        if next == current {
            return displaced;
        }
        match word.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return displaced,
            Err(seen) => current = seen,
        }
    }
}

/// Adds with a plain load and store. Exact only while the caller is the word's one writer (the
/// per-thread statistics shards guarantee that); readers may read concurrently.
#[inline]
pub(crate) fn add_exclusive(
    word: &AtomicU64,
    period: u32,
    add: u32,
    merge: Merge,
) -> Option<Displaced> {
    let current = word.load(Ordering::Relaxed);
    let (next, displaced) = step(current, period, add, merge);
    if next != current {
        word.store(next, Ordering::Release);
    }
    displaced
}

/// The word's value if it belongs to one of the `len` periods ending at `period`.
#[inline]
pub(crate) fn value_in_window(word: u64, period: u32, len: u32) -> Option<u32> {
    let age = age(period, tag(word));
    (age >= 0 && (age as u32) < len).then_some(value(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips() {
        let w = pack(0xDEAD_BEEF, 42);
        assert_eq!((tag(w), value(w)), (0xDEAD_BEEF, 42));
    }

    #[test]
    fn stale_word_restarts_and_reports_what_it_displaced() {
        let w = AtomicU64::new(pack(7, 5));
        let d = add_shared(&w, 9, 1, Merge::Add);
        assert_eq!(d, Some(Displaced { age: 2, value: 5 }));
        assert_eq!(w.load(Ordering::Relaxed), pack(9, 1));
    }

    #[test]
    fn newer_word_takes_the_late_count() {
        let w = AtomicU64::new(pack(9, 5));
        assert_eq!(add_exclusive(&w, 8, 1, Merge::Add), None);
        assert_eq!(w.load(Ordering::Relaxed), pack(9, 6));
    }

    #[test]
    fn tags_compare_across_wrap_around() {
        assert_eq!(age(2, u32::MAX), 3);
        assert_eq!(landing(2, u32::MAX), Landing::Restart);
        assert_eq!(landing(u32::MAX, 2), Landing::Merge);
        assert_eq!(value_in_window(pack(u32::MAX, 4), 1, 3), Some(4));
        assert_eq!(value_in_window(pack(u32::MAX, 4), 2, 3), None);
    }

    #[test]
    fn counts_saturate_instead_of_wrapping_into_the_tag() {
        let w = AtomicU64::new(pack(1, u32::MAX - 1));
        add_shared(&w, 1, 10, Merge::Add);
        assert_eq!(w.load(Ordering::Relaxed), pack(1, u32::MAX));
    }
}
