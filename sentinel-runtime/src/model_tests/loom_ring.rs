//! Loom models of [`Ring`]'s bucket restart (the restart lock in `seq`, counters swapped to
//! empty before the new period is stored) and of its seqlock reads.
//!
//! Rings here have buckets of 1 ns (so `now` is the period) and 1 or 2 buckets, so that a later
//! period lands on a bucket still holding an older one.
//!
//! Two words are used:
//!
//! * plain `loom::sync::atomic::AtomicU64`, where at most one thread can wait at a time: loom
//!   then reads the ring's `SeqCst` accesses of `seq` as `AcqRel`, a *weaker* model than the
//!   real one, so a pass here shows that the restart and the seqlock need no more than
//!   acquire/release (and every counter keeps its own ordering);
//! * [`ScWord`] where two threads can wait at once (loom 0.7 cannot explore two `yield_now`
//!   spinners, see its docs): `SeqCst` accesses become sequentially consistent, the others keep
//!   their orderings.
//!
//! Checked: no add is lost or counted twice across a restart; the displaced callback sees each
//! old counter exactly once, with its exact value; a reader sees either the state before the
//! restart or one after it (with any subset of the racing adds), never a mix; and, as a check
//! that the reader model can fail at all, a reader that skips the seqlock is caught.

use loom::sync::atomic::AtomicU64 as LoomWord;
use loom::sync::Arc;
use loom::thread;

use super::loom_qps::ScWord;
use crate::stat::ring::{Position, Ring};
use crate::stat::MetricEvent;
use crate::sync::AtomicWord;

type Displaced = Vec<(u64, MetricEvent, u64)>;

fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// A ring of `len` buckets of 1 ns.
fn ring<A: AtomicWord>(len: u32) -> Ring<A> {
    Ring::new(1, len)
}

fn pos<A: AtomicWord>(r: &Ring<A>, period: u64) -> Position {
    r.position(period)
}

/// Adds `value` to `event` at `period` (shared), returning what the add displaced.
fn add<A: AtomicWord>(r: &Ring<A>, period: u64, event: MetricEvent, value: u64) -> Displaced {
    let mut seen = Vec::new();
    r.add_at(pos(r, period), event, value, false, |p, e, v| {
        seen.push((p, e, v))
    });
    seen
}

fn sorted(mut d: Displaced) -> Displaced {
    d.sort_by_key(|&(p, e, v)| (p, e.index(), v));
    d
}

// ---------------------------------------------------------------------------------------------
// Adds into a bucket stale for all of them.
// ---------------------------------------------------------------------------------------------

/// The bucket of period 2 holds period 0 (Pass 5, MinRt 9); `adders` threads each add Pass 1
/// at period 2 (the last one, if `min`, also MinRt 4). One restarts the bucket; the new period
/// must hold every add, and the old counters must be handed over exactly once.
fn stale_for_all<A: AtomicWord + 'static>(adders: usize, min: bool, bound: usize) {
    check(bound, move || {
        let r = Arc::new(ring::<A>(2));
        assert!(add(&r, 0, MetricEvent::Pass, 5).is_empty());
        assert!(add(&r, 0, MetricEvent::MinRt, 9).is_empty());
        let handles: Vec<_> = (0..adders)
            .map(|i| {
                let r = r.clone();
                thread::spawn(move || {
                    let mut d = add(&r, 2, MetricEvent::Pass, 1);
                    if min && i + 1 == adders {
                        d.extend(add(&r, 2, MetricEvent::MinRt, 4));
                    }
                    d
                })
            })
            .collect();
        let displaced: Displaced = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        assert_eq!(
            sorted(displaced),
            vec![(0, MetricEvent::Pass, 5), (0, MetricEvent::MinRt, 9)],
            "the old period's counters, each exactly once"
        );
        assert_eq!(r.bucket_at(pos(&r, 2)).period(), 2);
        assert_eq!(
            r.sum_within(2, MetricEvent::Pass, 1),
            adders as u64,
            "no add lost"
        );
        // The window {1, 2} does not see period 0 any more.
        assert_eq!(r.sum_within(2, MetricEvent::Pass, 2), adders as u64);
        assert_eq!(r.min_within(2, 2), min.then_some(4));
    });
}

#[test]
fn stale_bucket_two_adders() {
    stale_for_all::<LoomWord>(2, true, 3);
}

#[test]
fn stale_bucket_three_adders() {
    stale_for_all::<ScWord>(3, false, 1);
}

