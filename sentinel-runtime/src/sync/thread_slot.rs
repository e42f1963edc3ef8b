//! Each thread's slot number: a small index, unique among the threads alive, that per-thread
//! state (statistics shards, hazard slots) is indexed by.

use std::sync::{Mutex, PoisonError};

/// Threads that can hold a slot at once; more get [`NO_SLOT`].
pub(crate) const MAX_SLOTS: usize = 64;
/// No slot: the thread is being torn down, or more than [`MAX_SLOTS`] threads are alive.
pub(crate) const NO_SLOT: usize = usize::MAX;

struct SlotPool {
    next: usize,
    free: Vec<usize>,
}

static POOL: Mutex<SlotPool> = Mutex::new(SlotPool {
    next: 0,
    free: Vec::new(),
});

/// A thread's lease on a slot number, returned to the pool when the thread exits.
struct SlotLease(usize);

impl SlotLease {
    fn acquire() -> SlotLease {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = pool.free.pop() {
            SlotLease(slot)
        } else if pool.next < MAX_SLOTS {
            pool.next += 1;
            SlotLease(pool.next - 1)
        } else {
            SlotLease(NO_SLOT)
        }
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        if self.0 != NO_SLOT {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            pool.free.push(self.0);
        }
    }
}

thread_local! {
    static LEASE: SlotLease = SlotLease::acquire();
}

/// This thread's slot, or [`NO_SLOT`].
#[inline]
pub(crate) fn thread_slot() -> usize {
    LEASE.try_with(|lease| lease.0).unwrap_or(NO_SLOT)
}
