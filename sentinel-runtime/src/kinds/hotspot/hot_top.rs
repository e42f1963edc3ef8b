//! The values a hotspot rule blocked most in the last minute: a bounded top-K (space-saving)
//! per clock minute, fed only on the block path.
//!
//! Each gate keeps two summaries of at most [`TOP_K`] values: the current clock minute's and
//! the previous one's; a block in a new minute shifts them (a gap of more than a minute clears
//! both). [`BlockedTop::top`] merges the two: the blocks of the last one to two minutes. Within
//! a summary the counts are exact while it has seen at most [`TOP_K`] distinct values; past that
//! the space-saving rule replaces the least-counted value and the newcomer inherits its count
//! (an over-estimate of at most that count, kept as `error`), so a value blocked more than
//! `total / TOP_K` times is always listed.
//!
//! A block takes the lock with `try_lock`: a block that finds it taken (another block of the
//! same rule at the same instant) is not recorded but counted in `missed`, so a flood of blocks
//! never waits on the dashboard's bookkeeping. Admitted calls never come here.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The most value texts [`note_text`] keeps; past it the table starts again empty (bounded
/// memory: at most this many texts of at most [`MAX_TEXT`] bytes).
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) const MAX_TEXTS: usize = 4_096;
/// The longest text kept for a value (longer texts are cut at a character boundary).
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) const MAX_TEXT: usize = 128;

/// The texts of blocked values whose callers supplied them as text (the tower layer's
/// parameters: a client's address, a custom parameter's string), by the value's hash.
static TEXTS: Mutex<Option<HashMap<u64, Box<str>>>> = Mutex::new(None);

/// Remembers that the value hashed to `hash` reads `text`, for showing blocked values (called on
/// a block path only: never for an admitted call).
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) fn note_text(hash: u64, text: &str) {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    let texts = texts.get_or_insert_with(HashMap::new);
    if texts.len() >= MAX_TEXTS && !texts.contains_key(&hash) {
        texts.clear();
    }
    texts.insert(hash, text[..end].into());
}

/// The text [`note_text`] remembered for `hash`, if any.
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) fn text_of(hash: u64) -> Option<String> {
    let texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    texts.as_ref()?.get(&hash).map(|t| t.to_string())
}

/// How many values each minute's summary keeps.
pub(crate) const TOP_K: usize = 16;

const MINUTE_NANOS: u64 = 60_000_000_000;

/// One value in a summary: its hash, its count, and how much of the count it may have
/// inherited from the value it replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) key: u64,
    pub(crate) count: u64,
    pub(crate) error: u64,
}

/// A space-saving summary of at most [`TOP_K`] values.
#[derive(Debug, Default, Clone)]
pub(crate) struct SpaceSaving {
    entries: Vec<Counted>,
}

impl SpaceSaving {
    /// Counts `n` blocks of `key`.
    pub(crate) fn add(&mut self, key: u64, n: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.key == key) {
            e.count = e.count.saturating_add(n);
        } else if self.entries.len() < TOP_K {
            self.entries.push(Counted {
                key,
                count: n,
                error: 0,
            });
        } else if let Some(least) = self.entries.iter_mut().min_by_key(|e| e.count) {
            *least = Counted {
                key,
                count: least.count.saturating_add(n),
                error: least.count,
            };
        }
    }

    /// The values kept, in no order.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn entries(&self) -> &[Counted] {
        &self.entries
    }
}

#[derive(Debug, Default)]
struct Minutes {
    /// The clock minute (`now / 60 s`) of `current`.
    minute: u64,
    current: SpaceSaving,
    previous: SpaceSaving,
}

impl Minutes {
    fn advance(&mut self, minute: u64) {
        if minute == self.minute {
            return;
        }
        self.previous = if minute == self.minute + 1 {
            std::mem::take(&mut self.current)
        } else {
            SpaceSaving::default()
        };
        self.current = SpaceSaving::default();
        self.minute = minute;
    }
}

/// The most-blocked values of one hotspot rule (see the module's docs).
#[derive(Debug, Default)]
pub(crate) struct BlockedTop {
    minutes: Mutex<Minutes>,
    missed: std::sync::atomic::AtomicU64,
}

