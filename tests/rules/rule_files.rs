//! Rule files (default feature `rule-files`): JSON, YAML, TOML and Sentinel's JSON read into the
//! same rules; what is not supported refused by name, at its field's line; and the
//! watcher through the ways files really change (atomic renames, ConfigMap symlink flips,
//! deletes, partial writes, bad rules), never putting a mix of two sets in force.
//!
//! The tests that load rules share the process's rules: they take `serial()` and name their
//! own resources. Waits poll the watcher's status up to a deadline; none sleeps and hopes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::serial;
use sentinel_runtime::rules::{
    self, AuthorityRule, CircuitBreakerRule, FlowRule, HotspotRule, RuleSet, RuleSetError,
    RuleWatcher, SystemRule, WatchStatus,
};

/// How long a reload may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "sentinel-rule-files-{test}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).expect("create the test's temp dir");
        TempDir(dir)
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

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A set of flow rules named `{prefix}-a`, `-b`, `-c` (sorted, as `rules::flow_rules()`
/// returns them), all with thresholds from `base`, plus a breaker.
fn set_of(prefix: &str, base: f64) -> RuleSet {
    let mut set = RuleSet::new();
    set.flow = vec![
        FlowRule::qps(format!("{prefix}-a"), base),
        FlowRule::qps(format!("{prefix}-b"), base + 1.0).throttle(ms(100)),
        FlowRule::concurrency(format!("{prefix}-c"), base as u32 + 2),
    ];
    set.circuit_breaker =
        vec![CircuitBreakerRule::error_ratio(format!("{prefix}-a"), 0.5).recovery(secs(5))];
    set
}

/// Waits until `done(status)`, checking at every look that the flow rules in force are exactly
/// one of `allowed`: never a mix.
fn wait_for(
    watcher: &RuleWatcher,
    what: &str,
    allowed: &[&RuleSet],
    done: impl Fn(&WatchStatus) -> bool,
) -> WatchStatus {
    let start = Instant::now();
    loop {
        let in_force = rules::flow_rules();
        assert!(
            allowed.iter().any(|set| set.flow == in_force),
            "while waiting for {what}: the flow rules in force are no allowed set: {in_force:?}"
        );
        let status = watcher.status();
        if done(&status) {
            return status;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}; status: {status:?}"
        );
        thread::sleep(ms(5));
    }
}

/// How many of this process's threads are rule watchers (named `sentinel-rule-watcher`, which
/// Linux shortens to 15 bytes), read from /proc; `None` where there is no /proc.
fn watcher_threads() -> Option<usize> {
    let tasks = fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(|t| fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| {
                let comm = comm.trim_end();
                !comm.is_empty() && "sentinel-rule-watcher".starts_with(comm)
            })
            .count(),
    )
}

/// Writes `text` to `path` the way editors do: a temporary file, renamed over the old one.
fn replace_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    fs::write(&tmp, text).expect("write the temporary file");
    fs::rename(&tmp, path).expect("rename it over the rule file");
}

fn only_entry(err: &RuleSetError) -> &rules::RuleSetErrorEntry {
    assert_eq!(err.entries().len(), 1, "{err}");
    &err.entries()[0]
}

// ----- reading ------------------------------------------------------------------------------------

#[test]
fn json_yaml_and_toml_read_the_same_rules() {
    let mut expected = RuleSet::new();
    expected.flow = vec![
        FlowRule::qps("fmt-orders", 100.0),
        FlowRule::qps("fmt-search", 200.0).warm_up(secs(10), 3.0),
        FlowRule::qps("fmt-mailer", 20.0).throttle(ms(500)),
        FlowRule::qps("fmt-report", 10.0)
            .window(secs(60), 60)
            .strict(true),
        FlowRule::concurrency("fmt-db", 8),
        FlowRule::qps("fmt-reads", 50.0).relate("fmt-writes"),
    ];
    expected.circuit_breaker = vec![
        CircuitBreakerRule::error_ratio("fmt-payments", 0.5)
            .min_requests(10)
            .window(secs(10), 10)
            .recovery(secs(5))
            .probes(3),
        CircuitBreakerRule::slow_request_ratio("fmt-inventory", ms(200), 0.6).recovery(secs(90)),
        CircuitBreakerRule::error_count("fmt-ledger", 5).recovery(secs(3_600)),
    ];

    let json = r#"{
      /* Every kind of rule, with durations in every spelling. */
      "flow": [
        { "resource": "fmt-orders", "threshold": 100 },
        { "resource": "fmt-search", "threshold": 200, "warm_up": { "period": "10s" } },
        { "resource": "fmt-mailer", "threshold": 20, "max_wait": 500 }, // integer ms
        { "resource": "fmt-report", "threshold": 10, "window": "1m", "sample_count": 60,
          "strict": true },
        { "resource": "fmt-db", "metric": "concurrency", "threshold": 8 },
        { "resource": "fmt-reads", "threshold": 50, "relate": "fmt-writes" }
      ],
      "circuit_breaker": [
        { "resource": "fmt-payments", "strategy": { "type": "error_ratio", "threshold": 0.5 },
          "min_requests": 10, "window": "10s", "recovery": "5s", "probes": 3 },
        { "resource": "fmt-inventory",
          "strategy": { "type": "slow_request_ratio", "max_rt": "200ms", "threshold": 0.6 },
          "recovery": "1m30s" },
        { "resource": "fmt-ledger", "strategy": { "type": "error_count", "threshold": 5 },
          "recovery": "1h" }
      ]
    }"#;
    let yaml = r#"
# Every kind of rule.
flow:
  - { resource: fmt-orders, threshold: 100 }
  - resource: fmt-search
    threshold: 200
    warm_up:
      period: 10s
      cold_factor: 3
  - { resource: fmt-mailer, threshold: 20, max_wait: 0.5s }
  - resource: fmt-report
    threshold: 10
    window: 60s
    sample_count: 60
    strict: true
  - { resource: fmt-db, metric: concurrency, threshold: 8 }
  - { resource: fmt-reads, threshold: 50, relate: fmt-writes }
circuit_breaker:
  - resource: fmt-payments
    strategy: { type: error_ratio, threshold: 0.5 }
    min_requests: 10
    window: 10000
    recovery: 5s
    probes: 3
  - resource: fmt-inventory
    strategy: { type: slow_request_ratio, max_rt: 200ms, threshold: 0.6 }
    recovery: 90s
  - resource: fmt-ledger
    strategy: { type: error_count, threshold: 5 }
    recovery: 60m
"#;
    let toml = r#"
# Every kind of rule.
[[flow]]
resource = "fmt-orders"
threshold = 100

[[flow]]
resource = "fmt-search"
threshold = 200
warm_up = { period = "10s" }

[[flow]]
resource = "fmt-mailer"
threshold = 20
max_wait = "500ms"

[[flow]]
resource = "fmt-report"
threshold = 10
window = "1m"
sample_count = 60
strict = true

[[flow]]
resource = "fmt-db"
metric = "concurrency"
threshold = 8

[[flow]]
resource = "fmt-reads"
threshold = 50
relate = "fmt-writes"

[[circuit_breaker]]
resource = "fmt-payments"
strategy = { type = "error_ratio", threshold = 0.5 }
min_requests = 10
window = "10s"
recovery = "5s"
probes = 3

