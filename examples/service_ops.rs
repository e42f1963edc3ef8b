//! Operating a service: rules from a YAML file that changes while the service runs, the
//! statistics as Prometheus text, and the library's events through `tracing` to stdout.
//!
//! ```text
//! cargo run -p sentinel-integration --example service_ops
//! ```
//!
//! It serves simulated requests to two routes for a few seconds, edits the rule file twice (a
//! good edit, then a bad one that is refused while the last good rules stay), and prints the
//! Prometheus text at the end. Runs in about 3 seconds.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};
use std::{env, fs, thread};

use sentinel_runtime::metrics::{self, prometheus};
use sentinel_runtime::rules::{self, RuleWatcher, WatchStatus};
use sentinel_runtime::EntryBuilder;

const FIRST_RULES: &str = "\
# Inbound requests: at most 50 a second over the whole process.
system:
  - qps: 50
flow:
  # Checkout: 5 a second.
  - resource: GET:/checkout
    threshold: 5
";

const RAISED_RULES: &str = "\
system:
  - qps: 50
flow:
  # Checkout raised to 20 a second; search limited to 2 inside at once.
  - resource: GET:/checkout
    threshold: 20
  - resource: GET:/search
    metric: concurrency
    threshold: 2
";

const BAD_RULES: &str = "\
flow:
  - resource: GET:/checkout
    threshold: -1
";

/// Serves `n` simulated requests to `route` (each an inbound entry held for no time) and says
/// how many were admitted.
fn serve(route: &str, n: usize) -> usize {
    (0..n)
        .filter(|_| EntryBuilder::new(route).inbound().enter().is_ok())
        .count()
}

/// Writes a temporary file and renames it over `path`, as editors and config tools do.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("yaml.tmp");
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

/// Waits (at most 10 s) until the watcher's status satisfies `done`.
fn wait(watcher: &RuleWatcher, done: impl Fn(&WatchStatus) -> bool) -> Result<(), Box<dyn Error>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done(&watcher.status()) {
        if Instant::now() > deadline {
            return Err("the watcher did not see the change within 10 s".into());
        }
        thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    // The library's events (target `sentinel`) to stdout: rule loads, refused files, and at
    // most one block event per resource per second however many calls are blocked.
    tracing_subscriber::fmt()
        .with_writer(std::io::stdout)
        .with_target(true)
        .init();

    let dir = env::temp_dir().join(format!("sentinel-service-ops-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let path = dir.join("rules.yaml");
    fs::write(&path, FIRST_RULES)?;
    let watcher = rules::watch_file(&path)?;

    println!("== rules from {}", path.display());
    println!(
        "checkout: {} of 30 admitted (5/s)",
        serve("GET:/checkout", 30)
    );

    replace(&path, RAISED_RULES)?;
    wait(&watcher, |s| s.loads == 2)?;
    thread::sleep(Duration::from_secs(1)); // a fresh second for the windows
    println!(
        "== edited while running: version {:016x}",
        watcher.status().version
    );
    println!(
        "checkout: {} of 30 admitted (20/s)",
        serve("GET:/checkout", 30)
    );
    let held: Vec<_> = (0..3)
        .filter_map(|_| EntryBuilder::new("GET:/search").inbound().enter().ok())
        .collect();
    println!("search: {} of 3 inside at once (limit 2)", held.len());
    drop(held);

    replace(&path, BAD_RULES)?;
    wait(&watcher, |s| s.last_error.is_some())?;
    println!("== a bad edit is refused, the last good rules stay");
    if let Some(err) = watcher.status().last_error {
        println!("{err}");
    }
    println!("still in force: {} flow rules", rules::flow_rules().len());

    println!("== inbound: {:?} admitted", metrics::inbound().pass_total);
    println!("== Prometheus text (the sentinel_ families):");
    for line in prometheus::encode_text().lines() {
        if line.contains("checkout") || line.contains("search") || line.contains("inbound") {
            println!("{line}");
        }
    }

    drop(watcher); // stops watching
    rules::load(rules::RuleSet::new())?;
    fs::remove_dir_all(&dir)?;
    Ok(())
}
