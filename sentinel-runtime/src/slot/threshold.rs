//! [`Threshold`]: a rule's threshold as the checks read it on every call, changed in place by a
//! reload.

use std::sync::atomic::{AtomicU64, Ordering::*};

/// A rule's threshold as the gate reads it on every call.
#[derive(Debug)]
pub(crate) struct Threshold {
    /// `floor(threshold)`, the count compared against.
    limit: AtomicU64,
    /// The threshold as given (`f64` bits), for the error.
    given: AtomicU64,
}

impl Threshold {
    pub(crate) fn new(threshold: f64) -> Threshold {
        let t = Threshold {
            limit: AtomicU64::new(0),
            given: AtomicU64::new(0),
        };
        t.set(threshold);
        t
    }

    pub(crate) fn set(&self, threshold: f64) {
        self.given.store(threshold.to_bits(), Release);
        self.limit.store(threshold.floor() as u64, Release);
    }

    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        self.limit.load(Acquire)
    }

    pub(crate) fn given(&self) -> f64 {
        f64::from_bits(self.given.load(Acquire))
    }
}