[[circuit_breaker]]
resource = "fmt-inventory"
recovery = "90s"
[circuit_breaker.strategy]
type = "slow_request_ratio"
max_rt = "200ms"
threshold = 0.6

[[circuit_breaker]]
resource = "fmt-ledger"
strategy = { type = "error_count", threshold = 5 }
recovery = "1h"
"#;
    assert_eq!(RuleSet::from_json(json), Ok(expected.clone()));
    assert_eq!(RuleSet::from_yaml(yaml), Ok(expected.clone()));
    assert_eq!(RuleSet::from_toml(toml), Ok(expected.clone()));

    // from_path takes the format from the extension, and what it writes reads back.
    let dir = TempDir::new("formats");
    for (name, text) in [
        ("rules.json", json.to_owned()),
        ("rules.yml", yaml.to_owned()),
        ("RULES.TOML", toml.to_owned()),
        ("out.json", expected.to_json().unwrap()),
        ("out.yaml", expected.to_yaml().unwrap()),
        ("out.toml", expected.to_toml().unwrap()),
    ] {
        fs::write(dir.join(name), text).unwrap();
        assert_eq!(
            RuleSet::from_path(dir.join(name)),
            Ok(expected.clone()),
            "{name}"
        );
    }
    fs::write(dir.join("rules.txt"), json).unwrap();
    let err = RuleSet::from_path(dir.join("rules.txt")).unwrap_err();
    assert!(
        err.to_string().contains(".json, .yaml, .yml or .toml"),
        "{err}"
    );
    assert_eq!(err.path(), Some(dir.join("rules.txt").as_path()));
    let err = RuleSet::from_path(dir.join("missing.yaml")).unwrap_err();
    assert!(err.to_string().contains("cannot read the file"), "{err}");
}

/// Sentinel's example files, as its demo ships them (licence header included), under their kinds.
const SENTINEL_FILE: &str = r#"/**
 * SPDX-License-Identifier: Apache-2.0
 *
 * Copyright 1999-2019 Alibaba Group Holding Ltd.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
{
  // FlowRule.json
  "flow": [
    {
      "resource": "sentinel-abc",
      "controlBehavior": 0,
      "count": 20.0,
      "grade": 1,
      "limitApp": "default",
      "strategy": 0
    },
    {
      "resource": "sentinel-abc1",
      "controlBehavior": 0,
      "count": 20.0,
      "grade": 1,
      "limitApp": "default",
      "strategy": 0
    },
    {
      "resource": "sentinel-warm",
      "limitApp": "default",
      "grade": 1,
      "count": 100.0,
      "strategy": 0,
      "refResource": null,
      "controlBehavior": 3,
      "warmUpPeriodSec": 20,
      "maxQueueingTimeMs": 800,
      "clusterMode": false,
      "clusterConfig": null
    },
    { "resource": "sentinel-threads", "count": 4, "grade": 0 },
    { "resource": "sentinel-reads", "count": 50, "strategy": 1, "refResource": "sentinel-writes" }
  ],
  // DegradeRule.json
  "degrade": [
    {
      "resource": "sentinel-abc0",
      "count": 20.0,
      "grade": 0,
      "passCount": 0,
      "timeWindow": 10
    },
    {
      "resource": "sentinel-abc1",
      "count": 15.0,
      "grade": 0,
      "passCount": 0,
      "timeWindow": 10
    },
    {
      "resource": "sentinel-errors",
      "count": 0.25,
      "grade": 1,
      "timeWindow": 30,
      "minRequestAmount": 20,
      "statIntervalMs": 60000,
      "slowRatioThreshold": 1.0,
      "limitApp": "default"
    },
    { "resource": "sentinel-errors", "count": 100, "grade": 2, "timeWindow": 60 },
    { "resource": "sentinel-slow", "count": 500, "slowRatioThreshold": 0.3, "timeWindow": 5 }
  ]
}
"#;

#[test]
fn sentinel_json_files_are_read_as_they_are() {
    let set = RuleSet::from_json(SENTINEL_FILE).expect("Sentinel's example reads");
    assert_eq!(
        set.flow,
        vec![
            FlowRule::qps("sentinel-abc", 20.0),
            FlowRule::qps("sentinel-abc1", 20.0),
            FlowRule::qps("sentinel-warm", 100.0)
                .warm_up(secs(20), 3.0)
                .throttle(ms(800)),
            FlowRule::concurrency("sentinel-threads", 4),
            FlowRule::qps("sentinel-reads", 50.0).relate("sentinel-writes"),
        ]
    );
    let one_bucket = |r: CircuitBreakerRule, window: Duration| r.window(window, 1);
    assert_eq!(
        set.circuit_breaker,
        vec![
            one_bucket(
                CircuitBreakerRule::slow_request_ratio("sentinel-abc0", ms(20), 1.0)
                    .recovery(secs(10)),
                secs(1)
            ),
            one_bucket(
                CircuitBreakerRule::slow_request_ratio("sentinel-abc1", ms(15), 1.0)
                    .recovery(secs(10)),
                secs(1)
            ),
            one_bucket(
                // Sentinel opens above `count`; ours at the threshold: the least value above.
                CircuitBreakerRule::error_ratio("sentinel-errors", 0.25_f64.next_up())
                    .recovery(secs(30))
                    .min_requests(20),
                secs(60)
            ),
            one_bucket(
                CircuitBreakerRule::error_count("sentinel-errors", 101).recovery(secs(60)),
                secs(1)
            ),
            one_bucket(
                CircuitBreakerRule::slow_request_ratio("sentinel-slow", ms(500), 0.3_f64.next_up())
                    .recovery(secs(5)),
                secs(1)
            ),
        ]
    );
    // Both namings in one file, rule by rule; Sentinel's kind name in YAML too.
    let mixed = RuleSet::from_yaml(
        "flow:\n  - { resource: mix-a, count: 5 }\n  - { resource: mix-b, threshold: 5 }\n\
         degrade:\n  - { resource: mix-a, count: 3, grade: 2, timeWindow: 1 }\n",
    )
    .unwrap();
    assert_eq!(
        mixed.flow,
        vec![FlowRule::qps("mix-a", 5.0), FlowRule::qps("mix-b", 5.0)]
    );
    assert_eq!(
        mixed.circuit_breaker,
        vec![CircuitBreakerRule::error_count("mix-a", 4)
            .recovery(secs(1))
            .window(secs(1), 1)]
    );
}

