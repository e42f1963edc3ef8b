//! The runtime's one clock, and [`MockClock`] for deterministic tests.
//!
//! # Which clock, and why
//!
//! Every entry reads the clock once and every exit once, so the read is on the hot path.
//! Measured on the 2-vCPU machines this crate is developed on: `Instant::now()` costs about
//! 23 ns, `clock_gettime(CLOCK_MONOTONIC_COARSE)` about 3–6 ns, a TSC read (quanta) about 9.5 ns.
//! Two `Instant` reads alone would spend the whole per-call budget, so on Linux the runtime reads
//! `CLOCK_MONOTONIC_COARSE`: monotonic, the same on every core, served by the vDSO without a
//! system call, with the kernel tick as its resolution (1–4 ms). That resolution is ample for
//! 100 ms buckets; it means a single response time is known to within one tick, as in Sentinel,
//! which uses milliseconds. Other platforms use `Instant`. No background thread ticks.
//!
//! Time is a `u64` of nanoseconds on this clock. It never goes backwards, even across a
//! [`MockClock`] being installed and dropped: when a mock is dropped, the real clock resumes from
//! the mock's last reading rather than jumping back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Set for good once a [`MockClock`] is installed: from then on a reading checks for the mock and
/// adds [`OFFSET`]. A process that never installs one reads the clock and nothing else.
static ADJUSTED: AtomicBool = AtomicBool::new(false);
static MOCK_ACTIVE: AtomicBool = AtomicBool::new(false);
static MOCK_NOW: AtomicU64 = AtomicU64::new(0);
/// Added to the real clock so that time stays monotonic after a mock clock is dropped.
static OFFSET: AtomicU64 = AtomicU64::new(0);
/// Held by the installed [`MockClock`]; a second `install()` waits on it.
static MOCK_LOCK: Mutex<()> = Mutex::new(());

const NANOS_PER_HOUR: u64 = 3_600 * 1_000_000_000;

/// The runtime's current time in nanoseconds: the monotonic clock, or the installed
/// [`MockClock`].
///
/// Only differences between readings mean anything; the origin is unspecified.
#[inline]
pub fn now_nanos() -> u64 {
    mock_or(real_nanos)
}

/// The runtime's time with full resolution: `CLOCK_MONOTONIC` (same timebase as [`now_nanos`],
/// about 20 ns a read) or the installed [`MockClock`]. Used where 1–4 ms of resolution is not
/// enough: a throttled call's turn, and the sleep until it.
#[inline]
pub fn precise_nanos() -> u64 {
    mock_or(precise_real_nanos)
}

/// `real()`, or once a mock clock has been installed, [`adjusted`].
#[inline(always)]
fn mock_or(real: fn() -> u64) -> u64 {
    if ADJUSTED.load(Ordering::Acquire) {
        adjusted(real)
    } else {
        real()
    }
}

/// The installed mock's reading, else `real()` shifted by the monotonic offset.
#[cold]
#[inline(never)]
fn adjusted(real: fn() -> u64) -> u64 {
    if MOCK_ACTIVE.load(Ordering::Acquire) {
        MOCK_NOW.load(Ordering::Acquire)
    } else {
        real().saturating_add(OFFSET.load(Ordering::Relaxed))
    }
}

#[cfg(target_os = "linux")]
fn precise_real_nanos() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

#[cfg(not(target_os = "linux"))]
fn precise_real_nanos() -> u64 {
    real_nanos()
}

/// Waits until the runtime clock reads `deadline`. Under a [`MockClock`], moves the mock clock
/// forward to `deadline` instead (never backwards), so a throttled call in a test takes no real
/// time and cannot hang a single-threaded test.
pub(crate) fn sleep_until(deadline: u64) {
    if MOCK_ACTIVE.load(Ordering::Acquire) {
        MOCK_NOW.fetch_max(deadline, Ordering::AcqRel);
        return;
    }
    let now = precise_nanos();
    if deadline > now {
        std::thread::sleep(Duration::from_nanos(deadline - now));
    }
}

/// After an async wait for `deadline`: under a [`MockClock`], moves it forward to `deadline`.
pub(crate) fn catch_up_mock(deadline: u64) {
    if MOCK_ACTIVE.load(Ordering::Acquire) {
        MOCK_NOW.fetch_max(deadline, Ordering::AcqRel);
    }
}

#[cfg(target_os = "linux")]
#[inline]
fn real_nanos() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC_COARSE)
}

