//! What the dashboard costs the process: `cargo bench -p sentinel-benches --bench dashboard_cost`.
//!
//! 1. **Sampling CPU**: 200 resources kept busy by one thread; the dashboard (on its own
//!    thread, `sentinel-dashboard`, with no page open) samples them once a second. Its thread's
//!    CPU time (`/proc/self/task/<tid>/stat`) over 20 s, as a share of one core.
//! 2. **Memory**: the process's resident memory before the dashboard starts and after 20 s of
//!    sampling, with 200 and then with 10 000 resources (history is kept for the busiest 200).
//! 3. **The guarded call**: instructions of `entry` + drop on one resource, without and with a
//!    dashboard running, counted by callgrind over N and 2N calls (a timed comparison on a
//!    shared machine measures the neighbours). `DASHBOARD_COST_CALLS=N` (and
//!    `DASHBOARD_COST_WITH=1` for a dashboard) runs only the calls, for:
//!
//!    ```text
//!    valgrind --tool=callgrind --toggle-collect='*dashboard_cost*calls*' \
//!        target/release/deps/dashboard_cost-<hash>
//!    ```
//!
//! Linux only (it reads `/proc`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::{entry, registry};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The CPU time of the thread whose name starts with `name` (a thread's name is cut to 15
/// bytes), in nanoseconds (`/proc/self/task/<tid>/schedstat`, first field).
fn thread_cpu_ns(name: &str) -> u64 {
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.trim().is_empty() && name.starts_with(comm.trim()) {
            let stat = std::fs::read_to_string(dir.join("schedstat")).unwrap();
            return stat.split_whitespace().next().unwrap().parse().unwrap();
        }
    }
    panic!("no thread named {name}");
}

fn busy(names: Arc<Vec<String>>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut calls = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for name in names.iter() {
                drop(entry(name));
                calls += 1;
            }
            // About 2 000 calls a second per resource at most: leave the CPU to the sampler too.
            std::thread::sleep(Duration::from_micros(500));
        }
        calls
    })
}

fn sampling(resources: usize, prefix: &str) {
    let names: Arc<Vec<String>> =
        Arc::new((0..resources).map(|i| format!("{prefix}-{i}")).collect());
    for n in names.iter() {
        drop(entry(n));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let worker = busy(Arc::clone(&names), Arc::clone(&stop));
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = rss_kib();
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let t0 = thread_cpu_ns("sentinel-dashboard");
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(20));
    let t1 = thread_cpu_ns("sentinel-dashboard");
    let secs = start.elapsed().as_secs_f64();
    let rss_after = rss_kib();
    stop.store(true, Ordering::Relaxed);
    let calls = worker.join().unwrap();
    drop(dash);
    println!(
        "{resources:>6} resources ({calls} calls): sampler CPU {:.2}% of one core over {secs:.0} s; \
         RSS {rss_before} KiB before the dashboard, {rss_after} KiB after ({:+} KiB)",
        (t1 - t0) as f64 / 1e9 / secs * 100.0,
        rss_after as i64 - rss_before as i64
    );
}

/// `n` guarded calls (what callgrind counts).
#[inline(never)]
fn calls(n: u64) {
    for _ in 0..n {
        drop(std::hint::black_box(entry("dashboard-cost-call")));
    }
}

fn main() {
    // `cargo bench -p sentinel-benches` passes `--bench`; a filter argument that is not ours skips this bench.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"dashboard_cost".contains(&a))
    {
        return;
    }
    if let Ok(n) = std::env::var("DASHBOARD_COST_CALLS") {
        let dash = (std::env::var("DASHBOARD_COST_WITH").as_deref() == Ok("1")).then(|| {
            Dashboard::new()
                .bind("127.0.0.1:0".parse().unwrap())
                .start()
                .unwrap()
        });
        calls(1); // the node exists before counting
        std::thread::sleep(Duration::from_millis(1_500)); // the dashboard has sampled
        calls(n.parse().unwrap());
        drop(dash);
        return;
    }
    registry::set_max_resources(20_000);
    sampling(200, "cost-200");
    sampling(10_000, "cost-10k");
}
