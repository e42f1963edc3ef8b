//! The atomic word the lock-free windows are written against: `std`'s `AtomicU64` in the
//! product, loom's in the model tests, so the same code runs under both.

use std::sync::atomic::{AtomicU64, Ordering};

/// The operations the windows use on a 64-bit atomic word, plus how to wait for another thread
/// that holds a short critical section.
pub(crate) trait AtomicWord: Send + Sync {
    fn new(value: u64) -> Self;
    fn load(&self, order: Ordering) -> u64;
    fn store(&self, value: u64, order: Ordering);
    fn swap(&self, value: u64, order: Ordering) -> u64;
    fn fetch_add(&self, value: u64, order: Ordering) -> u64;
    fn fetch_min(&self, value: u64, order: Ordering) -> u64;
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    /// Called while waiting for another thread's short critical section (a bucket restart).
    fn spin_wait();
}

impl AtomicWord for AtomicU64 {
    #[inline(always)]
    fn new(value: u64) -> Self {
        AtomicU64::new(value)
    }
    #[inline(always)]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }
    #[inline(always)]
    fn store(&self, value: u64, order: Ordering) {
        AtomicU64::store(self, value, order)
    }
    #[inline(always)]
    fn swap(&self, value: u64, order: Ordering) -> u64 {
        AtomicU64::swap(self, value, order)
    }
    #[inline(always)]
    fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_add(self, value, order)
    }
    #[inline(always)]
    fn fetch_min(&self, value: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_min(self, value, order)
    }
    #[inline(always)]
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }
    #[inline(always)]
    fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        AtomicU64::compare_exchange_weak(self, current, new, success, failure)
    }
    #[inline]
    fn spin_wait() {
        // The section waited for is a handful of stores; give the holder the core if it was
        // preempted in it.
        std::thread::yield_now();
    }
}

#[cfg(test)]
impl AtomicWord for loom::sync::atomic::AtomicU64 {
    fn new(value: u64) -> Self {
        loom::sync::atomic::AtomicU64::new(value)
    }
    fn load(&self, order: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::load(self, order)
    }
    fn store(&self, value: u64, order: Ordering) {
        loom::sync::atomic::AtomicU64::store(self, value, order)
    }
    fn swap(&self, value: u64, order: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::swap(self, value, order)
    }
    fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::fetch_add(self, value, order)
    }
    fn fetch_min(&self, value: u64, order: Ordering) -> u64 {
        loom::sync::atomic::AtomicU64::fetch_min(self, value, order)
    }
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        loom::sync::atomic::AtomicU64::compare_exchange(self, current, new, success, failure)
    }
    fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        loom::sync::atomic::AtomicU64::compare_exchange_weak(self, current, new, success, failure)
    }
    fn spin_wait() {
        loom::thread::yield_now();
    }
}