/// Nanoseconds on the Linux clock `id`.
#[cfg(target_os = "linux")]
#[inline]
fn read_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` that outlives the call, and both ids used
    // here (CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE) exist on every Linux since 2.6.32. On the
    // impossible failure the zeroed `ts` is kept, which reads as an early time and is handled
    // like a clock going backwards (see `stat::LeapArray`).
    unsafe {
        libc::clock_gettime(id, &mut ts);
    }
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
#[inline]
fn real_nanos() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    // Start one hour in so early readings are never mistaken for "before any bucket".
    NANOS_PER_HOUR + base.elapsed().as_nanos() as u64
}

/// A manual clock for tests: while a `MockClock` is installed, the whole process reads its time,
/// and time moves only when [`advance`](MockClock::advance) is called.
///
/// ```
/// use sentinel_runtime::clock::MockClock;
/// use std::time::Duration;
///
/// let clock = MockClock::install();
/// let before = sentinel_runtime::clock::now_nanos();
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(sentinel_runtime::clock::now_nanos() - before, 250_000_000);
/// drop(clock); // the real clock is back
/// ```
///
/// Installing starts the mock at a whole hour, so second and minute buckets line up the same way
/// in every run. A throttled call's wait moves the mock clock forward to the end of the wait
/// instead of sleeping. Only one mock can be installed at a time: a second [`install`](MockClock::install)
/// (from another test running in parallel) waits until the first handle is dropped, so tests that
/// use the mock clock run one after another and stay deterministic.
///
/// The handle is not `Send`: drop it on the thread that installed it.
#[must_use = "the mock clock is uninstalled as soon as the handle is dropped"]
pub struct MockClock {
    start: u64,
    _exclusive: MutexGuard<'static, ()>,
}

impl MockClock {
    /// Replaces the process-wide clock with a manual one, waiting for any other installed
    /// `MockClock` to be dropped first.
    pub fn install() -> MockClock {
        // A test that panicked while holding the mock poisons the lock; the clock state is still
        // consistent (its Drop ran), so take the lock anyway.
        let guard = MOCK_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        // Start at the next whole hour, at least one hour ahead, so time only moves forward.
        let now = now_nanos();
        let start = (now / NANOS_PER_HOUR + 2)
            .checked_mul(NANOS_PER_HOUR)
            .unwrap_or(now);
        MOCK_NOW.store(start, Ordering::Release);
        MOCK_ACTIVE.store(true, Ordering::Release);
        ADJUSTED.store(true, Ordering::Release);
        MockClock {
            start,
            _exclusive: guard,
        }
    }

    /// Moves the clock forward by `by`, exactly, unless `by` is more than half the time left
    /// before the clock's last reading (`u64::MAX` nanoseconds, some 584 years after boot): then
    /// it stops halfway there (`advance(Duration::MAX)` from a fresh mock moves it about 292
    /// years). Time never wraps around to an earlier reading, and it never reaches the last
    /// reading either: after the mock is dropped the real clock runs on from where the mock
    /// stopped, and needs room to run (it would stay frozen at the last reading).
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = MOCK_NOW.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
            Some(now + nanos.min((u64::MAX - now) / 2))
        });
    }

    /// Time elapsed on this clock since it was installed.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(MOCK_NOW.load(Ordering::Acquire) - self.start)
    }

    /// The current reading in nanoseconds, as [`now_nanos`] returns it.
    pub fn now_nanos(&self) -> u64 {
        MOCK_NOW.load(Ordering::Acquire)
    }
}

impl Drop for MockClock {
    fn drop(&mut self) {
        let last = MOCK_NOW.load(Ordering::Acquire);
        // Resume the real clock from the mock's last reading: never backwards.
        let real = real_nanos();
        let needed = last.saturating_sub(real).saturating_add(1);
        // (Real readings then saturate rather than wrap: see `mock_or`.)
        OFFSET.fetch_max(needed, Ordering::AcqRel);
        MOCK_ACTIVE.store(false, Ordering::Release);
    }
}

impl std::fmt::Debug for MockClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_starts_on_an_hour_and_advances_exactly() {
        let clock = MockClock::install();
        let t0 = now_nanos();
        assert_eq!(t0 % NANOS_PER_HOUR, 0, "mock start {t0} is not on an hour");
        clock.advance(Duration::from_nanos(1_234));
        assert_eq!(now_nanos() - t0, 1_234);
        assert_eq!(clock.elapsed(), Duration::from_nanos(1_234));
    }

    #[test]
    fn time_never_goes_backwards_across_install_and_drop() {
        let before = now_nanos();
        let clock = MockClock::install();
        let during = now_nanos();
        clock.advance(Duration::from_secs(10));
        let last = now_nanos();
        drop(clock);
        let after = now_nanos();
        assert!(
            before < during,
            "install went backwards: {before} -> {during}"
        );
        assert!(after >= last, "drop went backwards: {last} -> {after}");
    }
}