#[test]
fn every_unsupported_field_is_refused_by_name() {
    // (kind, rule, the field named, a word the message has)
    let cases = [
        (
            "flow",
            r#"{"resource": "u", "count": 1, "strategy": 2}"#,
            "strategy",
            "chain",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "grade": 0, "limitApp": "app-a"}"#,
            "limitApp",
            "per-origin concurrency limits are not supported",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "clusterMode": true}"#,
            "clusterMode",
            "cluster",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "clusterConfig": {"flowId": 1}}"#,
            "clusterConfig",
            "cluster",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "grade": 0, "controlBehavior": 2}"#,
            "controlBehavior",
            "QPS",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "controlBehavior": 4}"#,
            "controlBehavior",
            "4",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "grade": 2}"#,
            "grade",
            "QPS",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "strategy": 1}"#,
            "refResource",
            "relate",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "warmUpPeriodSec": 30}"#,
            "warmUpPeriodSec",
            "warm up",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "controlBehavior": 1, "warmUpPeriodSec": 0}"#,
            "warmUpPeriodSec",
            "seconds",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "id": 12}"#,
            "id",
            "not supported",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "regex": true}"#,
            "regex",
            "not supported",
        ),
        (
            "flow",
            r#"{"resource": "u", "count": 1, "threshold": 1}"#,
            "threshold",
            "Sentinel",
        ),
        (
            "flow",
            r#"{"resource": "u", "threshold": 1, "thresold": 2}"#,
            "thresold",
            "not supported",
        ),
        (
            "flow",
            r#"{"resource": "u", "threshold": 1, "metric": "qpm"}"#,
            "metric",
            "qpm",
        ),
        (
            "flow",
            r#"{"resource": "u", "threshold": 1, "window": "5"}"#,
            "window",
            "unit",
        ),
        (
            "flow",
            r#"{"resource": "u", "threshold": 1, "warm_up": {"period": "1s", "factor": 3}}"#,
            "warm_up.factor",
            "not supported",
        ),
        (
            "degrade",
            r#"{"resource": "u", "count": 1, "grade": 1, "timeWindow": 1, "limitApp": "b"}"#,
            "limitApp",
            "origin",
        ),
        (
            "degrade",
            r#"{"resource": "u", "count": 1, "grade": 3, "timeWindow": 1}"#,
            "grade",
            "3",
        ),
        (
            "degrade",
            r#"{"resource": "u", "count": 0.5, "grade": 1}"#,
            "timeWindow",
            "required",
        ),
        (
            "degrade",
            r#"{"resource": "u", "count": 1, "grade": 1, "timeWindow": 1, "slowRatioThreshold": 0.5}"#,
            "slowRatioThreshold",
            "grade 0",
        ),
        (
            "degrade",
            r#"{"resource": "u", "count": 1, "timeWindow": 1, "statIntervalMs": 0}"#,
            "statIntervalMs",
            "milliseconds",
        ),
        (
            "circuit_breaker",
            r#"{"resource": "u", "strategy": {"type": "error_count", "threshold": 1}}"#,
            "recovery",
            "required",
        ),
        (
            "circuit_breaker",
            r#"{"resource": "u", "strategy": {"type": "error_count", "threshold": 1, "max_rt": "1s"}, "recovery": "1s"}"#,
            "strategy.max_rt",
            "not supported",
        ),
    ];
    for (kind, rule, field, word) in cases {
        let text = format!("{{\"{kind}\": [\n  {rule}\n]}}");
        let err = RuleSet::from_json(&text).expect_err(rule);
        let entry = only_entry(&err);
        assert_eq!(entry.field.as_deref(), Some(field), "{rule}: {err}");
        assert_eq!(entry.resource.as_deref(), Some("u"), "{rule}: {err}");
        assert_eq!(entry.line, Some(2), "{rule}: {err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("`{field}`")) && text.contains(word),
            "{rule}: {text}"
        );
    }
    // An unknown kind, and a Sentinel array that does not say its kind.
    let err = RuleSet::from_yaml("flow: []\nbogus_kind: []\n").unwrap_err();
    assert!(err.to_string().contains("bogus_kind"), "{err}");
    assert_eq!(only_entry(&err).line, Some(2));
    let err = RuleSet::from_json("[{\"resource\": \"u\", \"count\": 1}]").unwrap_err();
    assert!(err.to_string().contains("under `flow`"), "{err}");
}

#[test]
fn a_bad_rule_among_good_ones_refuses_the_set_naming_resource_field_and_line() {
    let yaml = "\
flow:
  - resource: line-ok
    threshold: 10
  - resource: line-negative   # line 4
    threshold: -5
  - resource: line-ok-2
    threshold: 1
circuit_breaker:
  - resource: line-breaker    # line 9
    strategy: { type: error_ratio, threshold: 1.5 }
    recovery: 1s
degrade:
";
    // `circuit_breaker` and its alias `degrade` together are one field given twice.
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    assert!(err.to_string().contains("degrade"), "{err}");

    let yaml = yaml.trim_end_matches("degrade:\n");
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    let found: Vec<String> = err
        .entries()
        .iter()
        .map(|e| format!("{:?} {:?} {:?} {:?}", e.line, e.kind, e.resource, e.field))
        .collect();
    assert_eq!(
        found,
        [
            r#"Some(5) Some("flow") Some("line-negative") Some("threshold")"#,
            r#"Some(10) Some("circuit_breaker") Some("line-breaker") Some("strategy.threshold")"#,
        ]
    );
    assert_eq!(
        err.to_string(),
        "invalid rule set (2 problems):\n  \
         line 5, column 5: flow[1] (resource `line-negative`, rule at line 4): field `threshold` \
         must be >= 0, got -5\n  \
         line 10, column 36: circuit_breaker[0] (resource `line-breaker`, rule at line 9): field \
         `strategy.threshold` must be a ratio in 0..=1, got 1.5"
    );

    // Sentinel's names in the error for a rule written with them; TOML lines too.
    let toml = "[[flow]]\nresource = \"t-ok\"\nthreshold = 1\n\n[[flow]]\nresource = \"t-bad\"\n\
                count = 5\ncontrolBehavior = 1\nwarmUpPeriodSec = 0\n";
    let err = RuleSet::from_toml(toml).unwrap_err();
    let entry = only_entry(&err);
    assert_eq!(
        (entry.line, entry.field.as_deref()),
        (Some(9), Some("warmUpPeriodSec"))
    );

    // Loading the file changes nothing.
    let _serial = serial();
    let dir = TempDir::new("bad-rule");
    let mut good = RuleSet::new();
    good.flow = vec![FlowRule::qps("line-ok", 10.0)];
    rules::load(good.clone()).unwrap();
    let path = dir.join("rules.yaml");
    fs::write(&path, yaml).unwrap();
    let err = rules::load_file(&path).unwrap_err();
    assert_eq!(err.path(), Some(path.as_path()));
    assert_eq!(err.entries().len(), 2);
    assert_eq!(rules::current(), good);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn syntax_errors_carry_their_own_line_and_column() {
    let json = "{\n  \"flow\": [\n    { \"resource\": \"s\", \"threshold\": 1, }\n  ]\n}";
    let err = RuleSet::from_json(json).unwrap_err();
    assert_eq!(only_entry(&err).line, Some(3), "{err}");
    assert!(only_entry(&err).column.is_some(), "{err}");

    let yaml = "flow:\n  - resource: s\n    threshold: [1\n";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    assert!(matches!(only_entry(&err).line, Some(3) | Some(4)), "{err}");

    let toml = "[[flow]]\nresource = \"s\"\nthreshold = = 1\n";
    let err = RuleSet::from_toml(toml).unwrap_err();
    assert_eq!(only_entry(&err).line, Some(3), "{err}");

    let err = RuleSet::from_json("/* licence\n\n{\"flow\": []}").unwrap_err();
    assert_eq!(only_entry(&err).line, Some(1), "{err}");
}

#[test]
fn load_replaces_every_kind_at_once_and_current_reads_it_back() {
    let _serial = serial();
    let set = set_of("load-all", 5.0);
    rules::load(set.clone()).unwrap();
    assert_eq!(rules::current(), set);

    let mut bad = set_of("load-all-next", 7.0);
    bad.circuit_breaker
        .push(CircuitBreakerRule::error_count("load-all-next-x", 0).recovery(secs(1)));
    bad.flow.push(FlowRule::qps("load-all-next-y", f64::NAN));
    let err = rules::load(bad).unwrap_err();
    let found: Vec<(Option<&str>, Option<usize>)> =
        err.entries().iter().map(|e| (e.kind, e.index)).collect();
    assert_eq!(
        found,
        vec![(Some("flow"), Some(3)), (Some("circuit_breaker"), Some(1))]
    );
    assert_eq!(rules::current(), set, "a refused set changes nothing");

    rules::load(RuleSet::new()).unwrap();
    assert_eq!(rules::current(), RuleSet::new());
}

// ----- hotspot rules ---------------------------------------------------------------------------

#[test]
fn hotspot_rules_read_the_same_in_every_format_and_in_sentinel_names() {
    let expected = vec![
        HotspotRule::qps("hot-api", 0, 10.0)
            .burst(5)
            .exception("vip-7", 100.0),
        HotspotRule::qps("hot-login", 1, 5.0)
            .window(secs(60))
            .throttle(ms(200))
            .capacity(50_000),
        HotspotRule::concurrency("hot-reports", 2, 2),
    ];
    let yaml = r#"
hotspot:
  - resource: hot-api
    param_index: 0
    threshold: 10
    burst: 5
    exceptions:
      - { value: vip-7, threshold: 100 }
  - resource: hot-login
    param_index: 1
    threshold: 5
    window: 1m
    max_wait: 200ms
    capacity: 50000
  - { resource: hot-reports, param_index: 2, metric: concurrency, threshold: 2 }
"#;
    let json = r#"{"hotspot": [
  { "resource": "hot-api", "param_index": 0, "threshold": 10, "burst": 5,
    "exceptions": [{ "value": "vip-7", "threshold": 100 }] },
  { "resource": "hot-login", "param_index": 1, "threshold": 5, "window": "1m",
    "max_wait": 200, "capacity": 50000 },
  { "resource": "hot-reports", "param_index": 2, "metric": "concurrency", "threshold": 2 }
]}"#;
    let toml = r#"
