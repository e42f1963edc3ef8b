//! The statistics of one resource node, sharded per thread so that recording a call takes no
//! atomic read-modify-write.
//!
//! Every thread leases a slot number (0..[`MAX_SLOTS`]) for its lifetime; the slot's shard of
//! each node has that thread as its only writer, so counters are updated with a plain load and
//! store (about 1 ns, against about 6 ns for a `fetch_add`). Threads beyond [`MAX_SLOTS`] alive at
//! once share one overflow shard and update it with CAS. Readers sum all shards.
//!
//! The second-level window is 1 s of [`SECOND_BUCKETS`] buckets (100 ms each: a 10th of the
//! window, so a boundary burst is bounded by one bucket). When a counter of a 100 ms bucket is
//! restarted for a new period, its writer folds the displaced value into the node's minute-level
//! window (60 x 1 s); readers of the minute add the counters not yet folded. Nothing is counted
//! twice or lost, and the minute window costs the hot path nothing.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crossbeam_utils::CachePadded;

use super::{LeapArray, MetricEvent, Position};

/// Buckets of the second-level window (100 ms each).
pub(crate) const SECOND_BUCKETS: u32 = 10;
const SECOND_NANOS: u64 = 1_000_000_000;
const SECOND_BUCKET_NANOS: u64 = SECOND_NANOS / SECOND_BUCKETS as u64;
/// Buckets of the minute-level window (1 s each).
pub(crate) const MINUTE_BUCKETS: u32 = 60;
/// Threads that can hold a private shard at once; more share the overflow shard.
pub(crate) const MAX_SLOTS: usize = 64;
const NO_SLOT: usize = usize::MAX;

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

/// This thread's slot, or `NO_SLOT` (while the thread is being torn down, or beyond
/// `MAX_SLOTS` threads).
#[inline]
fn current_slot() -> usize {
    LEASE.try_with(|lease| lease.0).unwrap_or(NO_SLOT)
}

/// One thread's (or the overflow's) share of a node's statistics.
struct Shard {
    second: LeapArray,
    /// Entries begun minus entries ended through this shard; the node's concurrency is the sum.
    inflight: AtomicI64,
}

impl Shard {
    fn new(now: u64) -> Shard {
        Shard {
            second: LeapArray::from_parts(SECOND_BUCKET_NANOS, SECOND_BUCKETS, now),
            inflight: AtomicI64::new(0),
        }
    }
}

/// The position of `now` in every shard's second-level window, with constant divisors.
#[inline(always)]
fn second_position(now: u64) -> Position {
    Position::of_period(now / SECOND_BUCKET_NANOS, SECOND_BUCKETS as u64)
}

/// Totals over the second-level window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct WindowTotals {
    pub(crate) pass: u64,
    pub(crate) block: u64,
    pub(crate) complete: u64,
    pub(crate) error: u64,
    pub(crate) rt_sum_us: u64,
    pub(crate) min_rt_us: Option<u32>,
    pub(crate) concurrency: i64,
}

/// Totals of one second of the minute-level window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SecondTotals {
    /// Start of the second on the runtime clock, in nanoseconds.
    pub(crate) start: u64,
    pub(crate) counts: [u64; 6],
}

/// A shard and whether this thread is its only writer.
struct Writer<'a> {
    shard: &'a Shard,
    exclusive: bool,
}

pub(crate) struct NodeStats {
    shards: Box<[OnceLock<Box<CachePadded<Shard>>>]>,
    overflow: CachePadded<Shard>,
    minute: LeapArray,
}

impl std::fmt::Debug for NodeStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeStats").finish_non_exhaustive()
    }
}

impl NodeStats {
    pub(crate) fn new(now: u64) -> NodeStats {
        NodeStats {
            shards: (0..MAX_SLOTS).map(|_| OnceLock::new()).collect(),
            overflow: CachePadded::new(Shard::new(now)),
            minute: LeapArray::from_parts(SECOND_NANOS, MINUTE_BUCKETS, now),
        }
    }

