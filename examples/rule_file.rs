//! Rules from a file (default feature `rule-files`): load a YAML file, watch it, replace it the
//! way editors and Kubernetes do, and see a bad edit refused while the last good rules stay.
//!
//! ```text
//! cargo run -p sentinel-integration --example rule_file
//! ```

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};
use std::{env, fs, thread};

use sentinel_runtime::entry;
use sentinel_runtime::rules::{self, RuleWatcher, WatchStatus};

/// How many of `n` calls to `resource` pass now.
fn passes(resource: &str, n: usize) -> usize {
    (0..n).filter(|_| entry(resource).is_ok()).count()
}

/// Writes a temporary file and renames it over `path`: readers see the old file or the new one.
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
    let dir = env::temp_dir().join(format!("sentinel-rule-file-example-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let path = dir.join("rules.yaml");
    fs::write(
        &path,
        "# At most 2 calls per second to the API.\n\
         flow:\n  - resource: example-api\n    threshold: 2\n",
    )?;

    let watcher = rules::watch_file(&path)?;
    println!("loaded {}", path.display());
    println!(
        "  5 calls: {} passed (threshold 2/s)",
        passes("example-api", 5)
    );

    replace(
        &path,
        "flow:\n  - resource: example-api\n    threshold: 100\n",
    )?;
    wait(&watcher, |s| s.loads == 2)?;
    println!(
        "reloaded after an atomic rename (version {:016x})",
        watcher.status().version
    );
    println!(
        "  5 calls: {} passed (threshold 100/s)",
        passes("example-api", 5)
    );

    replace(
        &path,
        "flow:\n  - resource: example-api\n    threshold: 100\n  - resource: example-db\n    \
         threshold: -1\n",
    )?;
    wait(&watcher, |s| s.last_error.is_some())?;
    if let Some(err) = watcher.status().last_error {
        println!("refused: {err}");
    }
    println!("still in force: {:?}", rules::flow_rules());

    drop(watcher);
    rules::load(rules::RuleSet::new())?;
    fs::remove_dir_all(&dir)?;
    Ok(())
}