[[hotspot]]
resource = "hot-api"
param_index = 0
threshold = 10
burst = 5
exceptions = [{ value = "vip-7", threshold = 100 }]

[[hotspot]]
resource = "hot-login"
param_index = 1
threshold = 5
window = "1m"
max_wait = "200ms"
capacity = 50000

[[hotspot]]
resource = "hot-reports"
param_index = 2
metric = "concurrency"
threshold = 2
"#;
    let sentinel = r#"{"paramFlow": [
  { "resource": "hot-api", "paramIdx": 0, "count": 10, "grade": 1, "durationInSec": 1,
    "burstCount": 5, "controlBehavior": 0, "maxQueueingTimeMs": 0, "limitApp": "default",
    "clusterMode": false, "clusterConfig": null,
    "paramFlowItemList": [{ "object": "vip-7", "count": 100, "classType": "java.lang.String" }] },
  { "resource": "hot-login", "paramIdx": 1, "count": 5, "durationInSec": 60,
    "controlBehavior": 2, "maxQueueingTimeMs": 200 },
  { "resource": "hot-reports", "paramIdx": 2, "count": 2, "grade": 0 }
]}"#;
    assert_eq!(RuleSet::from_yaml(yaml).unwrap().hotspot, expected);
    assert_eq!(RuleSet::from_json(json).unwrap().hotspot, expected);
    assert_eq!(RuleSet::from_toml(toml).unwrap().hotspot, expected);
    let mut from_sentinel = RuleSet::from_json(sentinel).unwrap().hotspot;
    // Sentinel's rate limiter paces from a value's first call: a threshold per millisecond,
    // waiting less than maxQueueingTimeMs.
    assert_eq!(
        from_sentinel[1],
        HotspotRule::qps("hot-login", 1, 5.0 / 60_000.0)
            .window(ms(1))
            .throttle(ms(200) - Duration::from_nanos(1))
    );
    // Sentinel has no capacity: the default.
    from_sentinel[1] = expected[1].clone();
    assert_eq!(from_sentinel, expected);

    // Rules round-trip, with their exceptions too (by text where it is known, else by hash:
    // readable by this process).
    let mut set = RuleSet::new();
    set.hotspot = expected[1..].to_vec();
    assert_eq!(RuleSet::from_yaml(&set.to_yaml().unwrap()), Ok(set.clone()));
    assert_eq!(RuleSet::from_toml(&set.to_toml().unwrap()), Ok(set.clone()));
    assert_eq!(RuleSet::from_json(&set.to_json().unwrap()), Ok(set.clone()));
    set.hotspot = expected;
    set.hotspot[0] = set.hotspot[0].clone().exception_str("gold", 7.0);
    for (text, read) in [
        (set.to_yaml().unwrap(), RuleSet::from_yaml as fn(&str) -> _),
        (set.to_toml().unwrap(), RuleSet::from_toml),
        (set.to_json().unwrap(), RuleSet::from_json),
    ] {
        assert!(text.contains("gold"), "{text}");
        let back = read(&text).unwrap();
        assert_eq!(back, set);
        assert_eq!(
            back.hotspot[0].exceptions.last().unwrap().value.as_deref(),
            Some("gold")
        );
    }
}