    #[inline(always)]
    fn writer(&self, now: u64) -> Writer<'_> {
        match self.shards.get(current_slot()) {
            Some(cell) => Writer {
                shard: cell.get_or_init(|| Box::new(CachePadded::new(Shard::new(now)))),
                exclusive: true,
            },
            None => Writer {
                shard: &self.overflow,
                exclusive: false,
            },
        }
    }

    /// Adds `value` to `event`: a plain load and store in the common case (this thread is the
    /// shard's only writer and the counter is already in this period), else the general add,
    /// which restarts a stale counter and folds what it held into the minute window.
    #[inline(always)]
    fn add(&self, w: &Writer<'_>, now: u64, pos: Position, event: MetricEvent, value: u32) {
        if w.exclusive
            && w.shard
                .second
                .bucket_at(pos)
                .bump_exclusive(event, pos.tag(), value)
        {
            return;
        }
        self.add_slow(w, now, pos, event, value);
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&self, w: &Writer<'_>, now: u64, pos: Position, event: MetricEvent, value: u32) {
        if let Some((start, raw)) = w.shard.second.add_at(pos, event, value, w.exclusive) {
            self.fold(now, start, event, raw);
        }
    }

    /// Moves a value displaced from a 100 ms bucket into the minute window, if its second is
    /// still one of the window's 60.
    #[cold]
    fn fold(&self, now: u64, start: u64, event: MetricEvent, raw: u32) {
        let oldest_second = (now / SECOND_NANOS).saturating_sub(u64::from(MINUTE_BUCKETS) - 1);
        if raw == 0 || start > now || start / SECOND_NANOS < oldest_second {
            return;
        }
        let value = match event {
            MetricEvent::MinRt => u32::MAX - raw,
            _ => raw,
        };
        self.minute.add(start, event, value);
    }

    #[inline]
    fn inflight(w: &Writer<'_>, delta: i64) {
        if w.exclusive {
            let v = w.shard.inflight.load(Ordering::Relaxed);
            w.shard.inflight.store(v + delta, Ordering::Release);
        } else {
            w.shard.inflight.fetch_add(delta, Ordering::AcqRel);
        }
    }

    /// An admitted entry of `count` at `now`.
    #[inline(always)]
    pub(crate) fn on_pass(&self, now: u64, count: u32) {
        let w = self.writer(now);
        let pos = second_position(now);
        self.add(&w, now, pos, MetricEvent::Pass, count);
        Self::inflight(&w, 1);
    }

    /// A rejected entry of `count` at `now`.
    #[inline]
    pub(crate) fn on_block(&self, now: u64, count: u32) {
        let w = self.writer(now);
        let pos = second_position(now);
        self.add(&w, now, pos, MetricEvent::Block, count);
    }

    /// The exit of an admitted entry of `count`.
    #[inline(always)]
    pub(crate) fn on_exit(&self, now: u64, count: u32, rt_us: u32, error: bool) {
        let w = self.writer(now);
        let pos = second_position(now);
        self.add(&w, now, pos, MetricEvent::Complete, count);
        self.add(&w, now, pos, MetricEvent::RtSum, rt_us);
        self.add(&w, now, pos, MetricEvent::MinRt, rt_us);
        if error {
            self.add(&w, now, pos, MetricEvent::Error, count);
        }
        Self::inflight(&w, -1);
    }

    fn each_shard(&self, mut f: impl FnMut(&Shard)) {
        for cell in self.shards.iter() {
            if let Some(shard) = cell.get() {
                f(shard);
            }
        }
        f(&self.overflow);
    }

    /// Totals over the second-level window ending at `now`. Allocates nothing.
    pub(crate) fn window(&self, now: u64) -> WindowTotals {
        let mut t = WindowTotals::default();
        self.each_shard(|s| {
            t.pass += s.second.sum(now, MetricEvent::Pass);
            t.block += s.second.sum(now, MetricEvent::Block);
            t.complete += s.second.sum(now, MetricEvent::Complete);
            t.error += s.second.sum(now, MetricEvent::Error);
            t.rt_sum_us += s.second.sum(now, MetricEvent::RtSum);
            t.min_rt_us = match (t.min_rt_us, s.second.min_rt(now)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            t.concurrency += s.inflight.load(Ordering::Acquire);
        });
        t
    }

    /// Passes over the second-level window ending at `now`.
    pub(crate) fn passes(&self, now: u64) -> u64 {
        let mut passes = 0;
        self.each_shard(|s| passes += s.second.sum(now, MetricEvent::Pass));
        passes
    }

    /// Per-second totals over the minute window ending at `now`, oldest first; seconds with no
    /// traffic are left out.
    pub(crate) fn minute(&self, now: u64) -> Vec<SecondTotals> {
        let oldest = self
            .minute
            .bucket_start(now)
            .saturating_sub(self.minute.interval_nanos() - SECOND_NANOS);
        let mut seconds: Vec<SecondTotals> = Vec::new();
        let mut record = |start: u64, event: MetricEvent, raw: u32| {
            let second = start - start % SECOND_NANOS;
            if second < oldest || second > now {
                return;
            }
            let i = match seconds.iter().position(|s| s.start == second) {
                Some(i) => i,
                None => {
                    seconds.push(SecondTotals {
                        start: second,
                        counts: [0; 6],
                    });
                    seconds.len() - 1
                }
            };
            let slot = &mut seconds[i].counts[event.index()];
            *slot = match event {
                MetricEvent::MinRt => {
                    let rt = u64::from(u32::MAX - raw);
                    if *slot == 0 {
                        rt + 1
                    } else {
                        (*slot).min(rt + 1)
                    }
                }
                _ => *slot + u64::from(raw),
            };
        };
        self.minute.for_each_valid(now, &mut record);
        let horizon = now.saturating_sub(oldest) / SECOND_BUCKET_NANOS + 1;
        self.each_shard(|s| s.second.for_each_within(now, horizon, &mut record));
        for s in &mut seconds {
            // Stored as rt + 1 so that 0 meant "none"; undo that.
            let min = &mut s.counts[MetricEvent::MinRt.index()];
            *min = min.saturating_sub(1);
        }
        seconds.sort_by_key(|s| s.start);
        seconds
    }
}
