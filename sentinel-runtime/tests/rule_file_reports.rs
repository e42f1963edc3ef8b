//! What an operator sees of rule files: every refusal of `load_file` and of the watcher (I/O,
//! syntax, a bad rule, the hotspot budget) is a `tracing` event naming the file, line and field,
//! a `result="failure"` rule load and a 0 in `sentinel_rule_file_last_reload_success`; and a
//! rule file that is a symlink into another directory is followed through in-place edits and
//! link swaps.
//!
//! Events of the watcher's thread are recorded by a global subscriber, so this file is a process
//! of its own; the tests take `serial()` and wait by polling the watcher's status up to a
//! deadline.
#![cfg(all(feature = "rule-files", feature = "tracing", feature = "prometheus"))]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, FlowRule, RuleSet, RuleWatcher, WatchStatus};

static RULES: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    RULES.lock().unwrap_or_else(PoisonError::into_inner)
}

const DEADLINE: Duration = Duration::from_secs(10);

mod common;

use common::{Recorded, Recorder};

/// Every event of target `sentinel`, from every thread (the process's default subscriber).
fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    RECORDER.get_or_init(Recorder::default)
}

fn record_events() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(recorder().clone())
            .expect("the only global subscriber");
    });
}

/// The events about `file` whose message starts with `message`.
fn events(file: &Path, message: &str) -> Vec<Recorded> {
    let file = file.display().to_string();
    recorder()
        .with(message)
        .into_iter()
        .filter(|e| e.get("file") == Some(&file))
        .collect()
}

/// Whole rule-set loads so far: (loaded, refused).
fn set_loads() -> (u64, u64) {
    let mut counts = (0, 0);
    for (kind, loaded, n) in metrics::rule_loads() {
        if kind == "rule_set" {
            if loaded {
                counts.0 += n;
            } else {
                counts.1 += n;
            }
        }
    }
    counts
}

/// The file's last-reload result, in `metrics::rule_files` and in the Prometheus text.
fn file_result(file: &Path) -> Option<bool> {
    let listed = metrics::rule_files()
        .into_iter()
        .find(|(p, _)| p == file)
        .map(|(_, ok)| ok);
    let text = metrics::prometheus::encode_text();
    let series = format!(
        "sentinel_rule_file_last_reload_success{{file=\"{}\"}} ",
        file.display()
    );
    let exposed = text
        .lines()
        .find_map(|l| l.strip_prefix(&series))
        .map(|v| v == "1");
    assert_eq!(listed, exposed, "the metric and the list agree:\n{text}");
    listed
}

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "sentinel-rule-reports-{test}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).expect("create the test's temp dir");
        // Canonical, so paths compare with those the watcher reports.
        TempDir(fs::canonicalize(&dir).expect("canonical temp dir"))
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn flow(resource: &str, threshold: u32) -> String {
    format!("flow:\n  - resource: {resource}\n    threshold: {threshold}\n")
}