#[test]
fn unsupported_hotspot_fields_and_values_are_refused_by_name() {
    let field = |json: &str| -> String {
        let err = RuleSet::from_json(json).expect_err(json);
        let entry = only_entry(&err);
        assert_eq!(entry.kind, Some("hotspot"), "{json}");
        entry.field.clone().unwrap_or_default()
    };
    let ours = |rule: &str| format!(r#"{{"hotspot": [{rule}]}}"#);
    let theirs = |rule: &str| format!(r#"{{"paramFlow": [{rule}]}}"#);
    for (json, expected) in [
        (ours(r#"{"resource": "a", "threshold": 1}"#), "param_index"),
        (
            ours(r#"{"resource": "a", "param_index": 8, "threshold": 1}"#),
            "param_index",
        ),
        (
            ours(r#"{"resource": "a", "param_index": 0, "threshold": -1}"#),
            "threshold",
        ),
        (
            ours(r#"{"resource": "a", "param_index": 0, "threshold": 1, "capacity": 0}"#),
            "capacity",
        ),
        (
            ours(r#"{"resource": "a", "param_index": 0, "threshold": 1, "window": "25h"}"#),
            "window",
        ),
        (
            ours(r#"{"resource": "a", "param_index": 0, "threshold": 1, "max_wait": "2h"}"#),
            "max_wait",
        ),
        (
            ours(
                r#"{"resource": "a", "param_index": 0, "threshold": 1, "metric": "concurrency",
                    "burst": 2}"#,
            ),
            "burst",
        ),
        (
            ours(
                r#"{"resource": "a", "param_index": 0, "threshold": 1,
                    "exceptions": [{"value": 42, "threshold": 1}]}"#,
            ),
            "exceptions[0].value",
        ),
        (
            ours(r#"{"resource": "a", "param_index": 0, "threshold": 1, "metric": "rt"}"#),
            "metric",
        ),
        (theirs(r#"{"resource": "a", "count": 1}"#), "paramIdx"),
        (
            theirs(r#"{"resource": "a", "paramIdx": -1, "count": 1}"#),
            "paramIdx",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 9, "count": 1}"#),
            "paramIdx",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "grade": 2}"#),
            "grade",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "controlBehavior": 1}"#),
            "controlBehavior",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "maxQueueingTimeMs": 10}"#),
            "maxQueueingTimeMs",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "grade": 0, "burstCount": 3}"#),
            "burstCount",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "clusterMode": true}"#),
            "clusterMode",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "limitApp": "app-a"}"#),
            "limitApp",
        ),
        (
            theirs(
                r#"{"resource": "a", "paramIdx": 0, "count": 1,
                    "paramFlowItemList": [{"object": "7", "count": 2, "classType": "int"}]}"#,
            ),
            "paramFlowItemList[0].classType",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "durationInSec": 0}"#),
            "durationInSec",
        ),
        (
            theirs(r#"{"resource": "a", "paramIdx": 0, "count": 1, "threshold": 1}"#),
            "threshold",
        ),
    ] {
        assert_eq!(field(&json), expected, "{json}");
    }
    // More than 8 hotspot rules on one resource: the ninth is named.
    let many: Vec<String> = (0..9)
        .map(|i| {
            format!(
                r#"{{"resource": "a", "param_index": {}, "threshold": 1}}"#,
                i % 8
            )
        })
        .collect();
    let err = RuleSet::from_json(&ours(&many.join(","))).unwrap_err();
    let entry = only_entry(&err);
    assert_eq!(
        (entry.index, entry.field.as_deref()),
        (Some(8), Some("resource"))
    );
    assert_eq!(entry.line, Some(1));
}

#[test]
fn loading_a_set_carries_hotspot_rules_and_exceptions_match_string_params() {
    use sentinel_runtime::{BlockKind, EntryBuilder};
    let _serial = serial();
    let _clock = sentinel_runtime::clock::MockClock::install();
    let set = RuleSet::from_yaml(
        "hotspot:\n  - resource: files-hot\n    param_index: 0\n    threshold: 1\n    \
         exceptions: [{ value: vip, threshold: 3 }]\n",
    )
    .unwrap();
    rules::load(set.clone()).unwrap();
    assert_eq!(rules::current(), set);
    assert_eq!(rules::hotspot_rules(), set.hotspot);
    let passed = |user: &dyn Fn() -> Result<
        sentinel_runtime::Entry,
        sentinel_runtime::BlockError,
    >| { (0..10).filter(|_| user().is_ok()).count() };
    assert_eq!(
        passed(&|| EntryBuilder::new("files-hot").param("ann").enter()),
        1
    );
    assert_eq!(
        passed(&|| EntryBuilder::new("files-hot").param("vip").enter()),
        3
    );
    let vip = String::from("vip");
    assert_eq!(
        passed(&|| EntryBuilder::new("files-hot").param(&vip).enter()),
        0
    );
    assert_eq!(
        EntryBuilder::new("files-hot")
            .param("bob")
            .enter()
            .map(drop),
        Ok(())
    );
    assert_eq!(
        EntryBuilder::new("files-hot")
            .param("bob")
            .enter()
            .unwrap_err()
            .kind(),
        BlockKind::HotParam
    );

    // A bad hotspot rule refuses the whole set; the rules in force stay.
    let mut bad = set.clone();
    bad.flow.push(FlowRule::qps("files-hot-flow", 1.0));
    bad.hotspot
        .push(HotspotRule::qps("files-hot", 0, 1.0).capacity(0));
    let err = rules::load(bad).unwrap_err();
    assert_eq!(only_entry(&err).kind, Some("hotspot"));
    assert_eq!(rules::current(), set);

    rules::load(RuleSet::new()).unwrap();
    assert_eq!(rules::current(), RuleSet::new());
    assert!(rules::hotspot_rules().is_empty());
}

// ----- system and authority rules ------------------------------------------------------------

/// The rule set the three files of `system_and_authority_rules_load_from_every_format` hold.
/// Authority rules by resource name, as `rules::current()` returns them.
fn kinds_expected() -> RuleSet {
    let mut set = RuleSet::new();
    set.flow = vec![FlowRule::qps("kinds-orders", 100.0)];
    set.system = vec![
        SystemRule::new().cpu_usage(0.8).avg_rt(ms(250)),
        SystemRule::new().concurrency(500).qps(2000.0),
        SystemRule::new().load_per_core(1.5),
    ];
    set.authority = vec![
        AuthorityRule::allow("kinds-admin", ["ops", "billing"]),
        AuthorityRule::deny("kinds-search", ["crawler"]),
        AuthorityRule::allow("kinds-status", ["ops"]).allow_missing_origin(true),
    ];
    set
}

const KINDS_JSON: &str = r#"{
  // Both new kinds, with our names.
  "flow": [{ "resource": "kinds-orders", "threshold": 100 }],
  "system": [
    { "cpu_usage": 0.8, "avg_rt": "250ms" },
    { "concurrency": 500, "qps": 2000 },
    /* a whole machine would be load_per_core times its cores */
    { "load_per_core": 1.5 }
  ],
  "authority": [
    { "resource": "kinds-admin", "strategy": "allow", "origins": ["ops", " billing "] },
    { "resource": "kinds-search", "strategy": "deny", "origins": ["crawler"] },
    { "resource": "kinds-status", "strategy": "allow", "origins": ["ops"], "allow_missing": true }
  ]
}"#;

const KINDS_YAML: &str = r#"
# Both new kinds, with our names.
flow:
  - { resource: kinds-orders, threshold: 100 }
system:
  - cpu_usage: 0.8
    avg_rt: 250          # integer milliseconds
  - { concurrency: 500, qps: 2000 }
  - load_per_core: 1.5
authority:
  - resource: kinds-admin
    strategy: allow
    origins: [ops, " billing "]
  - { resource: kinds-search, strategy: deny, origins: [crawler] }
  - { resource: kinds-status, strategy: allow, origins: [ops], allow_missing: true }
"#;

const KINDS_TOML: &str = r#"
# Both new kinds, with our names.
[[flow]]
resource = "kinds-orders"
threshold = 100

[[system]]
cpu_usage = 0.8
avg_rt = "250ms"

[[system]]
concurrency = 500
qps = 2000

[[system]]
load_per_core = 1.5

[[authority]]
resource = "kinds-admin"
strategy = "allow"
origins = ["ops", " billing "]

[[authority]]
resource = "kinds-search"
strategy = "deny"
origins = ["crawler"]

[[authority]]
resource = "kinds-status"
strategy = "allow"
origins = ["ops"]
allow_missing = true
"#;

#[test]
fn system_and_authority_rules_load_from_every_format() {
    use sentinel_runtime::{BlockKind, EntryBuilder};
    let _serial = serial();
    let _clock = sentinel_runtime::clock::MockClock::install();
    let dir = TempDir::new("kinds-formats");
    let expected = kinds_expected();
    for (name, text) in [
        ("rules.json", KINDS_JSON),
        ("rules.yaml", KINDS_YAML),
        ("rules.toml", KINDS_TOML),
    ] {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        assert_eq!(RuleSet::from_path(&path), Ok(expected.clone()), "{name}");
        rules::load(RuleSet::new()).unwrap();
        rules::load_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(rules::current(), expected, "{name}");
        assert_eq!(rules::system_rules(), expected.system, "{name}");
        assert_eq!(rules::authority_rules(), expected.authority, "{name}");

        // The origin written " billing " is trimmed: a call from `billing` passes.
        let admin = |origin: &str| EntryBuilder::new("kinds-admin").origin(origin).enter();
        assert!(admin("billing").is_ok(), "{name}");
        assert!(admin("ops").is_ok(), "{name}");
        assert_eq!(
            admin("guest").unwrap_err().kind(),
            BlockKind::Authority,
            "{name}"
        );
        assert_eq!(
            EntryBuilder::new("kinds-admin").enter().unwrap_err().kind(),
            BlockKind::Authority,
            "{name}: a missing origin is denied by an allow-list"
        );
        assert!(
            EntryBuilder::new("kinds-status").enter().is_ok(),
            "{name}: allow_missing"
        );
        assert_eq!(
            EntryBuilder::new("kinds-search")
                .origin("crawler")
                .enter()
                .unwrap_err()
                .kind(),
            BlockKind::Authority,
            "{name}"
        );

        // And written back in every format, read the same.
        assert_eq!(
            RuleSet::from_json(&expected.to_json().unwrap()),
            Ok(expected.clone())
        );
        assert_eq!(
            RuleSet::from_yaml(&expected.to_yaml().unwrap()),
            Ok(expected.clone())
        );
        assert_eq!(
            RuleSet::from_toml(&expected.to_toml().unwrap()),
            Ok(expected.clone())
        );
    }
    rules::load(RuleSet::new()).unwrap();
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(rules::current(), RuleSet::new());
}

/// Sentinel's `SystemRule.json` and `AuthorityRule.json` arrays, as Sentinel writes them, under
/// a licence header.
const SENTINEL_KINDS: &str = r#"/*
 * Copyright 1999-2018 Alibaba Group Holding Ltd.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 */
{
  "system": [
    { "highestSystemLoad": -1, "highestCpuUsage": 0.9, "qps": -1, "avgRt": 100, "maxThread": 10 },
    { "resource": null, "limitApp": "default", "highestSystemLoad": 8.0,
      "highestCpuUsage": -1.0, "qps": 300, "avgRt": -1, "maxThread": -1 },
    { "highestSystemLoad": -1, "highestCpuUsage": -1, "qps": 0, "avgRt": -1, "maxThread": -1 }
  ],
  "authority": [
    { "resource": "sentinel-admin", "limitApp": "a, b", "strategy": 0 },
    { "resource": "sentinel-report", "limitApp": "c" },
    { "resource": "sentinel-search", "limitApp": "crawler,bot", "strategy": "Black" },
    { "resource": "sentinel-search-2", "limitApp": " spider ", "strategy": "white" }
  ]
}
"#;

#[test]
fn sentinel_system_and_authority_rules_are_read_as_they_are() {
    use sentinel_runtime::{BlockKind, EntryBuilder};
    let set = RuleSet::from_json(SENTINEL_KINDS).expect("Sentinel's rules read");
    // Sentinel's highestSystemLoad is the whole machine's; ours is per core.
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    assert_eq!(
        set.system,
        vec![
            SystemRule::new()
                .cpu_usage(0.9)
                .avg_rt(ms(100))
                // Sentinel's maxThread 10 blocks above 10 inside: a limit of 11 here.
                .concurrency(11),
            SystemRule::new().load_per_core(8.0 / cores).qps(300.0),
            SystemRule::new().qps(0.0),
        ],
        "-1 (any negative value) is unset"
    );
    assert_eq!(
        set.authority,
        vec![
            AuthorityRule::allow("sentinel-admin", ["a", "b"]),
            AuthorityRule::allow("sentinel-report", ["c"]),
            AuthorityRule::deny("sentinel-search", ["crawler", "bot"]),
            AuthorityRule::allow("sentinel-search-2", ["spider"]),
        ]
    );
    assert!(
        set.authority.iter().all(|r| !r.allow_missing),
        "Sentinel's names keep our semantics: no allow_missing"
    );

    // Loaded from a file: `"a, b"` with strategy 0 lets `b` through, and nobody else.
    let _serial = serial();
    let clock = sentinel_runtime::clock::MockClock::install();
    clock.advance(secs(1));
    let dir = TempDir::new("sentinel-kinds");
    let path = dir.join("rules.json");
    fs::write(&path, SENTINEL_KINDS).unwrap();
    rules::load_file(&path).unwrap();
    assert_eq!(rules::system_rules(), set.system);
    let admin = |origin: Option<&str>| {
        let builder = EntryBuilder::new("sentinel-admin");
        match origin {
            Some(origin) => builder.origin(origin).enter(),
            None => builder.enter(),
        }
    };
    assert!(admin(Some("a")).is_ok());
    assert!(admin(Some("b")).is_ok(), "`b` of \"a, b\" matches");
    assert_eq!(admin(Some("c")).unwrap_err().kind(), BlockKind::Authority);
    assert_eq!(
        admin(None).unwrap_err().kind(),
        BlockKind::Authority,
        "a call without an origin is denied (Sentinel would pass it)"
    );
    let search = |origin: &str| EntryBuilder::new("sentinel-search").origin(origin).enter();
    assert_eq!(search("bot").unwrap_err().kind(), BlockKind::Authority);
    assert!(search("user").is_ok());
    // The `qps: 0` system rule blocks inbound entries only.
    assert_eq!(
        EntryBuilder::new("sentinel-inbound")
            .inbound()
            .enter()
            .unwrap_err()
            .kind(),
        BlockKind::System
    );
    assert!(EntryBuilder::new("sentinel-inbound").enter().is_ok());

    rules::load(RuleSet::new()).unwrap();
    rules::load_system_rules(vec![]).unwrap();
    assert_eq!(rules::current(), RuleSet::new());
}

#[test]
fn unknown_system_and_authority_fields_are_refused_by_name() {
    // (file, the field named)
    let cases = [
        (
            r#"{"system": [{ "cpu_usage": 0.5, "memory": 0.9 }]}"#,
            "memory",
        ),
        (
            r#"{"system": [{ "highestCpuUsage": 0.5, "clusterMode": false }]}"#,
            "clusterMode",
        ),
        // Sentinel's names and ours in one rule: ours is refused by name.
        (
            r#"{"system": [{ "highestCpuUsage": 0.5, "concurrency": 5 }]}"#,
            "concurrency",
        ),
        (
            r#"{"authority": [{ "resource": "u", "strategy": "allow", "origins": ["a"],
                "clusterMode": false }]}"#,
            "clusterMode",
        ),
        (
            r#"{"authority": [{ "resource": "u", "limitApp": "a", "clusterMode": false }]}"#,
            "clusterMode",
        ),
        (
            r#"{"authority": [{ "resource": "u", "limitApp": "a", "origins": ["a"] }]}"#,
            "origins",
        ),
        (
            r#"{"authority": [{ "resource": "u", "strategy": "allow", "origin": ["a"] }]}"#,
            "origin",
        ),
    ];
    for (json, name) in cases {
        let err = RuleSet::from_json(json).unwrap_err();
        let entry = only_entry(&err);
        assert_eq!(entry.field.as_deref(), Some(name), "{json}: {err}");
        assert!(err.to_string().contains(&format!("`{name}`")), "{err}");
        // The field's own line.
        let line = json[..json.find(&format!("\"{name}\"")).unwrap()]
            .lines()
            .count();
        assert_eq!(entry.line, Some(line), "{json}: {err}");
    }
    // An unknown kind is refused too.
    let err = RuleSet::from_yaml("systems:\n  - qps: 1\n").unwrap_err();
    assert!(err.to_string().contains("systems"), "{err}");
}

