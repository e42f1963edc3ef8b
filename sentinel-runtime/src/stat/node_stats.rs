//! The statistics of one resource node, sharded per thread so that recording a call takes no
//! atomic read-modify-write.
//!
//! Every thread leases a slot number (0..`MAX_SLOTS`) for its lifetime; the slot's shard of
//! each node has that thread as its only writer, so counters are updated with a plain load and
//! store (about 1 ns, against about 6 ns for a `fetch_add`). Threads beyond `MAX_SLOTS` alive at
//! once share one overflow shard and update it with atomic adds. Readers sum all shards.
//!
//! The second-level window is 1 s of [`SECOND_BUCKETS`] buckets (100 ms each: a 10th of the
//! window, so a boundary burst is bounded by one bucket). When a 100 ms bucket is restarted for a
//! new period, its writer folds the displaced counts into the node's minute-level window
//! (60 x 1 s); readers of the minute add the counts not yet folded. Nothing is counted twice or
//! lost, and the minute window costs the hot path nothing. Shards and the minute window are
//! allocated on first use, so a node touched once costs little memory.

use super::shadow::ShadowStats;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;

use crossbeam_utils::CachePadded;
use once_cell::race::OnceBox;

use super::bucket::RULE_KINDS;
use super::bucket::{Bucket, MetricEvent, EVENTS, NO_MIN};
use super::ring::{Position, Ring};
use crate::sync::{thread_slot, MAX_SLOTS};

/// Buckets of the second-level window (100 ms each).
pub(crate) const SECOND_BUCKETS: u32 = 10;
const SECOND_NANOS: u64 = 1_000_000_000;
pub(crate) const SECOND_BUCKET_NANOS: u64 = SECOND_NANOS / SECOND_BUCKETS as u64;
/// Buckets of the minute-level window (1 s each).
pub(crate) const MINUTE_BUCKETS: u32 = 60;
/// One thread's (or the overflow's) share of a node's statistics.
struct Shard {
    second: Ring<AtomicU64, [Bucket<AtomicU64>; SECOND_BUCKETS as usize]>,
    /// Entries begun minus entries ended through this shard; the node's concurrency is the sum.
    inflight: AtomicI64,
    /// The single writer's current bucket, so that a call in the same 100 ms as the writer's
    /// last one finds it without computing its position.
    current: Current,
}

/// A shard's current bucket, as its single writer last found it: the bucket of `second` that
/// holds the period starting at `start`. Only that writer reads or writes it (a thread's slot
/// passes to a later thread only after the first is done with it), and only that writer
/// restarts the shard's buckets, so the bucket holds that period for as long as the writer
/// does not move it.
struct Current {
    /// The start of the bucket's period, on the runtime clock.
    start: AtomicU64,
    /// The period's length once the writer set the bucket; 0 (no time matches) until then, and
    /// always in the shared overflow shard, whose many writers never set it.
    span: AtomicU64,
    /// One of the shard's own inline buckets (null until set).
    bucket: AtomicPtr<Bucket<AtomicU64>>,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            second: Ring::inline(SECOND_BUCKET_NANOS),
            inflight: AtomicI64::new(0),
            current: Current {
                start: AtomicU64::new(0),
                span: AtomicU64::new(0),
                bucket: AtomicPtr::new(std::ptr::null_mut()),
            },
        }
    }

    /// Runs `add` on the writer's current bucket if `now` falls in its period (a subtraction and
    /// a compare: no division, no index); returns whether it did. (A callback, not an
    /// `Option<&Bucket>`: testing that option would test the pointer for null again.)
    #[inline(always)]
    fn add_current(&self, now: u64, add: impl FnOnce(&Bucket<AtomicU64>)) -> bool {
        let c = &self.current;
        if now.wrapping_sub(c.start.load(Ordering::Relaxed)) >= c.span.load(Ordering::Relaxed) {
            return false;
        }
        // SAFETY: a non-zero `span` was stored (by this shard's single writer, the caller, in
        // program order after the pointer) only by `set_current`, with a pointer to one of this
        // shard's own inline buckets, taken after the shard was boxed. The box never moves the
        // shard, so the pointer is valid for as long as `&self` is.
        add(unsafe { &*c.bucket.load(Ordering::Relaxed) });
        true
    }

    /// Adds `delta` to the calls inside through this shard, as its single writer.
    #[inline(always)]
    fn inflight_exclusive(&self, delta: i64) {
        let v = self.inflight.load(Ordering::Relaxed);
        self.inflight.store(v + delta, Ordering::Release);
    }

    /// Makes the bucket at `pos` the writer's current one, if it holds `pos`'s period. Only the
    /// shard's single writer calls this.
    #[inline]
    fn set_current(&self, pos: Position) {
        let bucket = self.second.bucket_at(pos);
        if bucket.period() != pos.period {
            return; // a newer period (a reading delayed by a whole ring): not the current one
        }
        let c = &self.current;
        c.bucket
            .store(std::ptr::from_ref(bucket).cast_mut(), Ordering::Relaxed);
        c.start
            .store(pos.period * SECOND_BUCKET_NANOS, Ordering::Relaxed);
        c.span.store(SECOND_BUCKET_NANOS, Ordering::Relaxed);
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
    pub(crate) min_rt_us: Option<u64>,
    pub(crate) concurrency: i64,
}

