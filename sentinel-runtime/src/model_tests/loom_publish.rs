//! Loom models of [`Published`]: readers (nested, slow-path, holding an `Arc` beyond the read)
//! while a writer replaces the value, on a domain of two thread slots in loom's atomics.
//!
//! Checked: no value is freed while a reader uses it (each value's drop raises a flag that every
//! use loads: see [`Value`]),
//! a reader sees the values in the order they were published, and once the writer and the
//! readers are done every value has been freed exactly once.
//!
//! The domain runs the protocol's symmetric form (the reader publishes with a `SeqCst` swap, the
//! writer's barrier is a `SeqCst` fence), on [`ScWord`]s, whose `SeqCst` accesses loom orders as
//! a real machine does (loom 0.7 alone models them as `AcqRel`, see `loom_qps`). The asymmetric
//! form (a plain store, and `membarrier` in the writer) differs only in how that store-load order
//! is obtained, which loom cannot model.

use std::sync::atomic::AtomicUsize as StdCount;
use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};
use std::sync::Arc as StdArc;

use crossbeam_utils::CachePadded;
use loom::sync::atomic::{fence, AtomicBool};
use loom::sync::Arc;
use loom::thread;

use super::loom_qps::ScWord;
use crate::sync::{AtomicWord, Domain, Hazards, Published};

/// A domain of two thread slots (0 and 1); `publishes: false` breaks the protocol (readers do
/// not announce what they read), for the model that must fail.
struct Model {
    hazards: Vec<CachePadded<Hazards<ScWord>>>,
    slow_readers: ScWord,
    publishes: bool,
}

impl Domain for &'static Model {
    type Word = ScWord;

    fn hazards(&self) -> &[CachePadded<Hazards<ScWord>>] {
        &self.hazards
    }

    fn slow_readers(&self) -> &ScWord {
        &self.slow_readers
    }

    fn publish(&self, word: &ScWord, address: u64) {
        if self.publishes {
            word.swap(address, SeqCst);
        }
    }

    fn heavy_barrier(&self) -> bool {
        fence(SeqCst);
        true
    }
}

fn model(publishes: bool) -> &'static Model {
    Box::leak(Box::new(Model {
        hazards: (0..2).map(|_| CachePadded::new(Hazards::new())).collect(),
        slow_readers: ScWord::new(0),
        publishes,
    }))
}

/// A published value: its number, and a flag its drop raises.
///
/// Every use of the value loads the flag: a use that is not ordered before the drop may see it
/// raised (loom explores every value a load may return), and fails. The model keeps a `Weak` of
/// every value, so a dropped value's memory stays allocated and a use after the drop reads the
/// flag instead of freed memory.
struct Value {
    n: u64,
    freed: StdArc<AtomicBool>,
    live: StdArc<StdCount>,
}

impl Value {
    /// A use of the value: its number, after checking it was not dropped.
    fn used(&self) -> u64 {
        assert!(
            !self.freed.load(Acquire),
            "value {} used after it was freed",
            self.n
        );
        self.n
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        self.freed.store(true, Release);
        self.live.fetch_sub(1, SeqCst);
    }
}

/// The values of one execution: how many are alive, and a `Weak` of each.
#[derive(Default)]
struct Values {
    live: StdArc<StdCount>,
    kept: Vec<std::sync::Weak<Value>>,
}

impl Values {
    fn make(&mut self, n: u64) -> std::sync::Arc<Value> {
        self.live.fetch_add(1, SeqCst);
        let value = std::sync::Arc::new(Value {
            n,
            freed: StdArc::new(AtomicBool::new(false)),
            live: self.live.clone(),
        });
        self.kept.push(std::sync::Arc::downgrade(&value));
        value
    }

    fn live(&self) -> usize {
        self.live.load(SeqCst)
    }
}

/// Runs the model over every interleaving within `bound` preemptions; returns how many
/// executions loom explored.
fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) -> usize {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    super::loom_runs::explored(builder, f)
}

/// A reader on slot 0 (`slot`: another slot, or none for the slow path) reads twice, the second
/// time with a nested read, while the main thread replaces the value twice.
fn readers_against_a_writer(publishes: bool, slot: usize) {
    let mut values = Values::default();
    let published = Arc::new(Published::in_domain(values.make(0), model(publishes)));
    let reader = {
        let published = published.clone();
        thread::spawn(move || {
            let first = published.read_in(slot, |v| v.used());
            let second = published.read_in(slot, |v| {
                let outer = v.used();
                let inner = published.read_in(slot, |w| w.used());
                assert!(
                    inner >= outer,
                    "nested read went back: {outer} then {inner}"
                );
                assert_eq!(v.used(), outer);
                outer
            });
            assert!(second >= first, "values went back: {first} then {second}");
        })
    };
    published.replace(values.make(1));
    published.replace(values.make(2));
    reader.join().unwrap();
    assert_eq!(published.read_in(1, |v| v.used()), 2);
    drop(published);
    assert_eq!(values.live(), 0, "every value freed exactly once");
}

#[test]
fn a_value_is_never_freed_while_a_reader_uses_it() {
    let runs = check(2, || readers_against_a_writer(true, 0));
    assert!(runs > 1, "loom explored a single execution");
}

#[test]
fn a_slow_path_reader_is_never_left_with_a_freed_value() {
    // No slot: the read goes through the count of slow readers.
    let runs = check(2, || readers_against_a_writer(true, usize::MAX));
    assert!(runs > 1, "loom explored a single execution");
}

/// The model can fail: readers that do not announce what they read are caught using a value
/// the writer freed.
#[test]
#[should_panic(expected = "used after it was freed")]
fn a_reader_that_does_not_publish_is_caught() {
    check(2, || readers_against_a_writer(false, 0));
}

#[test]
fn an_arc_taken_in_a_read_outlives_the_replace() {
    let runs = check(2, || {
        let mut values = Values::default();
        let published = Arc::new(Published::in_domain(values.make(0), model(true)));
        let reader = {
            let published = published.clone();
            thread::spawn(move || {
                let held = published.read_in(0, |v| v.to_arc());
                // Whatever the writer did meanwhile, the value held is alive.
                let n = held.used();
                assert!(n <= 1);
                n
            })
        };
        published.replace(values.make(1));
        let n = reader.join().unwrap();
        assert_eq!(published.read_in(1, |v| v.used()), 1);
        drop(published);
        assert_eq!(
            values.live(),
            0,
            "freed once the reader's Arc went (n = {n})"
        );
    });
    assert!(runs > 1, "loom explored a single execution");
}