/// Each entry of `err` as `line kind index resource field`, in Rust's debug form.
fn line_kind_index_resource_field(err: &RuleSetError) -> Vec<String> {
    err.entries()
        .iter()
        .map(|e| {
            format!(
                "{:?} {:?} {:?} {:?} {:?}",
                e.line, e.kind, e.index, e.resource, e.field
            )
        })
        .collect()
}

#[test]
fn a_bad_system_or_authority_rule_is_reported_with_line_and_field() {
    let yaml = "\
system:
  - qps: 10
  - cpu_usage: 80          # line 3: a percentage, not a fraction
    concurrency: 5
authority:
  - resource: bad-origins  # line 6
    strategy: allow
    origins: []
  - resource: bad-strategy # line 9
    strategy: white
    origins: [a]
";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    let found = line_kind_index_resource_field(&err);
    assert_eq!(
        found,
        [
            r#"Some(3) Some("system") Some(1) None Some("cpu_usage")"#,
            r#"Some(8) Some("authority") Some(0) Some("bad-origins") Some("origins")"#,
            r#"Some(10) Some("authority") Some(1) Some("bad-strategy") Some("strategy")"#,
        ],
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("line 3, column 5: system[1]: field `cpu_usage` must be a fraction"),
        "{err}"
    );

    // Sentinel's names in the error for a rule written with them; JSON and TOML lines.
    let json = r#"/* licence */
{
  "system": [
    { "highestCpuUsage": 0.5 },
    { "highestSystemLoad": -1, "highestCpuUsage": 80, "qps": -1 }
  ],
  "authority": [
    { "resource": "sentinel-bad", "limitApp": " , ", "strategy": 0 }
  ]
}"#;
    let err = RuleSet::from_json(json).unwrap_err();
    assert_eq!(
        line_kind_index_resource_field(&err),
        [
            r#"Some(5) Some("system") Some(1) None Some("highestCpuUsage")"#,
            r#"Some(8) Some("authority") Some(0) Some("sentinel-bad") Some("limitApp")"#,
        ],
        "{err}"
    );
    let err = RuleSet::from_json(
        r#"{"system": [{ "highestSystemLoad": -1, "highestCpuUsage": -1, "avgRt": -1,
            "maxThread": -1, "qps": -1 }]}"#,
    )
    .unwrap_err();
    assert!(
        only_entry(&err).message.contains("no limit"),
        "a rule of only unset limits: {err}"
    );
    let toml = "[[system]]\nqps = 1\n\n[[system]]\navg_rt = \"2m\"\n";
    let err = RuleSet::from_toml(toml).unwrap_err();
    let entry = only_entry(&err);
    assert_eq!(
        (entry.line, entry.index, entry.field.as_deref()),
        (Some(5), Some(1), Some("avg_rt"))
    );
    assert_eq!(entry.rule_line, Some(4), "{err}");

    // Loading such a file changes nothing.
    let _serial = serial();
    let _clock = sentinel_runtime::clock::MockClock::install();
    let dir = TempDir::new("bad-kinds");
    let path = dir.join("rules.yaml");
    fs::write(&path, yaml).unwrap();
    let err = rules::load_file(&path).unwrap_err();
    assert_eq!(err.path(), Some(path.as_path()));
    assert_eq!(err.entries().len(), 3);
    assert_eq!(rules::current(), RuleSet::new());
    assert!(rules::system_rules().is_empty());
}