/// Totals of one second of the minute-level window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SecondTotals {
    /// Start of the second on the runtime clock, in nanoseconds.
    pub(crate) start: u64,
    /// Indexed by [`MetricEvent`]; the minimum response time is `u64::MAX` if none finished.
    pub(crate) counts: [u64; EVENTS],
}

/// Totals since the node was created: every call recorded, whether its bucket has left the
/// windows or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunningTotals {
    pub(crate) pass: u64,
    pub(crate) block: u64,
    pub(crate) complete: u64,
    pub(crate) error: u64,
    pub(crate) rt_sum_us: u64,
    /// Blocked calls by the kind of rule that blocked them (indexed as
    /// [`BlockTotals`](super::BlockTotals) orders them).
    pub(crate) blocks_by_rule: [u64; RULE_KINDS],
}

/// A pass's counts, in the current bucket of `shard` (its single writer).
#[inline(always)]
fn pass_into(shard: &Shard, bucket: &Bucket<AtomicU64>, count: u32) {
    bucket.merge_exclusive(MetricEvent::Pass, u64::from(count));
    shard.inflight_exclusive(1);
}

/// An exit's counts, in the current bucket of `shard` (its single writer).
#[inline(always)]
fn exit_into(shard: &Shard, bucket: &Bucket<AtomicU64>, count: u32, rt_us: u64, error: bool) {
    let count = u64::from(count);
    bucket.merge_exclusive(MetricEvent::Complete, count);
    bucket.merge_exclusive(MetricEvent::RtSum, rt_us);
    bucket.merge_exclusive(MetricEvent::MinRt, rt_us);
    if error {
        bucket.merge_exclusive(MetricEvent::Error, count);
    }
    shard.inflight_exclusive(-1);
}

/// A shard and whether this thread is its only writer (two words, passed by value).
#[derive(Clone, Copy)]
struct Writer<'a> {
    shard: &'a Shard,
    exclusive: bool,
}

pub(crate) struct NodeStats {
    /// Inline, so a call follows one pointer to its shard (a null one: none yet).
    shards: [OnceBox<CachePadded<Shard>>; MAX_SLOTS],
    overflow: OnceLock<Box<CachePadded<Shard>>>,
    minute: OnceLock<Box<Ring<AtomicU64>>>,
    /// The counts restarts displaced from the 100 ms buckets, by [`MetricEvent`] (the minimum is
    /// unused): with what the buckets still hold, the running totals. Added to by the fold, under
    /// the displacing shard's restart lock, so the hot path never touches them.
    folded: [AtomicU64; EVENTS],
    /// Blocked calls by the kind of rule that blocked them (the block path is not hot).
    blocked_by_rule: [AtomicU64; RULE_KINDS],
    /// What the resource's shadow rules would have refused or delayed.
    shadow: ShadowStats,
}

impl std::fmt::Debug for NodeStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeStats").finish_non_exhaustive()
    }
}

impl NodeStats {
    pub(crate) const fn new() -> NodeStats {
        NodeStats {
            shards: [const { OnceBox::new() }; MAX_SLOTS],
            overflow: OnceLock::new(),
            minute: OnceLock::new(),
            folded: [const { AtomicU64::new(0) }; EVENTS],
            blocked_by_rule: [const { AtomicU64::new(0) }; RULE_KINDS],
            shadow: ShadowStats::new(),
        }
    }

    /// What the resource's shadow rules would have refused or delayed.
    pub(crate) fn shadow(&self) -> &ShadowStats {
        &self.shadow
    }

