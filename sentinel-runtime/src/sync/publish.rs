//! [`Published`]: a value read lock-free on every call and replaced, rarely, by a writer that
//! frees the old value once no reader can still hold it (hazard pointers).
//!
//! # Protocol
//!
//! Each thread with a slot ([`thread_slot`]) owns [`DEPTH`] hazard words (reads may nest: a
//! check slot may enter another resource). A reader:
//!
//! 1. loads the pointer `p`;
//! 2. publishes `p` in its next free hazard word;
//! 3. loads the pointer again, and retries from 1 unless it is still `p`;
//! 4. uses `*p`, then clears the hazard word (a `Release` store).
//!
//! A writer swaps in the new pointer, issues a *heavy barrier*, then frees each retired pointer
//! that no hazard word holds (scanned with `Acquire` loads, so every use of `*p` by a reader
//! happens before the free); the others wait for a later replace.
//!
//! Step 2 must be visible to the writer's scan before step 3's load reads the old pointer (a
//! store-load order). Two ways to get it:
//!
//! * **Asymmetric (Linux):** the reader's store is a plain store, and the writer's heavy barrier
//!   is `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of the
//!   process execute a full memory barrier. For a reader, that barrier falls either before its
//!   step 3 (which then reads the new pointer: the reader retries) or after its step 2 (which
//!   the scan then sees): either way no reader uses a freed pointer. Readers pay no fence.
//! * **Symmetric (anywhere else, or if the kernel refuses):** the reader's store is a `SeqCst`
//!   swap and the writer's barrier a `SeqCst` fence: classic hazard pointers.
//!
//! A thread without a slot, or nested deeper than [`DEPTH`], reads through a shared counter of
//! such readers (a `SeqCst` read-modify-write): while it is non-zero, writers free nothing.
//!
//! The hazard words and barriers are a [`Domain`]: the process's own ([`Process`]) in the
//! product; `model_tests::loom_publish` runs the same code on a domain of loom's atomics and
//! checks the symmetric form over every interleaving of a reader and a writer.

use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};

use crossbeam_utils::CachePadded;

use super::atomic_word::AtomicWord;
use super::thread_slot::{thread_slot, MAX_SLOTS};

/// Hazard words per thread: how deeply reads may nest before they take the slow path.
const DEPTH: usize = 4;

/// One thread's hazard words: each holds the address a read of that nesting depth protects
/// (0: none).
pub(crate) struct Hazards<W> {
    words: [W; DEPTH],
    /// Words in use (reads nested so far); written only by the slot's thread.
    used: AtomicUsize,
}

impl<W: AtomicWord> Hazards<W> {
    /// Hazard words holding nothing (for a domain of the model tests).
    #[cfg(test)]
    pub(crate) fn new() -> Hazards<W> {
        Hazards {
            words: std::array::from_fn(|_| W::new(0)),
            used: AtomicUsize::new(0),
        }
    }
}

/// Where the readers of a [`Published`] announce what they read, and the two halves of the
/// store-load order (module docs). The product has one domain, the process ([`Process`]); the
/// model tests run the same protocol on a small domain of loom's atomics.
pub(crate) trait Domain: Send + Sync {
    /// The atomic word of the hazards, the slow-reader count and the published address.
    type Word: AtomicWord;
    /// Each thread slot's hazard words, by slot.
    fn hazards(&self) -> &[CachePadded<Hazards<Self::Word>>];
    /// Readers without a hazard word, reading now.
    fn slow_readers(&self) -> &Self::Word;
    /// Step 2 of a read: publishes `address` in `word`, ordered before the reader's next load
    /// of the pointer as the writer's [`heavy_barrier`](Domain::heavy_barrier) requires.
    fn publish(&self, word: &Self::Word, address: u64);
    /// The writer's half of the store-load order: whether it is in place (if not, the writer
    /// frees nothing this time).
    fn heavy_barrier(&self) -> bool;
}

static HAZARDS: [CachePadded<Hazards<AtomicU64>>; MAX_SLOTS] = [const {
    CachePadded::new(Hazards {
        words: [const { AtomicU64::new(0) }; DEPTH],
        used: AtomicUsize::new(0),
    })
}; MAX_SLOTS];

/// Readers without a hazard word, reading now.
static SLOW_READERS: AtomicU64 = AtomicU64::new(0);

/// Whether writers issue `membarrier`, so readers may publish with a plain store.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
static REGISTER: Once = Once::new();