/// Waits until `done(status)`, polling the watcher's status.
fn wait_for(watcher: &RuleWatcher, what: &str, done: impl Fn(&WatchStatus) -> bool) -> WatchStatus {
    let start = Instant::now();
    loop {
        let status = watcher.status();
        if done(&status) {
            return status;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}; status: {status:?}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until `done()` holds (for what the watcher's thread reports after its status).
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn replace_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    fs::write(&tmp, text).expect("write the temporary file");
    fs::rename(&tmp, path).expect("rename it over the rule file");
}

#[test]
fn every_refusal_of_load_file_is_counted_reported_and_flagged() {
    record_events();
    let _serial = serial();
    let dir = TempDir::new("load-file");
    let path = dir.join("rules.yaml");

    fs::write(&path, flow("report-ok", 10)).unwrap();
    let before = set_loads();
    rules::load_file(&path).expect("a good file");
    assert_eq!(set_loads(), (before.0 + 1, before.1));
    let loaded = events(&path, "rules loaded");
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0]["kind"], "rule_set");
    assert_eq!(loaded[0]["rules"], "1");
    assert!(loaded[0]["version"].parse::<u64>().is_ok(), "{loaded:?}");
    assert_eq!(file_result(&path), Some(true));

    // A bad value and a misspelled field (validation and reading), a syntax error, a missing
    // file: each is refused, counted, reported with the file (and line and field), flagged.
    let bad_rules = "flow:\n  - resource: report-bad\n    threshold: -50\n  - resource: report-typo\n    threshhold: 5\n";
    /// What is tried, the file's content (`None`: no file), the event's line and field.
    type Case<'a> = (&'a str, Option<&'a str>, Option<(&'a str, &'a str)>);
    let cases: [Case; 3] = [
        (bad_rules, Some(bad_rules), Some(("3", "threshold"))),
        (
            "flow: [\n  {resource: x\n",
            Some("flow: [\n  {resource: x\n"),
            None,
        ),
        ("", None, None),
    ];
    for (what, content, line_field) in cases {
        match content {
            Some(text) => fs::write(&path, text).unwrap(),
            None => fs::remove_file(&path).unwrap(),
        }
        let before = set_loads();
        let refused_before = events(&path, "rules refused").len();
        let err = rules::load_file(&path).expect_err("refused");
        assert_eq!(
            set_loads(),
            (before.0, before.1 + 1),
            "{what:?}: counted as a failure"
        );
        let refused = events(&path, "rules refused");
        assert_eq!(refused.len(), refused_before + 1, "{what:?}: {refused:?}");
        let event = refused.last().unwrap();
        assert_eq!(event["error"], err.to_string());
        assert_eq!(event["kind"], "rule_set");
        if let Some((line, field)) = line_field {
            assert_eq!(
                (event["line"].as_str(), event["field"].as_str()),
                (line, field)
            );
            assert_eq!(event["problems"], "2");
        }
        if content.is_some() {
            assert!(event.contains_key("version"), "{event:?}");
        }
        assert_eq!(file_result(&path), Some(false), "{what:?}");
        assert_eq!(
            rules::flow_rules(),
            vec![FlowRule::qps("report-ok", 10.0)],
            "the previous rules stay"
        );
    }

    // Over the hotspot memory budget.
    fs::write(&path, "hotspot:\n  - { resource: report-hot, param_index: 0, threshold: 1, capacity: 16777216 }\n").unwrap();
    let budget = rules::max_hotspot_memory();
    rules::set_max_hotspot_memory(1 << 20);
    let before = set_loads();
    let err = rules::load_file(&path).expect_err("over the budget");
    rules::set_max_hotspot_memory(budget);
    assert_eq!(set_loads(), (before.0, before.1 + 1), "{err}");
    let event = events(&path, "rules refused").pop().unwrap();
    assert_eq!(
        (event["line"].as_str(), event["field"].as_str()),
        ("2", "capacity"),
        "{err}"
    );
    assert_eq!(file_result(&path), Some(false));

    fs::write(&path, flow("report-ok", 11)).unwrap();
    rules::load_file(&path).expect("good again");
    assert_eq!(file_result(&path), Some(true));

    // A set refused by `rules::load` (not from a file) counts as a failure too.
    let mut bad = RuleSet::new();
    bad.flow = vec![FlowRule::qps("report-set", -1.0)];
    let before = set_loads();
    rules::load(bad).expect_err("a bad threshold");
    assert_eq!(set_loads(), (before.0, before.1 + 1));
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn the_watcher_reports_each_refusal_once_and_each_load_with_its_version() {
    record_events();
    let _serial = serial();
    let dir = TempDir::new("watcher");
    let path = dir.join("rules.yaml");

    // A refused first load is reported as every later one.
    fs::write(&path, flow("report-watch", 10).replace("10", "-10")).unwrap();
    let before = set_loads();
    let err = rules::watch_file(&path).expect_err("a bad first load");
    assert_eq!(set_loads(), (before.0, before.1 + 1));
    let refused = events(&path, "rules refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["error"], err.to_string());
    assert_eq!(file_result(&path), Some(false));
    recorder().clear();

    fs::write(&path, flow("report-watch", 10)).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");
    let first = watcher.status();
    let loaded = events(&path, "rules loaded");
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0]["version"], first.version.to_string());
    assert_eq!(file_result(&path), Some(true));

    let before = set_loads();
    replace_atomically(
        &path,
        "flow:\n  - resource: report-watch\n    threshold: -50\n    windw: 1s\n",
    );
    let status = wait_for(&watcher, "the refusal", |s| s.last_error.is_some());
    wait_until("the refusal's event", || {
        !events(&path, "rules refused").is_empty()
    });
    let event = events(&path, "rules refused").pop().unwrap();
    assert_eq!(event["error"], status.last_error.unwrap().to_string());
    // The misspelled field is found first (the rule is not read further).
    assert_eq!(
        (event["line"].as_str(), event["field"].as_str()),
        ("4", "windw")
    );
    assert_eq!(set_loads(), (before.0, before.1 + 1));
    assert_eq!(file_result(&path), Some(false));

    // A missing file is refused once, not at every look.
    fs::remove_file(&path).unwrap();
    wait_for(&watcher, "the missing file", |s| {
        s.last_error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("missing"))
    });
    wait_until("the missing file's event", || {
        events(&path, "rules refused").len() == 2
    });
    assert_eq!(set_loads(), (before.0, before.1 + 2));

    replace_atomically(&path, &flow("report-watch", 20));
    let status = wait_for(&watcher, "the good file", |s| {
        s.loads == 2 && s.last_error.is_none()
    });
    wait_until("the load's event", || {
        events(&path, "rules loaded").len() == 2
    });
    let event = events(&path, "rules loaded").pop().unwrap();
    assert_eq!(event["version"], status.version.to_string());
    assert_eq!(set_loads(), (before.0 + 1, before.1 + 2));
    assert_eq!(file_result(&path), Some(true));
    assert_eq!(events(&path, "rules refused").len(), 2, "each refusal once");
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn a_symlinked_file_is_followed_through_edits_in_place_and_link_swaps() {
    use std::os::unix::fs::symlink;

    let _serial = serial();
    let (links, real, other) = (
        TempDir::new("links"),
        TempDir::new("real"),
        TempDir::new("other"),
    );
    let target = real.join("rules.yaml");
    fs::write(&target, flow("link-a", 1)).unwrap();
    let path = links.join("rules.yaml");
    symlink(&target, &path).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");
    assert!(!watcher.status().polling);

    // Edited in place where it really is: the link's directory sees nothing.
    fs::write(&target, flow("link-a", 2)).unwrap();
    wait_for(&watcher, "the in-place edit", |s| s.loads == 2);
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("link-a", 2.0)]);

    // The link swapped to a file in a third directory, then that file edited in place.
    let moved = other.join("moved.yaml");
    fs::write(&moved, flow("link-b", 3)).unwrap();
    let tmp = links.join("rules.yaml.tmp");
    symlink(&moved, &tmp).unwrap();
    fs::rename(&tmp, &path).unwrap();
    wait_for(&watcher, "the swapped link", |s| s.loads == 3);
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("link-b", 3.0)]);
    fs::write(&moved, flow("link-b", 4)).unwrap();
    wait_for(&watcher, "the new target's edit", |s| s.loads == 4);
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("link-b", 4.0)]);
    let status = watcher.status();
    assert!(!status.polling, "{status:?}");
    assert_eq!(status.last_error, None);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn a_configmap_flip_is_followed_without_falling_back_to_polling() {
    use std::os::unix::fs::symlink;

    let _serial = serial();
    let dir = TempDir::new("configmap");
    fs::create_dir(dir.join("..v1")).unwrap();
    fs::write(dir.join("..v1/rules.yaml"), flow("cm-a", 1)).unwrap();
    symlink("..v1", dir.join("..data")).unwrap();
    symlink("..data/rules.yaml", dir.join("rules.yaml")).unwrap();
    let watcher = rules::watch_file(dir.join("rules.yaml")).expect("the first load");

    for (n, version) in [(2, "..v2"), (3, "..v3")] {
        let previous = fs::read_link(dir.join("..data")).unwrap();
        fs::create_dir(dir.join(version)).unwrap();
        fs::write(dir.join(version).join("rules.yaml"), flow("cm-a", n)).unwrap();
        symlink(version, dir.join("..data_tmp")).unwrap();
        fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
        fs::remove_dir_all(dir.0.join(previous)).unwrap();
        let status = wait_for(&watcher, "the flipped ConfigMap", |s| {
            s.loads == u64::from(n)
        });
        assert_eq!(
            rules::flow_rules(),
            vec![FlowRule::qps("cm-a", f64::from(n))]
        );
        assert_eq!(status.last_error, None);
    }
    assert!(!watcher.status().polling, "{:?}", watcher.status());
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}
