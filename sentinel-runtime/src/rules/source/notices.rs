//! What rule watchers say that an operator must see even without reading a watcher's status:
//! rules refused or not read (the store unreachable, no document there), and a document that
//! removed every rule. The latest [`KEPT`] are kept, numbered, for the dashboard's event
//! stream; [`warn`] also gives a `tracing` event (feature `tracing`, target `sentinel`).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// How many notices are kept (the oldest go first).
pub(crate) const KEPT: usize = 32;
/// The most bytes of words a notice keeps (a refusal lists up to 100 problems); longer words
/// are cut, ending in `...`.
pub(crate) const MAX_WORDS: usize = 2_000;

/// One thing a watcher said.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) struct Notice {
    /// Its number: one more than the notice before it (the first is 1).
    pub(crate) seq: u64,
    /// The source it is about ([`RuleSource::origin`](super::RuleSource::origin)).
    pub(crate) source: String,
    /// What happened, in words.
    pub(crate) words: String,
}

/// Notices: the number of the last one, and the latest [`KEPT`].
type Kept = Mutex<(u64, VecDeque<Notice>)>;

/// The process's notices.
static NOTICES: Kept = Mutex::new((0, VecDeque::new()));

/// Keeps a notice about `source` (its `tracing` event, if any, was given by the caller).
pub(crate) fn keep(source: &Path, words: impl Into<String>) {
    keep_in(&NOTICES, source, words.into());
}

fn keep_in(kept: &Kept, source: &Path, words: String) {
    let words = cut(words);
    let mut notices = kept.lock().unwrap_or_else(PoisonError::into_inner);
    notices.0 += 1;
    let notice = Notice {
        seq: notices.0,
        source: source.display().to_string(),
        words,
    };
    if notices.1.len() == KEPT {
        notices.1.pop_front();
    }
    notices.1.push_back(notice);
}

/// `words`, cut to at most [`MAX_WORDS`] bytes.
fn cut(mut words: String) -> String {
    if words.len() > MAX_WORDS {
        let mut end = MAX_WORDS - 3;
        while !words.is_char_boundary(end) {
            end -= 1;
        }
        words.truncate(end);
        words.push_str("...");
    }
    words
}

/// Keeps a notice about `source`, and gives it as a `tracing` warning (feature `tracing`).
pub(crate) fn warn(source: &Path, words: impl Into<String>) {
    let words = words.into();
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "sentinel", kind = "rule_set", file = %source.display(), "{words}");
    keep(source, words);
}

/// The number of the latest notice (0: none yet), and the notices kept after `seq`, oldest
/// first.
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) fn since(seq: u64) -> (u64, Vec<Notice>) {
    since_in(&NOTICES, seq)
}

#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
fn since_in(kept: &Kept, seq: u64) -> (u64, Vec<Notice>) {
    let notices = kept.lock().unwrap_or_else(PoisonError::into_inner);
    let newer = notices.1.iter().filter(|n| n.seq > seq).cloned().collect();
    (notices.0, newer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_numbered_and_bounded() {
        let kept: Kept = Mutex::new((0, VecDeque::new()));
        for n in 0..KEPT + 5 {
            keep_in(&kept, Path::new("notices-unit"), format!("n{n}"));
        }
        let (last, newer) = since_in(&kept, 0);
        assert_eq!(last, KEPT as u64 + 5);
        let seqs: Vec<u64> = newer.iter().map(|n| n.seq).collect();
        assert_eq!(seqs, (6..=KEPT as u64 + 5).collect::<Vec<_>>());
        assert_eq!(newer[0].words, "n5");
        let (_, after) = since_in(&kept, last - 2);
        assert_eq!(after.len(), 2);
        assert!(since_in(&kept, last).1.is_empty());
    }

    #[test]
    fn long_words_are_cut() {
        let words = cut("é".repeat(MAX_WORDS));
        assert!(
            words.len() <= MAX_WORDS && words.ends_with("..."),
            "{}",
            words.len()
        );
        assert!(words.len() > MAX_WORDS - 5);
        assert_eq!(cut("short".into()), "short");
    }
}