impl BlockedTop {
    /// Records `n` blocked calls of `key` at `now` (clock nanoseconds). Never waits.
    #[cold]
    #[inline(never)]
    pub(crate) fn record(&self, key: u64, now: u64, n: u32) {
        match self.minutes.try_lock() {
            Ok(mut m) => {
                let minute = now / MINUTE_NANOS;
                if minute < m.minute {
                    // A clock read before a later one recorded: count it in the current minute.
                    m.current.add(key, u64::from(n));
                    return;
                }
                m.advance(minute);
                m.current.add(key, u64::from(n));
            }
            Err(_) => {
                self.missed
                    .fetch_add(u64::from(n), std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// The values blocked in the current and the previous clock minute as of `now`, most
    /// blocked first (ties by hash), with the error bound of each count; and the blocks not
    /// recorded (found the lock taken) since the start.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn top(&self, now: u64) -> (Vec<Counted>, u64) {
        let missed = self.missed.load(std::sync::atomic::Ordering::Relaxed);
        let mut m = self
            .minutes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let minute = now / MINUTE_NANOS;
        if minute > m.minute {
            m.advance(minute);
        }
        let mut merged: Vec<Counted> = m.current.entries().to_vec();
        for p in m.previous.entries() {
            match merged.iter_mut().find(|e| e.key == p.key) {
                Some(e) => {
                    e.count = e.count.saturating_add(p.count);
                    e.error = e.error.saturating_add(p.error);
                }
                None => merged.push(*p),
            }
        }
        merged.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        merged.truncate(TOP_K);
        (merged, missed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn value_texts_are_bounded_and_cut_at_a_character_boundary() {
        note_text(u64::MAX - 1, "2001:db8:1:2::/64");
        assert_eq!(text_of(u64::MAX - 1).as_deref(), Some("2001:db8:1:2::/64"));
        let long = "é".repeat(100); // 200 bytes
        note_text(u64::MAX - 2, &long);
        let kept = text_of(u64::MAX - 2).unwrap_or_default();
        assert!(kept.len() <= MAX_TEXT && long.starts_with(&kept), "{kept}");
        for key in 0..(MAX_TEXTS as u64 + 10) {
            note_text(key, "x");
        }
        let texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(texts.as_ref().map_or(0, HashMap::len) <= MAX_TEXTS);
    }

    #[test]
    fn minutes_shift_and_clear() {
        let top = BlockedTop::default();
        let m = MINUTE_NANOS;
        top.record(1, 10 * m, 2);
        top.record(2, 10 * m + 5, 1);
        top.record(1, 11 * m, 3);
        let (t, missed) = top.top(11 * m + 1);
        assert_eq!(missed, 0);
        let counts: Vec<(u64, u64)> = t.iter().map(|c| (c.key, c.count)).collect();
        assert_eq!(counts, vec![(1, 5), (2, 1)]);
        // The minute before the previous one is gone.
        assert_eq!(top.top(12 * m).0.iter().map(|c| c.count).sum::<u64>(), 3);
        assert!(top.top(13 * m).0.is_empty());
        // A gap of more than a minute clears both.
        top.record(5, 20 * m, 1);
        top.record(6, 22 * m, 1);
        let keys: Vec<u64> = top.top(22 * m).0.iter().map(|c| c.key).collect();
        assert_eq!(keys, vec![6]);
    }

    proptest::proptest! {
        /// Against an exact count per value: every kept count is within its error of the
        /// truth and never below it, the counts sum to the total, at most `TOP_K` values are
        /// kept, and every value counted more than `total / TOP_K` times is kept; with at most
        /// `TOP_K` distinct values the counts are exact.
        #[test]
        fn space_saving_bounds_hold_against_exact_counts(
            adds in proptest::collection::vec((0u64..40, 1u64..5), 0..400),
        ) {
            let mut s = SpaceSaving::default();
            let mut exact: HashMap<u64, u64> = HashMap::new();
            for &(key, n) in &adds {
                s.add(key, n);
                *exact.entry(key).or_default() += n;
            }
            let total: u64 = exact.values().sum();
            proptest::prop_assert!(s.entries().len() <= TOP_K);
            proptest::prop_assert_eq!(s.entries().iter().map(|e| e.count).sum::<u64>(), total);
            for e in s.entries() {
                let truth = exact.get(&e.key).copied().unwrap_or(0);
                proptest::prop_assert!(e.count >= truth);
                proptest::prop_assert!(e.count - e.error <= truth);
                if exact.len() <= TOP_K {
                    proptest::prop_assert_eq!(e.count, truth);
                    proptest::prop_assert_eq!(e.error, 0);
                }
            }
            for (key, &truth) in &exact {
                if truth * TOP_K as u64 > total {
                    proptest::prop_assert!(s.entries().iter().any(|e| e.key == *key));
                }
            }
        }
    }
}
