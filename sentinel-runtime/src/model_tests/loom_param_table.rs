//! Loom models of [`ParamTable`]'s protocol (the per-value state of a hotspot rule): every
//! interleaving of two threads, within a preemption bound, on the smallest table (8 shards of
//! one bucket: 8 slots a shard); and of its sketch of evicted debts, whose cells two shards'
//! lock holders raise at once.

use loom::sync::atomic::AtomicU64 as LoomWord;
use loom::sync::Arc;
use loom::thread;

use crate::slot::param_table::{DebtSketch, Full, Kind, ParamTable, RateDecision};

use RateDecision::{Block, Pass};

type Table = ParamTable<LoomWord>;

fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    // The setups fill a bucket single-threaded: many loads, few real choices.
    builder.max_branches = 100_000;
    builder.check(f);
}

fn table(full: Full) -> Arc<Table> {
    Arc::new(Table::smallest(full))
}

/// `n` distinct keys of one shard.
fn same_shard(t: &Table, n: usize) -> Vec<u64> {
    let shard = t.shard_of(1);
    (1..).filter(|&k| t.shard_of(k) == shard).take(n).collect()
}

fn passes(decisions: &[RateDecision]) -> usize {
    decisions.iter().filter(|d| **d == Pass).count()
}

/// Two threads, a limit of 1, a key neither has seen: both race to insert it, then to
/// admit. Exactly one passes, and the key has one slot.
#[test]
fn a_new_key_with_room_for_one_admits_one() {
    check(3, || {
        let t = table(Full::Evict);
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.acquire_rate(7, 100, 1, 10, 0, 0));
        let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
        let theirs = h.join().unwrap();
        assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
        assert_eq!(t.len(), 1);
        assert_eq!(t.tat(7), Some(110));
    });
}

/// The same race on a key already present (the lock-free path only).
#[test]
fn a_present_key_with_room_for_one_admits_one() {
    check(3, || {
        let t = table(Full::Evict);
        assert_eq!(t.acquire_rate(7, 50, 1, 10, 0, 0), Pass);
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.acquire_rate(7, 100, 1, 10, 0, 0));
        let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
        let theirs = h.join().unwrap();
        assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
        assert_eq!(t.tat(7), Some(110));
    });
}

/// Two threads take concurrency places of a new key: one slot, both counted, both given
/// back.
#[test]
fn racing_inserts_of_one_key_share_one_slot() {
    check(3, || {
        let t = table(Full::Evict);
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.acquire_inflight(9, 2));
        let mine = t.acquire_inflight(9, 2).unwrap();
        let theirs = h.join().unwrap().unwrap();
        assert_eq!(mine, theirs);
        assert_eq!(t.len(), 1);
        assert_eq!(t.inside(9), Some(2));
        t.release_inflight(mine);
        t.release_inflight(theirs);
        assert_eq!(t.inside(9), Some(0));
    });
}

/// A reader of key A races a new key B that evicts A (idle) from a full bucket. With the
/// Block policy exactly one of them gets the slot; its state is exactly its own admission
/// and the other is absent, blocked: no admission lands on the other key's state.
#[test]
fn an_eviction_races_a_reader_of_the_evicted_key() {
    check(2, || {
        let t = table(Full::Block);
        let keys = same_shard(&t, 9);
        let (a, b) = (keys[0], keys[8]);
        for &k in &keys[1..8] {
            assert_eq!(t.acquire_rate(k, 0, 1, 1_000, 0, 0), Pass);
        }
        assert_eq!(t.acquire_rate(a, 0, 1, 10, 0, 0), Pass); // TAT 10: idle at 100
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.acquire_rate(b, 100, 1, 10, 0, 0));
        let for_a = t.acquire_rate(a, 100, 1, 10, 0, 0);
        let for_b = h.join().unwrap();
        assert_eq!(passes(&[for_a, for_b]), 1, "{for_a:?} {for_b:?}");
        let (winner, loser) = if for_a == Pass { (a, b) } else { (b, a) };
        assert_eq!(t.tat(winner), Some(110));
        assert_eq!(t.tat(loser), None);
        assert_eq!((t.refused(), t.live_evictions()), (1, 0));
        for &k in &keys[1..8] {
            assert_eq!(t.tat(k), Some(1_000));
        }
    });
}

