//! A call on the pass path allocates nothing. Own test binary: it replaces the global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sentinel_runtime::__private::{DefaultRule, StaticNode};
use sentinel_runtime::{entry, metrics};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers every call to `System` unchanged; only counts, per thread, how many it made
// (the const thread-local has no destructor and allocates nothing itself).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed through unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

static GUARDED: StaticNode = StaticNode::new("no-alloc", &[DefaultRule::Qps(1e9)]);
static LIMITED: StaticNode = StaticNode::new("no-alloc-limited", &[DefaultRule::Concurrency(8)]);

#[test]
fn the_static_node_pass_path_allocates_nothing() {
    // The first call builds and registers the node and this thread's statistics shard.
    drop(GUARDED.enter());
    drop(LIMITED.enter());
    let n = allocations_in(|| {
        for _ in 0..10_000 {
            let entry = GUARDED.enter().expect("a qps of 1e9 admits");
            let inner = LIMITED.enter().expect("one call inside a limit of 8");
            drop(inner);
            drop(entry);
        }
    });
    assert_eq!(n, 0, "allocations on the pass path");
}

#[test]
fn entering_by_name_and_reading_a_snapshot_allocate_nothing() {
    drop(entry("no-alloc-dynamic"));
    let n = allocations_in(|| {
        for _ in 0..1_000 {
            drop(entry("no-alloc-dynamic").expect("no rules: always admitted"));
            let stats = metrics::snapshot("no-alloc-dynamic").expect("node exists");
            assert!(stats.pass_qps >= 1.0);
        }
    });
    assert_eq!(n, 0, "allocations on the by-name path and the snapshot");
}
