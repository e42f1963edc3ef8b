//! The per-second ring of a resource's would-be blocks (`stat::shadow`): one word a slot, the
//! second's tag above its count, replaced whole by a compare-and-swap.
//!
//! Loom models: concurrent adds to one second are all counted; an add of a second racing an
//! add of a newer second in the same slot leaves the newer second, with its exact count, in
//! every interleaving. Property tests against a plain model: with time moving forward, a second
//! reads the sum of its adds while it is one of the last 64 seconds seen, and 0 after; adds in
//! any order within one minute are all counted.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use loom::sync::atomic::AtomicU64 as LoomWord;
use loom::sync::Arc;
use loom::thread;
use proptest::prelude::*;

use crate::stat::shadow::{add_to_second, count_in_second, SECONDS};

fn loom_ring() -> Vec<LoomWord> {
    (0..SECONDS).map(|_| LoomWord::new(0)).collect()
}

/// Two threads add 1 and 2 to second 5 while the main thread adds 4: 7, in every
/// interleaving.
#[test]
fn concurrent_adds_to_one_second_are_all_counted() {
    loom::model(|| {
        let ring = Arc::new(loom_ring());
        let handles: Vec<_> = [1, 2]
            .into_iter()
            .map(|n| {
                let ring = ring.clone();
                thread::spawn(move || add_to_second(&ring[..], 5, n))
            })
            .collect();
        add_to_second(&ring[..], 5, 4);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(count_in_second(&ring[..], 5), 7);
    });
}

/// Second 5 (count 3, from a first add and a racing one) and second 69 (the same slot, 64
/// seconds later, count 2): whatever the order, the slot ends holding second 69 with exactly 2,
/// and second 5 reads 0.
#[test]
fn a_newer_second_wins_its_slot_whatever_the_order() {
    loom::model(|| {
        let ring = Arc::new(loom_ring());
        add_to_second(&ring[..], 5, 1);
        let old = {
            let ring = ring.clone();
            thread::spawn(move || add_to_second(&ring[..], 5, 2))
        };
        add_to_second(&ring[..], 69, 2);
        old.join().unwrap();
        assert_eq!(count_in_second(&ring[..], 69), 2);
        assert_eq!(count_in_second(&ring[..], 5), 0);
    });
}

/// Checks `add_to_second` and `count_in_second` over `adds` (second, count), applied in order,
/// against the plain model `expect` of what each second in `0..=last` must read.
fn check_reads(adds: &[(u64, u32)], expect: impl Fn(u64) -> u64, last: u64) {
    let ring: Vec<AtomicU64> = (0..SECONDS).map(|_| AtomicU64::new(0)).collect();
    for &(second, count) in adds {
        add_to_second(&ring[..], second, count);
    }
    for second in 0..=last + 1 {
        assert_eq!(
            count_in_second(&ring[..], second),
            expect(second),
            "second {second} after {adds:?}"
        );
    }
}

/// Sums per second, saturating as a slot's count does.
fn sums(adds: &[(u64, u32)]) -> BTreeMap<u64, u64> {
    let mut sums = BTreeMap::new();
    for &(second, count) in adds {
        let sum: &mut u64 = sums.entry(second).or_default();
        *sum = (*sum + u64::from(count)).min(u64::from(u32::MAX));
    }
    sums
}

proptest! {
    /// Time moving forward (steps of 0 to 80 seconds, some of them past a whole ring): a second
    /// reads the sum of its adds until a later second takes its slot (64, 128, .. seconds
    /// later), then 0; so each of the last 64 seconds up to the latest add reads exactly.
    #[test]
    fn forward_time_keeps_the_last_minute_exactly(
        steps in prop::collection::vec((0u64..80, 1u32..1_000), 1..200),
        start in 0u64..1_000_000,
    ) {
        let mut second = start;
        let adds: Vec<(u64, u32)> = steps
            .iter()
            .map(|&(step, count)| {
                second += step;
                (second, count)
            })
            .collect();
        let sums = sums(&adds);
        let latest = second;
        let ring = SECONDS as u64;
        // A later add in the same slot takes a second over: the latest second added in each
        // slot (looked up once per slot, not scanned for each of the million seconds read).
        let mut latest_in_slot = vec![None; SECONDS];
        for &(t, _) in &adds {
            let slot = &mut latest_in_slot[(t % ring) as usize];
            *slot = Some(slot.map_or(t, |l: u64| l.max(t)));
        }
        let taken = |s: u64| latest_in_slot[(s % ring) as usize].is_some_and(|t| t > s);
        check_reads(
            &adds,
            |s| match taken(s) {
                true => 0,
                false => sums.get(&s).copied().unwrap_or(0),
            },
            latest,
        );
        for s in latest.saturating_sub(ring - 1)..=latest {
            prop_assert!(!taken(s), "the last minute is never taken over");
        }
    }

    /// Adds in any order within one minute (each second has a slot of its own): every add is
    /// counted, also a late one.
    #[test]
    fn any_order_within_a_minute_counts_every_add(
        adds in prop::collection::vec((0u64..SECONDS as u64, 1u32..1_000), 1..200),
        start in 0u64..1_000_000,
    ) {
        let adds: Vec<(u64, u32)> = adds.iter().map(|&(s, n)| (start + s, n)).collect();
        let sums = sums(&adds);
        check_reads(
            &adds,
            |s| sums.get(&s).copied().unwrap_or(0),
            start + SECONDS as u64,
        );
    }

    /// A second's count saturates at `u32::MAX` and never spills into its tag.
    #[test]
    fn counts_saturate_without_touching_the_tag(
        counts in prop::collection::vec(any::<u32>(), 1..8),
        second in 0u64..1_000_000,
    ) {
        let adds: Vec<(u64, u32)> = counts.iter().map(|&n| (second, n)).collect();
        let sums = sums(&adds);
        check_reads(&adds, |s| sums.get(&s).copied().unwrap_or(0), second);
    }
}