#[cfg(target_os = "linux")]
mod membarrier {
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    /// Registers the process for expedited private barriers; true if the kernel agreed.
    pub(super) fn register() -> bool {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches no memory of ours;
        // an unknown command or a refusal returns -1, which is handled.
        unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 }
    }

    /// Makes every running thread of the process execute a full memory barrier.
    pub(super) fn barrier() -> bool {
        // SAFETY: as above; only called after a successful registration.
        unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) == 0 }
    }
}

#[cfg(not(target_os = "linux"))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn barrier() -> bool {
        false
    }
}

fn register() {
    REGISTER.call_once(|| {
        if membarrier::register() {
            ASYMMETRIC.store(true, Ordering::SeqCst);
        }
    });
}

/// Does the process's one-time set-up for [`Published`] values now, off any call path.
///
/// The `membarrier` registration costs about 44 µs while a process has one thread, and about
/// 10 ms once it has several (the kernel then waits for every thread of the process): done by
/// the first call, it made a server's first request wait 10 ms. So it runs when the program
/// starts (below), when rules are loaded and when a layer is built; by the time a call builds
/// its first node it is done, and [`Published::new`] only checks that it is.
pub(crate) fn prepare() {
    register();
}

/// Whether the one-time set-up of [`prepare`] is done (on Linux, from before `main` on).
#[cfg(feature = "__test-hooks")]
pub(crate) fn is_prepared() -> bool {
    REGISTER.is_completed()
}

/// Registers for `membarrier` while the program starts, when it has one thread and the
/// registration costs microseconds: an entry of the ELF `.init_array`, which the loader runs
/// before `main` (or when a library holding it is loaded). The function only calls
/// [`register`] (a `Once` around one system call), needs nothing of `main`'s set-up, and
/// cannot unwind: a panic there would abort, and nothing in it panics.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static REGISTER_AT_START: extern "C" fn() = {
    extern "C" fn register_at_start() {
        register();
    }
    register_at_start
};

/// The process's domain: every thread slot's hazard words, in statics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Process;

impl Domain for Process {
    type Word = AtomicU64;

    #[inline(always)]
    fn hazards(&self) -> &[CachePadded<Hazards<AtomicU64>>] {
        &HAZARDS
    }

    #[inline(always)]
    fn slow_readers(&self) -> &AtomicU64 {
        &SLOW_READERS
    }

    #[inline(always)]
    fn publish(&self, word: &AtomicU64, address: u64) {
        if ASYMMETRIC.load(Ordering::Relaxed) {
            // The writer's membarrier orders it (module docs).
            word.store(address, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
        } else {
            word.swap(address, Ordering::SeqCst);
        }
    }

    fn heavy_barrier(&self) -> bool {
        fence(Ordering::SeqCst);
        // Once registered, readers publish with a plain store and rely on the barrier; should
        // the kernel refuse it after all, the writer frees nothing this time (a later replace
        // will).
        !ASYMMETRIC.load(Ordering::SeqCst) || membarrier::barrier()
    }
}

/// The address of a pointer, as the atomic words hold it (its provenance exposed, so that
/// [`pointer`] may turn it back).
#[inline(always)]
fn address<T>(p: *const T) -> u64 {
    p.expose_provenance() as u64
}

/// The pointer at an address that [`address`] gave.
#[inline(always)]
fn pointer<T>(address: u64) -> *const T {
    std::ptr::with_exposed_provenance(address as usize)
}

/// Clears a hazard word when a read ends, however it ends (a panic unwinding through it too).
struct HazardGuard<'a, W: AtomicWord> {
    hazards: &'a Hazards<W>,
    depth: usize,
}

impl<W: AtomicWord> Drop for HazardGuard<'_, W> {
    #[inline]
    fn drop(&mut self) {
        self.hazards.words[self.depth].store(0, Ordering::Release);
        self.hazards.used.store(self.depth, Ordering::Relaxed);
    }
}

/// Ends a slow-path read.
struct SlowGuard<'a, W: AtomicWord>(&'a W);

impl<W: AtomicWord> Drop for SlowGuard<'_, W> {
    fn drop(&mut self) {
        // A wrapping add of -1: the count goes back down.
        self.0.fetch_add(u64::MAX, Ordering::SeqCst);
    }
}

/// The value a [`Published::read`] is reading: it derefs to the value, and can be kept beyond
/// the read with [`to_arc`](Held::to_arc).
#[derive(Debug)]
pub(crate) struct Held<'a, T> {
    value: &'a T,
}