#[test]
fn a_file_system_rule_blocks_inbound_entries_until_a_file_without_one_clears_it() {
    use sentinel_runtime::{BlockKind, EntryBuilder};
    let _serial = serial();
    let clock = sentinel_runtime::clock::MockClock::install();
    clock.advance(secs(1));
    let dir = TempDir::new("system-in-force");
    let path = dir.join("rules.yaml");
    fs::write(
        &path,
        "flow:\n  - { resource: files-sys-flow, threshold: 100 }\nsystem:\n  - qps: 0\n",
    )
    .unwrap();
    rules::load_file(&path).unwrap();
    assert_eq!(rules::system_rules(), vec![SystemRule::new().qps(0.0)]);
    let inbound = EntryBuilder::new("x").inbound().enter();
    assert_eq!(inbound.unwrap_err().kind(), BlockKind::System);
    assert!(
        EntryBuilder::new("x").enter().is_ok(),
        "outbound entries are never blocked by system rules"
    );

    // The same file without system rules: loading it clears them.
    fs::write(
        &path,
        "flow:\n  - { resource: files-sys-flow, threshold: 100 }\n",
    )
    .unwrap();
    rules::load_file(&path).unwrap();
    assert!(rules::system_rules().is_empty());
    assert_eq!(
        rules::current().flow,
        vec![FlowRule::qps("files-sys-flow", 100.0)]
    );
    assert!(EntryBuilder::new("x").inbound().enter().is_ok());

    rules::load(RuleSet::new()).unwrap();
    rules::load_system_rules(vec![]).unwrap();
}

// ----- the watcher ---------------------------------------------------------------------------------

