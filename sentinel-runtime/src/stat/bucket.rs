//! [`MetricBucket`]: the counters of one time bucket.

use std::sync::atomic::{AtomicU64, Ordering};

use super::word::{self, Displaced, Merge};

/// The events a [`MetricBucket`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricEvent {
    /// Calls admitted.
    Pass,
    /// Calls rejected by a rule.
    Block,
    /// Calls that finished (the entry was dropped).
    Complete,
    /// Calls that finished with an error or a panic.
    Error,
    /// Sum of response times, in microseconds.
    RtSum,
    /// The smallest response time, in microseconds (read with [`MetricBucket::min_rt`]).
    MinRt,
}

impl MetricEvent {
    /// Every event, in storage order.
    pub const ALL: [MetricEvent; 6] = [
        MetricEvent::Pass,
        MetricEvent::Block,
        MetricEvent::Complete,
        MetricEvent::Error,
        MetricEvent::RtSum,
        MetricEvent::MinRt,
    ];

    #[inline]
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub(crate) const fn merge(self) -> Merge {
        match self {
            MetricEvent::MinRt => Merge::Max,
            _ => Merge::Add,
        }
    }

    /// The stored form of a value: the minimum is kept as `u32::MAX - rt` so that "larger is
    /// better" and an empty (zero) counter means "no value".
    #[inline]
    pub(crate) const fn encode(self, value: u32) -> u32 {
        match self {
            MetricEvent::MinRt => u32::MAX - value,
            _ => value,
        }
    }
}

/// The counters of one bucket: pass, block, complete, error, response-time sum and minimum.
///
/// Each counter is one atomic word holding its bucket period beside its value, so a counter left
/// over from an old period is never read as current and is restarted by the add that finds it.
#[derive(Debug, Default)]
pub struct MetricBucket {
    words: [AtomicU64; 6],
}

impl MetricBucket {
    pub(crate) fn with_tag(tag: u32) -> MetricBucket {
        MetricBucket {
            words: std::array::from_fn(|_| AtomicU64::new(word::pack(tag, 0))),
        }
    }

    #[inline]
    pub(crate) fn add_shared(&self, event: MetricEvent, tag: u32, value: u32) -> Option<Displaced> {
        word::add_shared(
            &self.words[event.index()],
            tag,
            event.encode(value),
            event.merge(),
        )
    }

    #[inline]
    pub(crate) fn add_exclusive(
        &self,
        event: MetricEvent,
        tag: u32,
        value: u32,
    ) -> Option<Displaced> {
        word::add_exclusive(
            &self.words[event.index()],
            tag,
            event.encode(value),
            event.merge(),
        )
    }

    /// The one-writer fast path: adds `value` to `event` with a plain load and store if the
    /// counter already belongs to the period tagged `tag` and nothing saturates. Returns false
    /// (changing nothing) when the general path is needed: a new period, or saturation.
    #[inline(always)]
    pub(crate) fn bump_exclusive(&self, event: MetricEvent, tag: u32, value: u32) -> bool {
        let word = &self.words[event.index()];
        let w = word.load(Ordering::Relaxed);
        if word::tag(w) != tag {
            return false;
        }
        let encoded = event.encode(value);
        match event.merge() {
            Merge::Add => {
                if word::value(w) > u32::MAX - encoded {
                    return false;
                }
                word.store(w + u64::from(encoded), Ordering::Release);
            }
            Merge::Max => {
                if encoded > word::value(w) {
                    word.store(word::pack(tag, encoded), Ordering::Release);
                }
            }
        }
        true
    }

    /// The raw (encoded) value of `event` if it belongs to one of the `len` periods ending at
    /// the period tagged `tag`.
    #[inline]
    pub(crate) fn raw_in_window(&self, event: MetricEvent, tag: u32, len: u32) -> Option<u32> {
        word::value_in_window(self.words[event.index()].load(Ordering::Acquire), tag, len)
    }

    /// The raw value of `event` and its period tag.
    #[inline]
    pub(crate) fn raw(&self, event: MetricEvent) -> (u32, u32) {
        let w = self.words[event.index()].load(Ordering::Acquire);
        (word::tag(w), word::value(w))
    }

    /// The count of `event` if the counter belongs to the period tagged `tag`, else 0.
    pub fn get(&self, event: MetricEvent, tag: u32) -> u64 {
        match self.raw_in_window(event, tag, 1) {
            Some(v) if event == MetricEvent::MinRt => u64::from(u32::MAX - v),
            Some(v) => u64::from(v),
            None => 0,
        }
    }

    /// The smallest response time (microseconds) recorded for the period tagged `tag`.
    pub fn min_rt(&self, tag: u32) -> Option<u32> {
        match self.raw_in_window(MetricEvent::MinRt, tag, 1) {
            Some(0) | None => None,
            Some(v) => Some(u32::MAX - v),
        }
    }
}