    #[inline(always)]
    fn writer(&self) -> Writer<'_> {
        self.writer_in(thread_slot())
    }

    /// The shard of the thread whose [`thread_slot`] is `slot`.
    #[inline(always)]
    fn writer_in(&self, slot: usize) -> Writer<'_> {
        match self.shards.get(slot) {
            Some(cell) => Writer {
                shard: cell.get_or_init(|| Box::new(CachePadded::new(Shard::new()))),
                exclusive: true,
            },
            None => Writer {
                shard: self
                    .overflow
                    .get_or_init(|| Box::new(CachePadded::new(Shard::new()))),
                exclusive: false,
            },
        }
    }

    fn minute(&self) -> &Ring<AtomicU64> {
        self.minute
            .get_or_init(|| Box::new(Ring::new(SECOND_NANOS, MINUTE_BUCKETS)))
    }

    /// Adds to the counters of `events` at `now`: in the writer's current bucket if `now` is in
    /// its period (plain loads and stores: this thread is the shard's only writer), else the
    /// general add, which restarts a stale bucket and folds what it held into the minute window.
    #[inline(always)]
    fn add(&self, w: Writer<'_>, now: u64, events: &[(MetricEvent, u64)]) {
        let added = w.shard.add_current(now, |bucket| {
            for &(event, value) in events {
                bucket.merge_exclusive(event, value);
            }
        });
        if !added {
            self.add_slow(w, now, events);
        }
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&self, w: Writer<'_>, now: u64, events: &[(MetricEvent, u64)]) {
        let pos = second_position(now);
        for &(event, value) in events {
            w.shard
                .second
                .add_at(pos, event, value, w.exclusive, |period, event, value| {
                    self.fold(now, period, event, value)
                });
        }
        if w.exclusive {
            w.shard.set_current(pos);
        }
    }

    /// [`add_slow`](Self::add_slow) of a pass, with its concurrency (the common add builds no
    /// list of events).
    #[cold]
    #[inline(never)]
    fn pass_slow(&self, w: Writer<'_>, now: u64, count: u32) {
        self.add_slow(w, now, &[(MetricEvent::Pass, u64::from(count))]);
        Self::inflight(w, 1);
    }

    /// [`add_slow`](Self::add_slow) of an exit, with its concurrency.
    #[cold]
    #[inline(never)]
    fn exit_slow(&self, w: Writer<'_>, now: u64, count: u32, rt_us: u64, error: bool) {
        let count = u64::from(count);
        let events = [
            (MetricEvent::Complete, count),
            (MetricEvent::RtSum, rt_us),
            (MetricEvent::MinRt, rt_us),
            (MetricEvent::Error, count),
        ];
        self.add_slow(w, now, &events[..if error { 4 } else { 3 }]);
        Self::inflight(w, -1);
    }

    /// Moves a count displaced from a 100 ms bucket of `period` into the running totals, and
    /// into the minute window if its second is still one of the window's 60. Runs under the
    /// displacing shard's restart lock.
    #[cold]
    fn fold(&self, now: u64, period: u64, event: MetricEvent, value: u64) {
        if event != MetricEvent::MinRt {
            self.folded[event.index()].fetch_add(value, Ordering::SeqCst);
        }
        let start = period.saturating_mul(SECOND_BUCKET_NANOS);
        let oldest_second = (now / SECOND_NANOS).saturating_sub(u64::from(MINUTE_BUCKETS) - 1);
        if start > now || start / SECOND_NANOS < oldest_second {
            return;
        }
        let minute = self.minute();
        minute.add_at(minute.position(start), event, value, false, |_, _, _| {});
    }

    #[inline]
    fn inflight(w: Writer<'_>, delta: i64) {
        if w.exclusive {
            let v = w.shard.inflight.load(Ordering::Relaxed);
            w.shard.inflight.store(v + delta, Ordering::Release);
        } else {
            w.shard.inflight.fetch_add(delta, Ordering::AcqRel);
        }
    }

    /// An admitted entry of `count` at `now`, on the thread whose
    /// [`thread_slot_if_assigned`](crate::sync::thread_slot_if_assigned) (or [`thread_slot`])
    /// is `slot`: a thread without its slot yet takes it here.
    #[inline(always)]
    pub(crate) fn on_pass_in(&self, slot: usize, now: u64, count: u32) {
        // The current bucket is set only in a shard with a single writer: the concurrency is
        // then a plain load and store too.
        if let Some(shard) = self.shards.get(slot).and_then(|cell| cell.get())
            && shard.add_current(now, |bucket| pass_into(shard, bucket, count))
        {
            return;
        }
        self.on_pass_again(slot, now, count);
    }

    /// [`on_pass_in`](Self::on_pass_in) of a thread without its slot or shard yet, or at a new
    /// bucket.
    #[cold]
    #[inline(never)]
    fn on_pass_again(&self, slot: usize, now: u64, count: u32) {
        let w = self.writer_in(crate::sync::assigned(slot));
        let shard = w.shard;
        if !shard.add_current(now, |bucket| pass_into(shard, bucket, count)) {
            self.pass_slow(w, now, count);
        }
    }

    /// A rejected entry of `count` at `now`, blocked by a rule of the kind `rule` (an index of
    /// [`BlockTotals::RULES`](super::BlockTotals::RULES)).
    #[inline]
    pub(crate) fn on_block(&self, now: u64, count: u32, rule: usize) {
        if let Some(blocked) = self.blocked_by_rule.get(rule) {
            blocked.fetch_add(u64::from(count), Ordering::Relaxed);
        }
        let w = self.writer();
        self.add(w, now, &[(MetricEvent::Block, u64::from(count))]);
    }

    /// The exit of an admitted entry of `count`.
    #[inline(always)]
    pub(crate) fn on_exit(&self, now: u64, count: u32, rt_us: u64, error: bool) {
        // The common exit makes no call but the last (a tail call): its caller then needs no
        // registers saved either.
        if let Some(shard) = self.ready_shard()
            && shard.add_current(now, |bucket| exit_into(shard, bucket, count, rt_us, error))
        {
            return;
        }
        self.on_exit_again(now, count, rt_us, error);
    }

    /// [`on_exit`](Self::on_exit) of a thread without its shard yet, or at a new bucket.
    #[cold]
    #[inline(never)]
    fn on_exit_again(&self, now: u64, count: u32, rt_us: u64, error: bool) {
        let w = self.writer();
        let shard = w.shard;
        if !shard.add_current(now, |bucket| exit_into(shard, bucket, count, rt_us, error)) {
            self.exit_slow(w, now, count, rt_us, error);
        }
    }

    /// This thread's own shard, if it has one already (no call: see [`writer`](Self::writer)
    /// for the rest).
    #[inline(always)]
    fn ready_shard(&self) -> Option<&Shard> {
        let cell = self.shards.get(crate::sync::thread_slot_if_assigned())?;
        cell.get().map(|shard| &**shard)
    }

    fn each_shard<'a>(&'a self, mut f: impl FnMut(&'a Shard)) {
        for cell in self.shards.iter() {
            if let Some(shard) = cell.get() {
                f(shard);
            }
        }
        if let Some(shard) = self.overflow.get() {
            f(shard);
        }
    }

    /// Totals over the second-level window ending at `now`. Allocates nothing.
    pub(crate) fn window(&self, now: u64) -> WindowTotals {
        let mut t = WindowTotals::default();
        let mut min = NO_MIN;
        self.each_shard(|s| {
            let (counts, shard_min) = s.second.consistent(|| {
                let mut counts = [0u64; EVENTS];
                let mut min = NO_MIN;
                s.second
                    .each_within(now, u64::from(SECOND_BUCKETS), |_, b| {
                        for event in MetricEvent::ALL {
                            match event {
                                MetricEvent::MinRt => min = min.min(b.count(event)),
                                _ => {
                                    counts[event.index()] =
                                        counts[event.index()].saturating_add(b.count(event))
                                }
                            }
                        }
                    });
                (counts, min)
            });
            t.pass = t.pass.saturating_add(counts[MetricEvent::Pass.index()]);
            t.block = t.block.saturating_add(counts[MetricEvent::Block.index()]);
            t.complete = t
                .complete
                .saturating_add(counts[MetricEvent::Complete.index()]);
            t.error = t.error.saturating_add(counts[MetricEvent::Error.index()]);
            t.rt_sum_us = t
                .rt_sum_us
                .saturating_add(counts[MetricEvent::RtSum.index()]);
            min = min.min(shard_min);
            t.concurrency += s.inflight.load(Ordering::Acquire);
        });
        t.min_rt_us = (min != NO_MIN).then_some(min);
        t
    }

    /// The running totals: what the restarts folded plus what the buckets still hold. The two
    /// are read with no restart of any shard in between (a restart moves counts from one to the
    /// other), so a concurrent fold is neither lost nor counted twice; after a few disturbed
    /// tries, the read holds every shard's restart lock. Allocates nothing.
    pub(crate) fn totals(&self) -> RunningTotals {
        const SHARDS: usize = MAX_SLOTS + 1;
        let mut counts = [0u64; EVENTS];
        let read = |counts: &mut [u64; EVENTS]| {
            *counts = std::array::from_fn(|i| self.folded[i].load(Ordering::SeqCst));
            self.each_shard(|s| {
                s.second.each_held(|b| {
                    for event in MetricEvent::ALL {
                        if event != MetricEvent::MinRt {
                            counts[event.index()] =
                                counts[event.index()].saturating_add(b.count(event));
                        }
                    }
                })
            });
        };
        let mut settled_read = false;
        for _ in 0..8 {
            let mut seqs = [0u64; SHARDS];
            let (mut n, mut settled) = (0, true);
            self.each_shard(|s| match s.second.seq() {
                Some(seq) if n < SHARDS => {
                    seqs[n] = seq;
                    n += 1;
                }
                _ => settled = false,
            });
            if !settled {
                std::hint::spin_loop();
                continue;
            }
            read(&mut counts);
            let (mut i, mut unchanged) = (0, true);
            self.each_shard(|s| {
                unchanged &= i < n && s.second.unchanged(seqs[i]);
                i += 1;
            });
            if unchanged && i == n {
                settled_read = true;
                break;
            }
        }
        if !settled_read {
            // Hold every shard's restart lock, in shard order (a writer holds at most one).
            let mut held: [Option<(&Shard, u64)>; SHARDS] = [None; SHARDS];
            let mut n = 0;
            self.each_shard(|s| {
                if n < SHARDS {
                    held[n] = Some((s, s.second.lock()));
                    n += 1;
                }
            });
            read(&mut counts);
            for (s, seq) in held.iter().flatten() {
                s.second.unlock(*seq);
            }
        }
        let c = |e: MetricEvent| counts[e.index()];
        RunningTotals {
            pass: c(MetricEvent::Pass),
            block: c(MetricEvent::Block),
            complete: c(MetricEvent::Complete),
            error: c(MetricEvent::Error),
            rt_sum_us: c(MetricEvent::RtSum),
            blocks_by_rule: self.blocks_by_rule(),
        }
    }

    /// Blocked calls since the node was created, by the kind of rule that blocked them.
    pub(crate) fn blocks_by_rule(&self) -> [u64; RULE_KINDS] {
        std::array::from_fn(|i| self.blocked_by_rule[i].load(Ordering::Acquire))
    }

    /// The most calls completed in one 100 ms bucket of the second-level window ending at
    /// `now` (every shard's share of a bucket summed first).
    pub(crate) fn max_bucket_completes(&self, now: u64) -> u64 {
        // Within one window every bucket index holds a distinct period, the same in every shard.
        let mut by_bucket = [0u64; SECOND_BUCKETS as usize];
        self.each_shard(|s| {
            let shard = s.second.consistent(|| {
                let mut shard = [0u64; SECOND_BUCKETS as usize];
                s.second
                    .each_within(now, u64::from(SECOND_BUCKETS), |period, b| {
                        shard[(period % u64::from(SECOND_BUCKETS)) as usize] =
                            b.count(MetricEvent::Complete);
                    });
                shard
            });
            for (total, n) in by_bucket.iter_mut().zip(shard) {
                *total = total.saturating_add(n);
            }
        });
        by_bucket.into_iter().max().unwrap_or(0)
    }

    /// Calls entered and not yet exited, over every shard.
    pub(crate) fn inflight_total(&self) -> i64 {
        let mut inside = 0;
        self.each_shard(|s| inside += s.inflight.load(Ordering::Acquire));
        inside
    }

    /// Passes over the second-level window ending at `now`.
    pub(crate) fn passes(&self, now: u64) -> u64 {
        let mut passes = 0u64;
        self.each_shard(|s| {
            passes = passes.saturating_add(s.second.sum_within(
                now,
                MetricEvent::Pass,
                u64::from(SECOND_BUCKETS),
            ))
        });
        passes
    }

    /// The passes recorded from `since` to `now`, as `f(start, length, passes)` per bucket:
    /// 100 ms buckets for the last second, whole seconds before that (up to a minute back).
    pub(crate) fn recent_passes(&self, now: u64, since: u64, mut f: impl FnMut(u64, u64, u64)) {
        let horizon = now.saturating_sub(since) / SECOND_BUCKET_NANOS + 1;
        self.each_shard(|s| {
            s.second.each_within(now, horizon, |period, b| {
                let passes = b.count(MetricEvent::Pass);
                if passes > 0 {
                    f(period * SECOND_BUCKET_NANOS, SECOND_BUCKET_NANOS, passes);
                }
            })
        });
        if let Some(minute) = self.minute.get() {
            let seconds = (now.saturating_sub(since) / SECOND_NANOS + 1).min(MINUTE_BUCKETS.into());
            minute.each_within(now, seconds, |period, b| {
                let passes = b.count(MetricEvent::Pass);
                if passes > 0 {
                    f(period * SECOND_NANOS, SECOND_NANOS, passes);
                }
            });
        }
    }

    /// Per-second totals over the minute window ending at `now`, oldest first; seconds with no
    /// traffic are left out.
    pub(crate) fn minute_totals(&self, now: u64) -> Vec<SecondTotals> {
        let mut seconds: Vec<SecondTotals> = Vec::new();
        // A fold moves counts from a shard into the minute window: read both with no restart
        // of either in between, else retry (a few times; then take the figures as they are).
        let mut settled_read = false;
        for _ in 0..8 {
            let mut seqs = Vec::new();
            let mut settled = true;
            self.each_shard(|s| match s.second.seq() {
                Some(seq) => seqs.push(seq),
                None => settled = false,
            });
            let minute_seq = self.minute.get().and_then(|m| m.seq());
            if !settled || (self.minute.get().is_some() && minute_seq.is_none()) {
                std::thread::yield_now();
                continue;
            }
            seconds.clear();
            self.read_minute(now, &mut seconds);
            let mut i = 0;
            let mut unchanged = true;
            self.each_shard(|s| {
                unchanged &= seqs.get(i).is_some_and(|&seq| s.second.unchanged(seq));
                i += 1;
            });
            let minute_unchanged = match (self.minute.get(), minute_seq) {
                (Some(m), Some(seq)) => m.unchanged(seq),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if unchanged && i == seqs.len() && minute_unchanged {
                settled_read = true;
                break;
            }
        }
        if !settled_read {
            seconds.clear();
            self.read_minute(now, &mut seconds);
        }
        seconds.sort_by_key(|s| s.start);
        seconds
    }

    fn read_minute(&self, now: u64, seconds: &mut Vec<SecondTotals>) {
        let oldest = (now / SECOND_NANOS)
            .saturating_sub(u64::from(MINUTE_BUCKETS) - 1)
            .saturating_mul(SECOND_NANOS);
        let mut record = |start: u64, event: MetricEvent, value: u64| {
            let second = start - start % SECOND_NANOS;
            if second < oldest || second > now {
                return;
            }
            let i = match seconds.iter().position(|s| s.start == second) {
                Some(i) => i,
                None => {
                    let mut counts = [0; EVENTS];
                    counts[MetricEvent::MinRt.index()] = NO_MIN;
                    seconds.push(SecondTotals {
                        start: second,
                        counts,
                    });
                    seconds.len() - 1
                }
            };
            let slot = &mut seconds[i].counts[event.index()];
            *slot = match event {
                MetricEvent::MinRt => (*slot).min(value),
                _ => slot.saturating_add(value),
            };
        };
        let mut visit = |start: u64, b: &Bucket<AtomicU64>| {
            for event in MetricEvent::ALL {
                let value = b.count(event);
                if value != event.empty() {
                    record(start, event, value);
                }
            }
        };
        if let Some(minute) = self.minute.get() {
            minute.each_within(now, u64::from(MINUTE_BUCKETS), |period, b| {
                visit(period * SECOND_NANOS, b)
            });
        }
        let horizon = now.saturating_sub(oldest) / SECOND_BUCKET_NANOS + 1;
        self.each_shard(|s| {
            s.second.each_within(now, horizon, |period, b| {
                visit(period * SECOND_BUCKET_NANOS, b)
            })
        });
    }
}