#[test]
fn the_watcher_follows_atomic_renames_and_stops_when_dropped() {
    let _serial = serial();
    let dir = TempDir::new("rename");
    let path = dir.join("rules.yaml");
    let (old, new) = (set_of("rename", 10.0), set_of("rename-next", 20.0));
    fs::write(&path, old.to_yaml().unwrap()).unwrap();

    let watcher = rules::watch_file(&path).expect("the first load");
    assert_eq!(rules::current(), old);
    let first = watcher.status();
    assert_eq!((first.loads, first.last_error.as_ref()), (1, None));

    replace_atomically(&path, &new.to_yaml().unwrap());
    let status = wait_for(&watcher, "the renamed file", &[&old, &new], |s| {
        s.loads == 2
    });
    assert_eq!(rules::current(), new);
    assert_ne!(status.version, first.version);
    assert!(status.loaded_at >= first.loaded_at);
    assert_eq!(status.last_error, None);

    // Dropping stops the watcher (its thread is joined): later changes are not loaded. Every
    // test that watches a file holds `serial()`, so no watcher thread is left in the process once
    // `drop` returns; with none, nothing can load the change below. The kernel lets a joined
    // thread's entry linger in /proc/self/task for a moment (the join returns when the thread
    // clears its id, before its task is released), so its absence is awaited, within a bound.
    drop(watcher);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = watcher_threads();
    while left != Some(0) && Instant::now() < deadline {
        thread::sleep(ms(1));
        left = watcher_threads();
    }
    assert_eq!(
        left,
        Some(0),
        "a watcher thread outlived the dropped watcher"
    );
    replace_atomically(&path, &old.to_yaml().unwrap());
    assert_eq!(rules::current(), new);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn the_watchers_status_counts_the_rules_that_match_nothing() {
    let _serial = serial();
    let dir = TempDir::new("unmatched");
    let path = dir.join("rules.yaml");
    fs::write(
        &path,
        "flow:\n  - { resource: \"GET:/watch-unmatched/:id\", threshold: 5 }\n",
    )
    .unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");
    assert_eq!(watcher.status().unmatched, 1, "no call has entered it");
    drop(sentinel_runtime::entry("GET:/watch-unmatched/:id"));
    assert_eq!(watcher.status().unmatched, 0);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[cfg(unix)]
#[test]
fn the_watcher_follows_a_configmap_symlink_flip() {
    use std::os::unix::fs::symlink;

    let _serial = serial();
    let dir = TempDir::new("configmap");
    let (old, new) = (set_of("configmap", 10.0), set_of("configmap-next", 20.0));
    // Kubernetes' layout: rules.yaml -> ..data/rules.yaml, ..data -> ..v1.
    fs::create_dir(dir.join("..v1")).unwrap();
    fs::write(dir.join("..v1/rules.yaml"), old.to_yaml().unwrap()).unwrap();
    symlink("..v1", dir.join("..data")).unwrap();
    symlink("..data/rules.yaml", dir.join("rules.yaml")).unwrap();

    let watcher = rules::watch_file(dir.join("rules.yaml")).expect("the first load");
    assert_eq!(rules::current(), old);

    // The update: a new directory, a new symlink renamed over `..data`, the old one removed.
    fs::create_dir(dir.join("..v2")).unwrap();
    fs::write(dir.join("..v2/rules.yaml"), new.to_yaml().unwrap()).unwrap();
    symlink("..v2", dir.join("..data_tmp")).unwrap();
    fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    fs::remove_dir_all(dir.join("..v1")).unwrap();

    wait_for(&watcher, "the flipped ConfigMap", &[&old, &new], |s| {
        s.loads == 2
    });
    assert_eq!(rules::current(), new);
    assert_eq!(watcher.status().last_error, None);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn a_deleted_file_keeps_the_last_good_rules_until_it_is_recreated() {
    let _serial = serial();
    let dir = TempDir::new("delete");
    let path = dir.join("rules.toml");
    let (old, new) = (set_of("delete", 10.0), set_of("delete-next", 20.0));
    fs::write(&path, old.to_toml().unwrap()).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");

    fs::remove_file(&path).unwrap();
    let status = wait_for(&watcher, "the deletion to be seen", &[&old], |s| {
        s.last_error.is_some()
    });
    let err = status.last_error.unwrap();
    assert!(err.to_string().contains("missing"), "{err}");
    assert_eq!(rules::current(), old);
    assert_eq!(status.loads, 1);

    // Recreated with the same content: nothing to load, the error clears.
    fs::write(&path, old.to_toml().unwrap()).unwrap();
    wait_for(&watcher, "the same file back", &[&old], |s| {
        s.last_error.is_none()
    });
    assert_eq!(watcher.status().loads, 1);

    fs::remove_file(&path).unwrap();
    wait_for(&watcher, "the second deletion", &[&old], |s| {
        s.last_error.is_some()
    });
    fs::write(&path, new.to_toml().unwrap()).unwrap();
    wait_for(&watcher, "the recreated file", &[&old, &new], |s| {
        s.loads == 2
    });
    assert_eq!(rules::current(), new);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn a_partial_write_keeps_the_old_rules_until_it_completes() {
    let _serial = serial();
    let dir = TempDir::new("partial");
    let path = dir.join("rules.json");
    let (old, new) = (set_of("partial", 10.0), set_of("partial-next", 20.0));
    fs::write(&path, old.to_json().unwrap()).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");
    let version = watcher.status().version;

    let text = new.to_json().unwrap();
    let (first_half, second_half) = text.as_bytes().split_at(text.len() / 2);
    let mut file = fs::File::create(&path).unwrap();
    file.write_all(first_half).unwrap();
    file.flush().unwrap();
    let status = wait_for(&watcher, "the half-written file", &[&old], |s| {
        s.last_error.is_some()
    });
    let err = status.last_error.unwrap();
    assert!(only_entry(&err).line.is_some(), "a syntax error: {err}");
    assert_eq!((status.version, status.loads), (version, 1));
    assert_eq!(rules::current(), old);

    file.write_all(second_half).unwrap();
    file.flush().unwrap();
    drop(file);
    wait_for(&watcher, "the completed file", &[&old, &new], |s| {
        s.loads == 2 && s.last_error.is_none()
    });
    assert_eq!(rules::current(), new);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn an_invalid_rule_keeps_the_old_rules_and_is_reported_with_its_line() {
    let _serial = serial();
    let dir = TempDir::new("invalid");
    let path = dir.join("rules.yaml");
    let (old, new) = (set_of("invalid", 10.0), set_of("invalid-next", 20.0));
    fs::write(&path, old.to_yaml().unwrap()).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");

    let bad = "\
flow:
  - resource: invalid-next-a
    threshold: 20
  - resource: invalid-next-b
    threshold: 21
    max_wait: 2h
  - resource: invalid-next-c
    metric: concurrency
    threshold: 22
";
    replace_atomically(&path, bad);
    let status = wait_for(&watcher, "the bad rule to be reported", &[&old], |s| {
        s.last_error.is_some()
    });
    let err = status.last_error.unwrap();
    let entry = only_entry(&err);
    assert_eq!(
        (
            entry.line,
            entry.resource.as_deref(),
            entry.field.as_deref()
        ),
        (Some(6), Some("invalid-next-b"), Some("max_wait")),
        "{err}"
    );
    assert_eq!(err.path(), Some(watcher.path()));
    assert_eq!(rules::current(), old);

    replace_atomically(&path, &new.to_yaml().unwrap());
    wait_for(&watcher, "the fixed file", &[&old, &new], |s| {
        s.loads == 2 && s.last_error.is_none()
    });
    assert_eq!(rules::current(), new);
    drop(watcher);
    rules::load(RuleSet::new()).unwrap();
}

#[test]
fn only_an_explicitly_empty_set_clears_the_rules() {
    let _serial = serial();
    let dir = TempDir::new("empty");
    let path = dir.join("rules.yaml");
    let old = set_of("empty", 10.0);
    fs::write(&path, old.to_yaml().unwrap()).unwrap();
    let watcher = rules::watch_file(&path).expect("the first load");
    let empty = RuleSet::new();

    for (what, text) in [
        ("an empty file", ""),
        ("a file of comments", "# nothing yet\n"),
        ("a kind with no value", "flow:\n"),
    ] {
        fs::write(&path, text).unwrap();
        let status = wait_for(&watcher, what, &[&old], |s| s.last_error.is_some());
        assert_eq!(status.loads, 1, "{what}");
        // Back to the loaded content: the error clears.
        fs::write(&path, old.to_yaml().unwrap()).unwrap();
        wait_for(&watcher, "the loaded content back", &[&old], |s| {
            s.last_error.is_none()
        });
    }
    assert_eq!(rules::current(), old);

    fs::write(&path, "flow: []\n").unwrap();
    wait_for(&watcher, "the explicitly empty set", &[&old, &empty], |s| {
        s.loads == 2
    });
    assert_eq!(rules::current(), empty);
    drop(watcher);
}

#[test]
fn watching_refuses_a_missing_or_bad_file_at_once() {
    let _serial = serial();
    let dir = TempDir::new("first-load");
    let err = rules::watch_file(dir.join("absent.yaml")).unwrap_err();
    assert!(err.to_string().contains("cannot read the file"), "{err}");

    let path = dir.join("rules.json");
    fs::write(
        &path,
        "{\"flow\": [\n  {\"resource\": \"first-load\", \"count\": 1, \"grade\": 0, \"limitApp\": \"x\"}\n]}",
    )
    .unwrap();
    let err = rules::watch_file(&path).unwrap_err();
    let entry = only_entry(&err);
    assert_eq!(
        (entry.line, entry.field.as_deref()),
        (Some(2), Some("limitApp"))
    );
    assert_eq!(err.path(), Some(path.as_path()));
}
