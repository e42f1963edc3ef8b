//! What docs/rule-sources.md says of a Kubernetes ConfigMap mounted as a volume: the kubelet
//! writes each version into a new hidden directory, points `..data` at it by renaming a new
//! symlink over the old one, and removes the old directory; the rule file is a symlink through
//! `..data`. A bad edit arrives the same way: it is refused with its field and line, the last
//! good rules stay in force, the metric says so; the fixed edit after it is applied and the error
//! clears.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::serial;
use sentinel_runtime::rules::{self, FlowRule, RuleSet, RuleWatcher, WatchStatus};

/// How long the watcher may take to see a flip before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// The mount's directory, removed when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl Mount {
    fn new() -> Mount {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("sentinel-configmap-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&dir).expect("the mount's directory");
        Mount(dir)
    }

    /// The kubelet's update to `version` (the first one makes the layout): a new timestamped
    /// directory, `..data` renamed to point at it, the previous one removed.
    fn publish(&self, version: u32, rules_yaml: &str) {
        let dir = &self.0;
        let new = format!("..2026_11_28_00_00_0{version}.000000001");
        fs::create_dir(dir.join(&new)).expect("the version's directory");
        fs::write(dir.join(&new).join("rules.yaml"), rules_yaml).expect("the rules");
        let old = fs::read_link(dir.join("..data")).ok();
        symlink(&new, dir.join("..data_tmp")).expect("..data_tmp");
        fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("the flip");
        if let Some(old) = old {
            fs::remove_dir_all(dir.join(old)).expect("the old version removed");
        } else {
            symlink("..data/rules.yaml", dir.join("rules.yaml")).expect("the file's link");
        }
    }

    fn file(&self) -> PathBuf {
        self.0.join("rules.yaml")
    }
}

fn doc(threshold: i32) -> String {
    format!("# shop rules\nflow:\n  - resource: configmap-checkout\n    threshold: {threshold}\n")
}

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

fn last_result(file: &Path) -> Option<bool> {
    sentinel_runtime::metrics::rule_files()
        .into_iter()
        .find(|(name, _)| name == file)
        .map(|(_, ok)| ok)
}

#[test]
fn a_bad_configmap_edit_is_refused_with_its_field_and_the_fixed_edit_after_it_applies() {
    let _serial = serial();
    let mount = Mount::new();
    mount.publish(1, &doc(100));
    let watcher = rules::watch_file(mount.file()).expect("the first load");
    let flow = |threshold: f64| vec![FlowRule::qps("configmap-checkout", threshold)];
    assert_eq!(rules::flow_rules(), flow(100.0));

    // `kubectl apply` of a negative threshold: Kubernetes does not read the rules.
    mount.publish(2, &doc(-5));
    let status = wait_for(&watcher, "the bad edit", |s| s.last_error.is_some());
    let err = status.last_error.expect("an error");
    let entry = &err.entries()[0];
    assert_eq!(
        (entry.line, entry.field.as_deref()),
        (Some(4), Some("threshold")),
        "{err}"
    );
    assert_eq!(status.loads, 1);
    assert_eq!(rules::flow_rules(), flow(100.0), "the last good rules stay");
    let file = watcher.path().to_owned();
    assert_eq!(last_result(&file), Some(false));

    // The fix, applied the same way.
    mount.publish(3, &doc(80));
    wait_for(&watcher, "the fixed edit", |s| {
        s.loads == 2 && s.last_error.is_none()
    });
    assert_eq!(rules::flow_rules(), flow(80.0));
    assert_eq!(last_result(&file), Some(true));

    drop(watcher);
    rules::load(RuleSet::new()).expect("clear the rules");
}