#[cfg(test)]
mod totals_tests {
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::sync::{Arc, Barrier};

    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Model {
        pass: u64,
        block: u64,
        complete: u64,
        error: u64,
        rt_sum_us: u64,
    }

    fn check(stats: &NodeStats, model: &Model, now: u64, step: usize) {
        let t = stats.totals();
        let got = Model {
            pass: t.pass,
            block: t.block,
            complete: t.complete,
            error: t.error,
            rt_sum_us: t.rt_sum_us,
        };
        assert_eq!(got, *model, "step {step} at {now} ns");
        assert_eq!(
            t.blocks_by_rule.iter().sum::<u64>(),
            model.block,
            "step {step} at {now} ns"
        );
    }

    /// Every call counted once, across bucket restarts, folds into the minute window, idle gaps
    /// longer than the minute window, the overflow shard and several threads' shards.
    #[test]
    fn running_totals_equal_the_calls_made_across_restarts_and_idle_gaps() {
        let stats = NodeStats::new();
        let mut model = Model::default();
        let mut now = 3_600 * SECOND_NANOS;
        // A small deterministic generator (xorshift).
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for step in 0..20_000 {
            now += match next(100) {
                0 => 61 * SECOND_NANOS + next(SECOND_NANOS), // idle past the minute
                1..=3 => 2 * SECOND_NANOS + next(SECOND_NANOS), // a few seconds
                _ => next(SECOND_BUCKET_NANOS * 2),          // within a bucket or two
            };
            let count = 1 + next(3) as u32;
            // Slots 0..3: separate shards; MAX_SLOTS: the shared overflow shard.
            let slot = match next(5) {
                4 => MAX_SLOTS,
                s => s as usize,
            };
            match next(4) {
                0 => {
                    stats.on_block(now, count, next(7) as usize);
                    model.block += u64::from(count);
                }
                1 => {
                    let rt = next(5_000);
                    let error = next(3) == 0;
                    stats.on_exit(now, count, rt, error);
                    model.complete += u64::from(count);
                    model.rt_sum_us += rt;
                    model.error += if error { u64::from(count) } else { 0 };
                }
                _ => {
                    stats.on_pass_in(slot, now, count);
                    model.pass += u64::from(count);
                }
            }
            if step % 7 == 0 {
                check(&stats, &model, now, step);
            }
        }
        check(&stats, &model, now, 20_000);
        now += 3_600 * SECOND_NANOS;
        check(&stats, &model, now, 20_001);
    }