impl<T> std::ops::Deref for Held<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> Held<'_, T> {
    /// A strong reference to the value being read.
    pub(crate) fn to_arc(&self) -> Arc<T> {
        let p: *const T = self.value;
        // SAFETY: a `Held` is only made by `Published::read` from a pointer that came from
        // `Arc::into_raw` and is protected for the whole read, so the allocation is alive;
        // adding a strong count before rebuilding the `Arc` leaves the published count intact.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}

/// A value behind an `Arc`, read lock-free and replaced whole (see the module docs).
pub(crate) struct Published<T: Send + Sync, D: Domain = Process> {
    /// Always the address of a pointer from `Arc::into_raw`, owning one strong count.
    ptr: D::Word,
    /// Replaced addresses not yet freed (each owning one strong count); also the writers' lock.
    retired: Mutex<Vec<u64>>,
    domain: D,
    /// The published and retired values are owned `Arc<T>`s.
    owns: PhantomData<Arc<T>>,
}

impl<T: Send + Sync, D: Domain> std::fmt::Debug for Published<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Published").finish_non_exhaustive()
    }
}

impl<T: Send + Sync> Published<T> {
    pub(crate) fn new(value: Arc<T>) -> Published<T> {
        register();
        Published::in_domain(value, Process)
    }
}

impl<T: Send + Sync, D: Domain> Published<T, D> {
    /// `value`, published in `domain`.
    pub(crate) fn in_domain(value: Arc<T>, domain: D) -> Published<T, D> {
        Published {
            ptr: D::Word::new(address(Arc::into_raw(value))),
            retired: Mutex::new(Vec::new()),
            domain,
            owns: PhantomData,
        }
    }