/// Adds at two later periods onto the bucket of period 0 (one bucket): period 1 (Pass 1) and
/// period 2 (Pass 10). Whichever order the restarts run in, every count is either handed over
/// (displaced) or still in the bucket, exactly once, and the bucket ends at period 2 (an add
/// at 1 arriving after the restart to 2 counts in 2: no bucket moves back in time).
#[test]
fn adds_at_two_later_periods_conserve_every_count() {
    check(3, || {
        let r = Arc::new(ring::<LoomWord>(1));
        assert!(add(&r, 0, MetricEvent::Pass, 100).is_empty());
        let handles: Vec<_> = [(1u64, 1u64), (2, 10)]
            .into_iter()
            .map(|(period, value)| {
                let r = r.clone();
                thread::spawn(move || add(&r, period, MetricEvent::Pass, value))
            })
            .collect();
        let displaced = sorted(
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect(),
        );
        assert_eq!(r.bucket_at(pos(&r, 2)).period(), 2);
        let held = r.sum_within(2, MetricEvent::Pass, 1);
        let expected = match displaced.as_slice() {
            // Restarted to 1, then to 2: the add at 1 was handed over with period 1.
            [(0, MetricEvent::Pass, 100), (1, MetricEvent::Pass, 1)] => 10,
            // Restarted straight to 2: the add at 1 counts in 2.
            [(0, MetricEvent::Pass, 100)] => 11,
            other => panic!("displaced {other:?}"),
        };
        assert_eq!(held, expected, "displaced {displaced:?}");
    });
}

// ---------------------------------------------------------------------------------------------
// Readers racing with a restart.
// ---------------------------------------------------------------------------------------------

/// Two buckets: period 0 holds Pass 5, period 1 holds Pass 10. `adders` threads add Pass 1 at
/// period 2 (restarting the bucket of 0) while a reader sums with `read`:
///
/// * over {0, 1} (at 1): before the restart 5 + 10 = 15; after it, the bucket holds 2, which
///   is not in this window: 10. Nothing else: 10 + j for j > 0 would be a torn read (period 0
///   read before the restart, its counter after the swap and j adds).
/// * over {1, 2} (at 2): 10 before the restart (0 is not in the window); 10 + j after it,
///   j = 0..=adders being the adds landed so far. 15 would be a torn read (period 2 with the
///   old counter of 5).
fn reader_races_restart<A: AtomicWord + 'static>(
    adders: usize,
    bound: usize,
    read: fn(&Ring<A>, u64, u64) -> u64,
) {
    check(bound, move || {
        let r = Arc::new(ring::<A>(2));
        add(&r, 0, MetricEvent::Pass, 5);
        add(&r, 1, MetricEvent::Pass, 10);
        let handles: Vec<_> = (0..adders)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    add(&r, 2, MetricEvent::Pass, 1);
                })
            })
            .collect();
        let (older, newer) = {
            let r = r.clone();
            let reader = thread::spawn(move || (read(&r, 1, 2), read(&r, 2, 2)));
            reader.join().unwrap()
        };
        for h in handles {
            h.join().unwrap();
        }
        assert!(
            older == 15 || older == 10,
            "sum over periods {{0, 1}} read {older}: neither before (15) nor after (10) the \
             restart"
        );
        assert!(
            (10..=10 + adders as u64).contains(&newer),
            "sum over periods {{1, 2}} read {newer}: not 10 plus some of the {adders} adds"
        );
        assert_eq!(r.sum_within(2, MetricEvent::Pass, 2), 10 + adders as u64);
    });
}

fn seqlocked<A: AtomicWord>(r: &Ring<A>, now: u64, periods: u64) -> u64 {
    r.sum_within(now, MetricEvent::Pass, periods)
}

/// The same sum without the seqlock: what a reader that trusted each bucket's period would see.
fn unlocked<A: AtomicWord>(r: &Ring<A>, now: u64, periods: u64) -> u64 {
    let mut sum = 0;
    r.each_within(now, periods, |_, b| sum += b.count(MetricEvent::Pass));
    sum
}

#[test]
fn reader_sees_before_or_after_a_restart() {
    reader_races_restart::<LoomWord>(1, 3, seqlocked);
}

#[test]
fn reader_sees_before_or_after_a_restart_with_two_adders() {
    reader_races_restart::<ScWord>(2, 1, seqlocked);
}

/// The reader model can fail: without the seqlock, loom finds the torn read (period 0 read
/// before the restart, its counter after it and after the restarting thread's add: 10 + 1).
#[test]
#[should_panic(expected = "neither before (15) nor after (10)")]
fn reader_without_the_seqlock_is_caught() {
    reader_races_restart::<LoomWord>(1, 3, unlocked);
}

/// A single exclusive writer (plain load and store) restarting and adding while a reader reads
/// the new period: before the restart nothing at 2 (0), after it 0, 1 or 2 of the writer's
/// adds, never the old counter.
#[test]
fn exclusive_writer_and_reader() {
    check(3, || {
        let r = Arc::new(ring::<LoomWord>(2));
        r.add_at(pos(&r, 0), MetricEvent::Pass, 5, true, |_, _, _| {});
        let writer = {
            let r = r.clone();
            thread::spawn(move || {
                let mut displaced = Vec::new();
                for _ in 0..2 {
                    r.add_at(pos(&r, 2), MetricEvent::Pass, 1, true, |p, e, v| {
                        displaced.push((p, e, v))
                    });
                }
                displaced
            })
        };
        let seen = r.sum_within(2, MetricEvent::Pass, 1);
        let old = r.sum_within(0, MetricEvent::Pass, 1);
        assert!(seen <= 2, "read {seen} at period 2");
        assert!(old == 5 || old == 0, "read {old} at period 0");
        assert_eq!(writer.join().unwrap(), vec![(0, MetricEvent::Pass, 5)]);
        assert_eq!(r.sum_within(2, MetricEvent::Pass, 1), 2);
    });
}
