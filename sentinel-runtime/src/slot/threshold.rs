//! [`Threshold`]: a rule's threshold as the checks read it on every call, changed in place by a
//! reload.

use std::sync::atomic::{AtomicU64, Ordering::*};

use super::qps_ring::MAX_COUNT;

/// A rule's threshold as the gate reads it on every call.
#[derive(Debug)]
pub(crate) struct Threshold {
    /// `floor(threshold)`, the count compared against: at most the QPS ring's largest count
    /// ([`MAX_COUNT`], also the largest threshold a rule may have).
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
        self.limit
            .store((threshold.floor() as u64).min(MAX_COUNT), Release);
    }

    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        self.limit.load(Acquire)
    }

    pub(crate) fn given(&self) -> f64 {
        f64::from_bits(self.given.load(Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The QPS ring reads the limit without clamping it: a threshold over its largest count
    /// (none that validation passes, but `set` takes any) is held at that count.
    #[test]
    fn the_limit_never_exceeds_the_rings_largest_count() {
        let t = Threshold::new(1e12);
        assert_eq!(t.limit(), MAX_COUNT);
        assert_eq!(t.given(), 1e12, "the error still names the threshold given");
        t.set(f64::INFINITY);
        assert_eq!(t.limit(), MAX_COUNT);
        t.set(12.7);
        assert_eq!(t.limit(), 12);
    }
}