    /// Runs `f` on the value in force.
    #[inline]
    pub(crate) fn read<R>(&self, f: impl FnOnce(Held<'_, T>) -> R) -> R {
        self.read_in(thread_slot(), f)
    }

    /// [`read`](Self::read) for a caller that already knows its [`thread_slot`].
    #[inline]
    pub(crate) fn read_in<R>(&self, slot: usize, f: impl FnOnce(Held<'_, T>) -> R) -> R {
        match self.free_word(slot) {
            Some((hazards, depth)) => self.read_at(hazards, depth, f),
            None => self.read_slow(f),
        }
    }

    /// [`read_in`](Self::read_in), but where this thread has no hazard word free (no slot, or
    /// nested deeper than [`DEPTH`]) it calls `elsewhere` instead of `f` (which should then
    /// [`read`](Self::read)): `f` is then called in one place only, and a caller's values it
    /// captures need no place in memory for the rare path (a closure handed to a call out of
    /// line is passed by address).
    #[inline]
    pub(crate) fn read_in_or<R>(
        &self,
        slot: usize,
        f: impl FnOnce(Held<'_, T>) -> R,
        elsewhere: impl FnOnce() -> R,
    ) -> R {
        match self.free_word(slot) {
            Some((hazards, depth)) => self.read_at(hazards, depth, f),
            None => elsewhere(),
        }
    }

    /// The hazard words of `slot` and the depth of the first free one, if it has one.
    #[inline(always)]
    fn free_word(&self, slot: usize) -> Option<(&Hazards<D::Word>, usize)> {
        let hazards = self.domain.hazards().get(slot)?;
        // Only this thread writes its slot's `used` (nested reads restore it as they end).
        let depth = hazards.used.load(Ordering::Relaxed);
        (depth < DEPTH).then_some((&**hazards, depth))
    }

    /// [`read_in`](Self::read_in) through the free hazard word `depth` of `hazards`.
    #[inline(always)]
    fn read_at<R>(
        &self,
        hazards: &Hazards<D::Word>,
        depth: usize,
        f: impl FnOnce(Held<'_, T>) -> R,
    ) -> R {
        let word = &hazards.words[depth];
        hazards.used.store(depth + 1, Ordering::Relaxed);
        let _guard = HazardGuard { hazards, depth };
        let mut p = self.ptr.load(Ordering::Acquire);
        loop {
            self.domain.publish(word, p);
            let again = self.ptr.load(Ordering::SeqCst);
            if again == p {
                break;
            }
            p = again;
        }
        // SAFETY: `p` came from `Arc::into_raw` and was still the published pointer after this
        // thread's hazard word held it (the re-load above), so a writer that replaced it since
        // sees the hazard (module docs) and does not free it until the guard clears the word,
        // which happens after `f` returns. The value is `Sync`, so sharing `&T` is sound.
        f(Held {
            value: unsafe { &*pointer::<T>(p) },
        })
    }

    #[cold]
    fn read_slow<R>(&self, f: impl FnOnce(Held<'_, T>) -> R) -> R {
        let slow_readers = self.domain.slow_readers();
        slow_readers.fetch_add(1, Ordering::SeqCst);
        let _guard = SlowGuard(slow_readers);
        let p = self.ptr.load(Ordering::SeqCst);
        // SAFETY: the SeqCst increment above precedes this load; a writer frees nothing while it
        // reads the slow readers as non-zero after its swap and barrier, and a writer whose scan
        // read zero did so before this increment, so its swap precedes this load, which then
        // cannot return the pointer that writer frees.
        f(Held {
            value: unsafe { &*pointer::<T>(p) },
        })
    }

    /// A strong reference to the value in force, to hold beyond a read.
    pub(crate) fn load_full(&self) -> Arc<T> {
        self.read(|held| held.to_arc())
    }

    /// Puts `value` in force; the replaced value is freed once no reader holds it.
    pub(crate) fn replace(&self, value: Arc<T>) {
        let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        let old = self
            .ptr
            .swap(address(Arc::into_raw(value)), Ordering::SeqCst);
        retired.push(old);
        if self.domain.heavy_barrier() {
            retired.retain(|&p| {
                if self.protected(p) {
                    return true;
                }
                // SAFETY: `p` came from `Arc::into_raw` and owns one strong count; it is no
                // longer published, and no hazard word or slow reader holds it after the barrier
                // (module docs), so no reader can still use it.
                unsafe { drop(Arc::from_raw(pointer::<T>(p))) };
                false
            });
        }
    }

    /// Whether a reader may hold address `p`.
    fn protected(&self, p: u64) -> bool {
        self.domain.slow_readers().load(Ordering::SeqCst) != 0
            || self
                .domain
                .hazards()
                .iter()
                .any(|h| h.words.iter().any(|w| w.load(Ordering::Acquire) == p))
    }
}

impl<T: Send + Sync, D: Domain> Drop for Published<T, D> {
    fn drop(&mut self) {
        // `&mut self`: no reader can hold any of these any more.
        let p = self.ptr.load(Ordering::Relaxed);
        // SAFETY: `p` came from `Arc::into_raw` and owns one strong count.
        unsafe { drop(Arc::from_raw(pointer::<T>(p))) };
        let retired = self
            .retired
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for &p in retired.iter() {
            // SAFETY: as above, each retired address owns one strong count.
            unsafe { drop(Arc::from_raw(pointer::<T>(p))) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Barrier;

    /// Counts live values, to see that replaced ones are freed and none twice.
    struct Counted(u64, &'static AtomicU64);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn counted(v: u64, live: &'static AtomicU64) -> Arc<Counted> {
        live.fetch_add(1, Ordering::SeqCst);
        Arc::new(Counted(v, live))
    }

    #[test]
    fn replaced_values_are_freed_and_readers_see_whole_values() {
        static LIVE: AtomicU64 = AtomicU64::new(0);
        let published = Published::new(counted(0, &LIVE));
        let barrier = Barrier::new(3);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    barrier.wait();
                    let mut last = 0;
                    for _ in 0..200_000 {
                        let v = published.read(|c| {
                            // Nested reads take further hazard words.
                            published.read(|inner| assert!(inner.0 >= c.0));
                            c.0
                        });
                        let _ = published.read(|c| c.to_arc());
                        assert!(v >= last, "values only move forward: {last} then {v}");
                        last = v;
                    }
                });
            }
            barrier.wait();
            for v in 1..=20_000 {
                published.replace(counted(v, &LIVE));
            }
        });
        // Every replaced value was freed by a later replace, except possibly the last few.
        published.replace(counted(u64::MAX, &LIVE));
        assert!(
            LIVE.load(Ordering::SeqCst) <= 3,
            "{} live",
            LIVE.load(Ordering::SeqCst)
        );
        drop(published);
        assert_eq!(LIVE.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn load_full_outlives_a_replace() {
        static LIVE: AtomicU64 = AtomicU64::new(0);
        let published = Published::new(counted(7, &LIVE));
        let held = published.load_full();
        published.replace(counted(8, &LIVE));
        assert_eq!(held.0, 7);
        assert_eq!(published.read(|c| c.0), 8);
        drop(held);
        drop(published);
        assert_eq!(LIVE.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn deep_nesting_takes_the_slow_path() {
        let published = Published::new(Arc::new(5u64));
        let v = published.read(|a| {
            published.read(|b| {
                published.read(|c| published.read(|d| published.read(|e| *a + *b + *c + *d + *e)))
            })
        });
        assert_eq!(v, 25);
    }
}
