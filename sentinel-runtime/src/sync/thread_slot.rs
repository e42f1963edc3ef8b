//! Each thread's slot number: a small index, unique among the threads alive, that per-thread
//! state (statistics shards, hazard slots) is indexed by.

use std::cell::Cell;
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
        // The thread's last calls (in later thread-local destructors) run without a slot: the
        // number may go to a new thread now.
        SLOT.set(NO_SLOT);
        if self.0 != NO_SLOT {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            pool.free.push(self.0);
        }
    }
}

/// [`SLOT`] before the thread's first call: the lease is not taken yet.
const UNASSIGNED: usize = NO_SLOT - 1;

thread_local! {
    /// The lease, given back by its destructor.
    static LEASE: SlotLease = SlotLease::acquire();
    /// A copy of the lease's number, read on every call: a thread-local with a constant
    /// initializer and no destructor is one load, where reading `LEASE` also tests whether it
    /// was initialized or destroyed.
    static SLOT: Cell<usize> = const { Cell::new(UNASSIGNED) };
}

/// This thread's slot, or [`NO_SLOT`].
#[inline]
pub(crate) fn thread_slot() -> usize {
    assigned(SLOT.get())
}

/// The slot of the thread whose [`thread_slot_if_assigned`] was `slot`: [`thread_slot`] after
/// that read.
#[inline]
pub(crate) fn assigned(slot: usize) -> usize {
    if slot < MAX_SLOTS {
        slot
    } else {
        assign(slot)
    }
}

/// This thread's slot if it has one already, else a number of [`MAX_SLOTS`] or more: one load,
/// no call (for a path whose only call is its last).
#[inline(always)]
pub(crate) fn thread_slot_if_assigned() -> usize {
    SLOT.get()
}

/// The slot of a thread without one yet: its lease taken (once: a thread that got none, or
/// whose lease was given back, keeps [`NO_SLOT`]).
#[cold]
#[inline(never)]
fn assign(slot: usize) -> usize {
    if slot != UNASSIGNED {
        return NO_SLOT;
    }
    let slot = LEASE.try_with(|lease| lease.0).unwrap_or(NO_SLOT);
    SLOT.set(slot);
    slot
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    /// This thread's lease, if it is still alive (`None` once its destructor ran).
    fn lease() -> Option<usize> {
        LEASE.try_with(|lease| lease.0).ok()
    }

    #[test]
    fn threads_alive_together_hold_different_slots_and_keep_them() {
        const THREADS: usize = 8;
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    let slot = thread_slot();
                    // Every thread has its slot before any thread ends.
                    barrier.wait();
                    assert_eq!(thread_slot(), slot, "a thread's slot changed");
                    assert_eq!(lease(), Some(slot));
                    slot
                })
            })
            .collect();
        let mut slots: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(slots.iter().all(|&s| s < MAX_SLOTS), "{slots:?}");
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), THREADS, "two live threads shared a slot");
    }

    /// Reads the slot from a thread-local destructor: whichever of it and the lease is
    /// destroyed first, a slot is returned only while the lease that owns it is alive.
    struct ReadAtExit(std::sync::mpsc::Sender<(usize, Option<usize>)>);

    impl Drop for ReadAtExit {
        fn drop(&mut self) {
            let _ = self.0.send((thread_slot(), lease()));
        }
    }

    thread_local! {
        static READ_AT_EXIT: std::cell::RefCell<Option<ReadAtExit>> =
            const { std::cell::RefCell::new(None) };
    }

    #[test]
    fn a_call_after_the_lease_is_given_back_has_no_slot() {
        let (tx, rx) = std::sync::mpsc::channel();
        let tx_before = tx.clone();
        // The reader registered before the lease (destroyed after it: destructors run in the
        // reverse order) and after it.
        std::thread::spawn(move || {
            READ_AT_EXIT.with(|r| *r.borrow_mut() = Some(ReadAtExit(tx_before)));
            assert!(thread_slot() < MAX_SLOTS);
        })
        .join()
        .unwrap();
        std::thread::spawn(move || {
            assert!(thread_slot() < MAX_SLOTS);
            READ_AT_EXIT.with(|r| *r.borrow_mut() = Some(ReadAtExit(tx)));
        })
        .join()
        .unwrap();
        let readings: Vec<_> = rx.iter().collect();
        assert_eq!(readings.len(), 2);
        assert!(
            readings.iter().any(|&(_, lease)| lease.is_none()),
            "no reading after a lease was destroyed: {readings:?}"
        );
        for (slot, lease) in readings {
            match lease {
                Some(lease) => assert_eq!(slot, lease),
                None => assert_eq!(slot, NO_SLOT, "a slot read after its lease was given back"),
            }
        }
    }
}