/// A reload unpins a key while two threads race to admit it with room for one: the
/// readers accept the key's tag before and after the change, so exactly one passes, on the
/// key's one slot, and the key ends unpinned.
#[test]
fn an_unpin_races_admissions_of_the_key() {
    check(3, || {
        let t = table(Full::Evict);
        assert!(t.pin(7));
        assert_eq!(t.acquire_rate(7, 50, 1, 10, 0, 0), Pass); // TAT 60: room for one at 100
        let other = Arc::clone(&t);
        let h = thread::spawn(move || {
            other.unpin(7, Kind::Rate);
            other.acquire_rate(7, 100, 1, 10, 0, 0)
        });
        let mine = t.acquire_rate(7, 100, 1, 10, 0, 0);
        let theirs = h.join().unwrap();
        assert_eq!(passes(&[mine, theirs]), 1, "{mine:?} {theirs:?}");
        assert_eq!(t.len(), 1);
        assert_eq!(t.tat(7), Some(110));
        assert_eq!(
            t.rate_key_word(7),
            Some(t.tag_of(7, Kind::Rate)),
            "unpinned"
        );
    });
}

/// A give-back races an admission of the same key: the admission sees the TAT before or
/// after the give-back, never a torn state.
#[test]
fn a_cancel_races_an_admission() {
    check(3, || {
        let t = table(Full::Evict);
        assert_eq!(t.acquire_rate(5, 100, 1, 10, 0, 0), Pass); // TAT 110: full
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.cancel_rate(5, 1, 10));
        let decision = t.acquire_rate(5, 100, 1, 10, 0, 0);
        h.join().unwrap();
        match decision {
            Pass => assert_eq!(t.tat(5), Some(110)),
            Block { retry_after } => {
                assert_eq!(retry_after, 10);
                assert_eq!(t.tat(5), Some(100));
            }
            other => panic!("{other:?}"),
        }
    });
}

/// A release races a new key that needs the releasing key's slot: the slot is taken only
/// once no call is inside, and the release lands on the counter it took.
#[test]
fn a_release_races_an_eviction() {
    check(2, || {
        let t = table(Full::Evict);
        let keys = same_shard(&t, 9);
        let (a, b) = (keys[0], keys[8]);
        for &k in &keys[1..8] {
            assert!(t.acquire_inflight(k, 1).is_ok());
        }
        let held = t.acquire_inflight(a, 1).unwrap();
        let other = Arc::clone(&t);
        let h = thread::spawn(move || other.release_inflight(held));
        let for_b = t.acquire_inflight(b, 1);
        h.join().unwrap();
        match for_b {
            Ok(slot) => {
                assert_eq!(slot, held, "B took A's slot");
                assert_eq!((t.inside(a), t.inside(b)), (None, Some(1)));
                assert_eq!(t.refused(), 0);
            }
            Err(()) => {
                assert_eq!((t.inside(a), t.inside(b)), (Some(0), None));
                assert_eq!(t.refused(), 1);
            }
        }
        for &k in &keys[1..8] {
            assert_eq!(t.inside(k), Some(1));
        }
        assert_eq!(t.live_evictions(), 0);
    });
}

/// The sketch's CAS-max: records into shared cells by two threads (keys of two shards, whose
/// locks do not exclude each other) lose nothing.
#[test]
fn concurrent_records_into_shared_cells_keep_the_largest() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        // The smallest sketch: 16 cells a row, so the two values share cells by force in
        // some rows (the same value, recorded twice, shares all).
        let sketch = Arc::new(DebtSketch::<LoomWord>::new(0));
        let other = Arc::clone(&sketch);
        let t = thread::spawn(move || other.record(7, 300));
        sketch.record(7, 500);
        sketch.record(9, 100);
        t.join().unwrap();
        assert_eq!(sketch.owed(7), 500);
        assert!(sketch.owed(9) >= 100);
    });
}
