//! System rules through the public API: process-wide limits on inbound entries only.
//!
//! System rules are process-wide, so every test here holds the mock clock (which runs them one
//! at a time) and clears the rules and readings it set before it ends.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use sentinel_runtime::__private::set_system_load;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AuthorityRule, FlowRule, SystemRule};
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind, Entry, EntryBuilder};

#[sentinel(resource = "sys-attr", inbound = true, fallback = busy)]
fn served(x: u32) -> Result<u32, BlockKind> {
    Ok(x)
}

#[sentinel(resource = "sys-attr-async", inbound = true, fallback = busy)]
async fn served_async(x: u32) -> Result<u32, BlockKind> {
    Ok(x)
}

#[sentinel(resource = "sys-attr-out", fallback = busy)]
fn outbound_call(x: u32) -> Result<u32, BlockKind> {
    Ok(x)
}

fn busy(_x: u32, e: BlockError) -> Result<u32, BlockKind> {
    Err(e.kind())
}

/// Clears the system rules and readings when a test ends, even by a failed assertion.
struct Reset;

impl Drop for Reset {
    fn drop(&mut self) {
        let _ = rules::load_system_rules(vec![]);
        set_system_load(None, None);
    }
}

fn inbound(resource: &str) -> Result<Entry, BlockError> {
    EntryBuilder::new(resource).inbound().enter()
}

fn kind_and_reason(r: Result<Entry, BlockError>) -> (BlockKind, String) {
    let e = r.expect_err("expected a block");
    (e.kind(), e.reason().unwrap_or_default().to_owned())
}

#[test]
fn concurrency_is_exact_under_threads_and_outbound_entries_are_never_limited() {
    let clock = MockClock::install();
    let _reset = Reset;
    rules::load_system_rules(vec![SystemRule::new().concurrency(5)]).unwrap();
    const THREADS: usize = 8;
    let barrier = Arc::new(Barrier::new(THREADS));
    let admitted: Vec<Option<Entry>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let barrier = Arc::clone(&barrier);
                s.spawn(move || {
                    barrier.wait();
                    inbound(&format!("sys-conc-{}", i % 3)).ok()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let inside = admitted.iter().filter(|e| e.is_some()).count();
    assert_eq!(inside, 5, "exactly the limit, across resources");
    assert_eq!(
        kind_and_reason(inbound("sys-conc-0")),
        (BlockKind::System, "concurrency".to_owned())
    );
    assert!(
        EntryBuilder::new("sys-conc-0").enter().is_ok(),
        "outbound: not limited"
    );
    drop(admitted);
    assert!(
        inbound("sys-conc-0").is_ok(),
        "the exits gave the places back"
    );
    clock.advance(Duration::from_secs(1));
}

#[test]
fn qps_is_exact_per_second_and_a_reload_keeps_its_count() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(3));
    rules::load_system_rules(vec![SystemRule::new().qps(4.0)]).unwrap();
    for _ in 0..3 {
        drop(inbound("sys-qps-a").unwrap());
    }
    // Reloading the same limit (another field changed) keeps the 3 passes.
    rules::load_system_rules(vec![SystemRule::new().qps(4.0).concurrency(100)]).unwrap();
    drop(inbound("sys-qps-b").unwrap());
    assert_eq!(
        kind_and_reason(inbound("sys-qps-a")),
        (BlockKind::System, "qps".to_owned())
    );
    assert!(
        EntryBuilder::new("sys-qps-a").enter().is_ok(),
        "outbound: not limited"
    );
    clock.advance(Duration::from_secs(1));
    for _ in 0..4 {
        drop(inbound("sys-qps-b").unwrap());
    }
    assert!(inbound("sys-qps-b").is_err());
}

#[test]
fn average_rt_of_inbound_calls_over_the_limit_blocks_until_the_window_moves() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(5));
    rules::load_system_rules(vec![SystemRule::new().avg_rt(Duration::from_millis(100))]).unwrap();
    let slow = inbound("sys-rt").unwrap();
    clock.advance(Duration::from_millis(300));
    drop(slow);
    let (kind, reason) = kind_and_reason(inbound("sys-rt-other"));
    assert_eq!((kind, reason.as_str()), (BlockKind::System, "avg_rt"));
    let err = inbound("sys-rt").unwrap_err();
    assert_eq!(err.threshold(), 100.0, "the limit, in milliseconds");
    assert!(
        err.to_string().contains("system rule (avg_rt 100)"),
        "{err}"
    );
    clock.advance(Duration::from_millis(1_100));
    assert!(inbound("sys-rt").is_ok(), "the slow call left the window");
}