    /// Readers racing with writers whose buckets restart all the time never see a fold lost or
    /// counted twice: every read lies between the calls finished before it and those started
    /// before its end.
    #[test]
    fn a_fold_during_a_read_is_neither_lost_nor_counted_twice() {
        const WRITERS: usize = 2;
        const CALLS: u64 = 20_000;
        let stats: &'static NodeStats = Box::leak(Box::new(NodeStats::new()));
        let clock = Arc::new(AtomicU64::new(3_600 * SECOND_NANOS));
        let started = Arc::new(AtomicU64::new(0));
        let finished = Arc::new(AtomicU64::new(0));
        let barrier = Arc::new(Barrier::new(WRITERS + 1));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (clock, started, finished, barrier) = (
                    Arc::clone(&clock),
                    Arc::clone(&started),
                    Arc::clone(&finished),
                    Arc::clone(&barrier),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    for i in 0..CALLS {
                        // 7 ms a call: a restart every ~14 calls per shard.
                        let now = clock.fetch_add(7_000_000, SeqCst);
                        started.fetch_add(1, SeqCst);
                        // Half the calls of writer 1 go through the shared overflow shard.
                        let slot = if w == 1 && i % 2 == 0 { MAX_SLOTS } else { w };
                        stats.on_pass_in(slot, now, 1);
                        finished.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        barrier.wait();
        let mut reads = 0u64;
        while finished.load(SeqCst) < WRITERS as u64 * CALLS {
            let low = finished.load(SeqCst);
            let pass = stats.totals().pass;
            let high = started.load(SeqCst);
            assert!(low <= pass && pass <= high, "{low} <= {pass} <= {high}");
            reads += 1;
        }
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            stats.totals().pass,
            WRITERS as u64 * CALLS,
            "after {reads} reads"
        );
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;
    use crate::sync::thread_slot_if_assigned;

    /// A thread's first pass, counted with the slot it read before it had one (as a guarded
    /// function's entry counts it), takes the thread's slot and lands in its own shard: its
    /// next calls write there without a locked instruction.
    #[test]
    fn a_threads_first_pass_takes_its_slot_and_its_own_shard() {
        let stats: &'static NodeStats = Box::leak(Box::new(NodeStats::new()));
        let now = 3_600 * SECOND_NANOS;
        std::thread::spawn(move || {
            let before = thread_slot_if_assigned();
            assert!(before >= MAX_SLOTS, "a new thread has no slot yet");
            stats.on_pass_in(before, now, 3);
            let slot = thread_slot_if_assigned();
            assert!(slot < MAX_SLOTS, "the pass took the thread's slot");
            let own = stats.shards[slot].get().expect("the thread's own shard");
            assert_eq!(
                own.second
                    .sum_within(now, MetricEvent::Pass, SECOND_BUCKETS as u64),
                3
            );
            // The next pass is counted in the current bucket of that shard.
            stats.on_pass_in(slot, now, 2);
            assert_eq!(
                own.second
                    .sum_within(now, MetricEvent::Pass, SECOND_BUCKETS as u64),
                5
            );
        })
        .join()
        .expect("the thread's checks");
        assert!(
            stats.overflow.get().is_none(),
            "nothing in the shared shard"
        );
        assert_eq!(stats.totals().pass, 5);
    }
}

#[cfg(test)]
mod current_bucket_tests {
    use proptest::prelude::*;

    use super::*;

    /// What a shard's buckets hold: each bucket's period and counts, in ring order.
    fn buckets(ring: &Ring<AtomicU64, [Bucket<AtomicU64>; SECOND_BUCKETS as usize]>) -> Vec<u64> {
        let mut held = Vec::new();
        for i in 0..SECOND_BUCKETS as usize {
            let b = ring.bucket_at(Position {
                period: 0,
                index: i,
            });
            held.push(b.period());
            held.extend(MetricEvent::ALL.map(|e| b.count(e)));
        }
        held
    }

    proptest! {
        /// The writer's current bucket is only a shortcut: every shard's buckets end up exactly
        /// as a ring fed through the general add (position computed for every call) leaves
        /// them, for any times: within the current period, across periods, idle gaps, and
        /// readings older than the writer's last (an admission counted at a later time).
        #[test]
        fn the_current_bucket_adds_exactly_where_the_general_add_would(
            steps in proptest::collection::vec((0usize..3, -3i64..25, 0u8..3, 1u32..4, 0u64..900), 1..300)
        ) {
            let stats = NodeStats::new();
            let reference: Vec<Ring<AtomicU64, [Bucket<AtomicU64>; SECOND_BUCKETS as usize]>> =
                (0..2).map(|_| Ring::inline(SECOND_BUCKET_NANOS)).collect();
            let slot = thread_slot();
            prop_assume!(slot < MAX_SLOTS);
            let mut now = 3_600 * SECOND_NANOS;
            for (shard, step, kind, count, rt) in steps {
                // Steps of 40 ms: several calls a bucket; sometimes back a little, back more than
                // the ring (a bucket of that time already holds a newer period), or far on.
                let delta = match step {
                    -3 => -1_240_000_000,
                    24 => 70 * SECOND_NANOS as i64,
                    _ => step * 40_000_000,
                };
                let at = now.saturating_add_signed(delta);
                now = now.max(at);
                let add = |ring: &Ring<AtomicU64, _>, event, value| {
                    ring.add_at(second_position(at), event, value, true, |_, _, _| {})
                };
                // Shard 0 is written as another thread's slot, shard 1 as this thread's own.
                let (target, model) = match shard {
                    0 => (if slot == 0 { 1 } else { 0 }, &reference[0]),
                    _ => (slot, &reference[1]),
                };
                let count64 = u64::from(count);
                match (kind, target == slot) {
                    (0, _) | (_, false) => {
                        stats.on_pass_in(target, at, count);
                        add(model, MetricEvent::Pass, count64);
                    }
                    (1, true) => {
                        stats.on_exit(at, count, rt, rt % 2 == 0);
                        add(model, MetricEvent::Complete, count64);
                        add(model, MetricEvent::RtSum, rt);
                        add(model, MetricEvent::MinRt, rt);
                        if rt % 2 == 0 {
                            add(model, MetricEvent::Error, count64);
                        }
                    }
                    _ => {
                        stats.on_block(at, count, 0);
                        add(model, MetricEvent::Block, count64);
                    }
                }
                let (other, own) = (if slot == 0 { 1 } else { 0 }, slot);
                for (i, s) in [other, own].into_iter().enumerate() {
                    if let Some(shard) = stats.shards[s].get() {
                        prop_assert_eq!(buckets(&shard.second), buckets(&reference[i]));
                    }
                }
            }
        }
    }
}
