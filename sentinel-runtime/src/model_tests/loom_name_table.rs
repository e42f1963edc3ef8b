//! Loom models of [`NameTable`]: a reader probing while the (single, lock-holding) writer
//! inserts and grows the table.
//!
//! Checked: a reader finds every value inserted before it started, finds a value being inserted
//! either whole (under its own name) or not at all, sees the values in the order they were
//! inserted, and after the writer is done finds them all.
//!
//! Each thread first touches a shared `start` word: without an access the two threads share
//! before the table's, loom 0.7 runs the reader to its end before the writer starts and
//! explores no other order (observed: one execution).

use std::sync::atomic::Ordering;

use loom::sync::atomic::AtomicU64 as LoomWord;
use loom::sync::Arc;
use loom::thread;

use crate::sync::{NameTable, Named};

struct Value(&'static str);

impl Named for Value {
    fn name(&self) -> &str {
        self.0
    }
}

/// One hash for every name: each lookup probes past the others.
const HASH: u64 = 3;

fn leak(name: &'static str) -> &'static Value {
    Box::leak(Box::new(Value(name)))
}

fn find(table: &NameTable<Value, LoomWord>, name: &str) -> Option<&'static str> {
    table.get(HASH, name).map(|value| value.0)
}

/// Runs the model over every interleaving; returns how many executions loom explored.
fn check(f: impl Fn() + Sync + Send + 'static) -> usize {
    super::loom_runs::explored(loom::model::Builder::new(), f)
}

/// The writer inserts `b` then `c` into `table` (which holds `a`) while the main thread reads.
fn reader_against_writer(slots: usize) {
    let table: Arc<NameTable<Value, LoomWord>> = Arc::new(NameTable::new(slots));
    table.get_or_insert(HASH, "a", || Some(leak("a")));
    let start = Arc::new(LoomWord::new(0));
    let writer = {
        let (table, start) = (table.clone(), start.clone());
        thread::spawn(move || {
            start.store(1, Ordering::Relaxed);
            table.get_or_insert(HASH, "b", || Some(leak("b")));
            table.get_or_insert(HASH, "c", || Some(leak("c")));
        })
    };
    start.load(Ordering::Relaxed);
    // Inserted before the reader started: found, whichever table the reader is on.
    assert_eq!(find(&table, "a"), Some("a"));
    // Being inserted: found whole (by its own name) or missed, never another value.
    let c = find(&table, "c");
    assert!(matches!(c, None | Some("c")), "{c:?}");
    // `b` was inserted before `c`: once `c` is seen, `b` is.
    let b = find(&table, "b");
    assert!(c.is_none() || b == Some("b"), "saw c but not b: {b:?}");
    writer.join().unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(find(&table, name), Some(name));
    }
    assert_eq!(table.all().len(), 3);
}

#[test]
fn a_reader_sees_a_value_whole_or_not_at_all_while_the_table_grows() {
    // Two slots: room for one value, so each of the writer's inserts grows the table.
    let runs = check(|| reader_against_writer(2));
    assert!(runs > 1, "loom explored a single execution");
}

#[test]
fn a_reader_sees_a_value_whole_or_not_at_all_as_it_is_inserted_in_place() {
    // Eight slots: room for all three values, so the writer inserts into the table in force.
    let runs = check(|| reader_against_writer(8));
    assert!(runs > 1, "loom explored a single execution");
}