#[test]
fn cpu_over_the_limit_blocks_only_calls_beyond_what_the_process_finishes() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(7));
    rules::load_system_rules(vec![SystemRule::new().cpu_usage(0.8)]).unwrap();
    set_system_load(Some(0.5), None);
    // Teach the statistics a capacity: 20 calls finish in one 100 ms bucket, 10 ms each:
    // 200 completions a second x 10 ms = 2 calls inside.
    let batch: Vec<Entry> = (0..20).map(|_| inbound("sys-cpu").unwrap()).collect();
    clock.advance(Duration::from_millis(10));
    drop(batch);
    set_system_load(Some(0.95), None);
    // Over the CPU limit, calls pass while at most 2 are inside when they are checked...
    let held: Vec<Entry> = (0..3).map(|_| inbound("sys-cpu").unwrap()).collect();
    // ...and the next is blocked: 3 inside exceed the capacity.
    let (kind, reason) = kind_and_reason(inbound("sys-cpu"));
    assert_eq!((kind, reason.as_str()), (BlockKind::System, "cpu_usage"));
    assert!(
        EntryBuilder::new("sys-cpu").enter().is_ok(),
        "outbound: not limited"
    );
    // The CPU back under the limit: the check stays on for 1 s after the first block...
    set_system_load(Some(0.5), None);
    clock.advance(Duration::from_millis(500));
    let (kind, reason) = kind_and_reason(inbound("sys-cpu"));
    assert_eq!(
        (kind, reason.as_str()),
        (BlockKind::System, "adaptive"),
        "held for 1 s after the first block"
    );
    // ...then lets calls through, however many are inside.
    clock.advance(Duration::from_millis(600));
    let many: Vec<Entry> = (0..50).map(|_| inbound("sys-cpu").unwrap()).collect();
    drop(many);
    drop(held);
    // The load per core works the same way (no completions in the window: capacity 0).
    clock.advance(Duration::from_secs(2));
    rules::load_system_rules(vec![SystemRule::new().load_per_core(1.0)]).unwrap();
    set_system_load(Some(0.0), Some(3.0));
    let held: Vec<Entry> = (0..2).map(|_| inbound("sys-cpu").unwrap()).collect();
    let (kind, reason) = kind_and_reason(inbound("sys-cpu"));
    assert_eq!(
        (kind, reason.as_str()),
        (BlockKind::System, "load_per_core")
    );
    drop(held);
}

#[test]
fn checks_run_authority_then_system_then_flow() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(9));
    rules::load_authority_rules(vec![AuthorityRule::deny("sys-order", ["bad"])]).unwrap();
    rules::load_flow_rules(vec![FlowRule::qps("sys-order", 0.0)]).unwrap();
    rules::load_system_rules(vec![SystemRule::new().qps(0.0)]).unwrap();
    let enter = |origin: &str| {
        EntryBuilder::new("sys-order")
            .inbound()
            .origin(origin)
            .enter()
            .map(drop)
            .map_err(|e| e.kind())
    };
    assert_eq!(enter("bad"), Err(BlockKind::Authority));
    assert_eq!(enter("good"), Err(BlockKind::System));
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(enter("good"), Err(BlockKind::Flow));
    let blocks = metrics::snapshot("sys-order").unwrap().block_total_by_rule;
    assert_eq!((blocks.authority, blocks.system, blocks.flow), (1, 1, 1));
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_authority_rules(vec![]).unwrap();
}

#[test]
fn a_later_block_or_a_panic_gives_the_system_places_back() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(11));
    rules::load_system_rules(vec![SystemRule::new().concurrency(1).qps(3.0)]).unwrap();
    rules::load_flow_rules(vec![FlowRule::qps("sys-later", 0.0)]).unwrap();
    // Blocked by the flow rule after the system check admitted it: nothing kept.
    assert_eq!(inbound("sys-later").unwrap_err().kind(), BlockKind::Flow);
    let panicked = std::panic::catch_unwind(|| {
        let _entry = inbound("sys-free").unwrap();
        panic!("user code panics inside");
    });
    assert!(panicked.is_err());
    // Had the panic kept its concurrency place, the next call would be blocked by it; had the
    // flow-blocked call kept its pass, only one more would fit in the 3 a second.
    drop(inbound("sys-free").unwrap());
    drop(inbound("sys-free").unwrap());
    assert_eq!(
        kind_and_reason(inbound("sys-free")),
        (BlockKind::System, "qps".to_owned())
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn inbound_statistics_count_every_inbound_call_and_only_those() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(13));
    let before = metrics::inbound();
    drop(inbound("sys-stats").unwrap());
    drop(EntryBuilder::new("sys-stats").enter().unwrap());
    let after = metrics::inbound();
    assert_eq!(after.pass_total - before.pass_total, 1);
    assert_eq!(after.complete_total - before.complete_total, 1);
}

#[test]
fn bad_rules_are_refused_by_field_and_the_previous_stay() {
    let clock = MockClock::install();
    let _reset = Reset;
    rules::load_system_rules(vec![SystemRule::new().qps(10.0)]).unwrap();
    let err = rules::load_system_rules(vec![
        SystemRule::new().concurrency(3),
        SystemRule::new().cpu_usage(85.0),
    ])
    .unwrap_err();
    assert_eq!(err.field(), "cpu_usage");
    assert_eq!(rules::system_rules(), vec![SystemRule::new().qps(10.0)]);
    assert!(metrics::rule_loads()
        .iter()
        .any(|&(kind, ok, n)| kind == "system" && !ok && n >= 1));
    drop(clock);
}

#[test]
fn the_attribute_marks_inbound_functions_sync_and_async() {
    let clock = MockClock::install();
    let _reset = Reset;
    clock.advance(Duration::from_secs(15));
    let before = metrics::inbound().pass_total;
    assert_eq!(served(1), Ok(1));
    assert_eq!(outbound_call(2), Ok(2));
    assert_eq!(
        metrics::inbound().pass_total - before,
        1,
        "only the inbound one"
    );
    rules::load_system_rules(vec![SystemRule::new().qps(0.0)]).unwrap();
    assert_eq!(served(1), Err(BlockKind::System));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(served_async(3)), Err(BlockKind::System));
    assert_eq!(outbound_call(2), Ok(2), "outbound: never limited");
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(runtime.block_on(served_async(3)), Ok(3));
}

#[test]
fn the_cpu_source_in_use_is_reported_and_is_never_the_whole_host_on_linux() {
    let _clock = MockClock::install();
    let _reset = Reset;
    rules::load_system_rules(vec![SystemRule::new().cpu_usage(0.99)]).unwrap();
    // The sampler thread finds its source when it starts: poll for it (bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let system = loop {
        let system = metrics::system();
        if system.cpu_source.is_some() || std::time::Instant::now() > deadline {
            break system;
        }
        std::thread::yield_now();
    };
    let source = system.cpu_source.expect("the sampler reports its source");
    assert!(system.effective_cores > 0.0, "{system:?}");
    let text = metrics::prometheus::encode_text();
    let series = format!(
        "sentinel_system_cpu_source{{source=\"{}\"}} 1",
        source.label()
    );
    assert!(text.contains(&series), "{series} in\n{text}");
    if cfg!(target_os = "linux") {
        // The process's own cgroup, or its own CPU time: the host's busy share would make the
        // neighbours' load ours (a root cgroup's usage is the whole host's).
        assert_ne!(source, metrics::CpuSourceKind::Host, "{system:?}");
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let exists = |p: &str| std::path::Path::new(p).exists();
        let v1_root = cgroup.lines().any(|l| {
            l.contains(":cpuacct:/") && l.ends_with(":/") || l.ends_with(":cpu,cpuacct:/")
        }) && exists("/sys/fs/cgroup/cpuacct/release_agent");
        let v2_root = cgroup.lines().any(|l| l == "0::/")
            && exists("/sys/fs/cgroup/cpu.stat")
            && !exists("/sys/fs/cgroup/cgroup.type")
            && !exists("/sys/fs/cgroup/cpu.max");
        if v1_root || v2_root {
            // This process sits in the root cgroup (as on this project's machines).
            assert_eq!(source, metrics::CpuSourceKind::Process, "{cgroup}");
        }
    }
}
