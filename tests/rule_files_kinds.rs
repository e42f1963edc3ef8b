//! System and authority rules in rule files: our names in every format, Sentinel's JSON names,
//! errors by field and line, and a watched file putting system rules in force and taking them
//! out. Tests that load rules hold the mock clock (rules are process-wide).

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{
    self, AdaptiveConcurrency, AuthorityRule, FlowRule, RuleSet, SystemRule,
};
use sentinel_runtime::{BlockKind, EntryBuilder};

fn expected() -> (Vec<SystemRule>, Vec<AuthorityRule>) {
    (
        vec![
            SystemRule::new()
                .cpu_usage(0.8)
                .avg_rt(Duration::from_millis(250)),
            SystemRule::new().concurrency(500).qps(2000.0),
            SystemRule::new().load_per_core(1.5),
        ],
        vec![
            AuthorityRule::allow("admin", ["ops", "billing"]),
            AuthorityRule::deny("search", ["crawler"]),
            AuthorityRule::allow("status", ["ops"]).allow_missing_origin(true),
        ],
    )
}

#[test]
fn our_names_read_the_same_in_json_yaml_and_toml() {
    let json = r#"{
        // comments are allowed
        "system": [
            { "cpu_usage": 0.8, "avg_rt": "250ms" },
            { "concurrency": 500, "qps": 2000 },
            { "load_per_core": 1.5 }
        ],
        "authority": [
            { "resource": "admin", "strategy": "allow", "origins": ["ops", " billing "] },
            { "resource": "search", "strategy": "deny", "origins": ["crawler"] },
            { "resource": "status", "strategy": "allow", "origins": ["ops"], "allow_missing": true }
        ]
    }"#;
    let yaml = r#"
system:
  - { cpu_usage: 0.8, avg_rt: 250 }
  - concurrency: 500
    qps: 2000
  - load_per_core: 1.5
authority:
  - { resource: admin, strategy: allow, origins: [ops, " billing "] }
  - { resource: search, strategy: deny, origins: [crawler] }
  - { resource: status, strategy: allow, origins: [ops], allow_missing: true }
"#;
    let toml = r#"
[[system]]
cpu_usage = 0.8
avg_rt = "250ms"

[[system]]
concurrency = 500
qps = 2000

[[system]]
load_per_core = 1.5

[[authority]]
resource = "admin"
strategy = "allow"
origins = ["ops", " billing "]

[[authority]]
resource = "search"
strategy = "deny"
origins = ["crawler"]

[[authority]]
resource = "status"
strategy = "allow"
origins = ["ops"]
allow_missing = true
"#;
    let (system, authority) = expected();
    for set in [
        RuleSet::from_json(json).unwrap(),
        RuleSet::from_yaml(yaml).unwrap(),
        RuleSet::from_toml(toml).unwrap(),
    ] {
        assert_eq!(set.system, system);
        assert_eq!(set.authority, authority, "origins trimmed");
        // And back again.
        assert_eq!(RuleSet::from_json(&set.to_json().unwrap()).unwrap(), set);
        assert_eq!(RuleSet::from_yaml(&set.to_yaml().unwrap()).unwrap(), set);
        assert_eq!(RuleSet::from_toml(&set.to_toml().unwrap()).unwrap(), set);
    }
}

#[test]
fn sentinel_json_system_and_authority_rules_read_as_they_are() {
    let json = r#"/*
 * Copyright 1999-2018 Alibaba Group Holding Ltd.
 * Licensed under the Apache License, Version 2.0
 */
{
  "system": [
    { "highestSystemLoad": -1, "highestCpuUsage": 0.9, "qps": -1, "avgRt": 100, "maxThread": 10 },
    { "resource": null, "limitApp": "default", "highestSystemLoad": 8.0, "highestCpuUsage": -1,
      "qps": 300, "avgRt": -1, "maxThread": -1 }
  ],
  "authority": [
    { "resource": "admin", "limitApp": "appA, appB", "strategy": 0 },
    { "resource": "search", "limitApp": "crawler", "strategy": "Black" },
    { "resource": "report", "limitApp": "appC" }
  ]
}"#;
    let set = RuleSet::from_json(json).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    assert_eq!(
        set.system,
        vec![
            SystemRule::new()
                .cpu_usage(0.9)
                .avg_rt(Duration::from_millis(100))
                .concurrency(10),
            SystemRule::new().load_per_core(8.0 / cores).qps(300.0),
        ]
    );
    assert_eq!(
        set.authority,
        vec![
            AuthorityRule::allow("admin", ["appA", "appB"]),
            AuthorityRule::deny("search", ["crawler"]),
            AuthorityRule::allow("report", ["appC"]),
        ]
    );
}

#[test]
fn unknown_fields_and_bad_values_are_refused_by_name_with_their_line() {
    let err = RuleSet::from_yaml("system:\n  - { cpu_usage: 0.5, memory: 0.9 }\n").unwrap_err();
    assert!(err.to_string().contains("memory"), "{err}");
    let err = RuleSet::from_json(r#"{"system": [{"highestCpuUsage": 0.5, "clusterMode": true}]}"#)
        .unwrap_err();
    assert!(err.to_string().contains("clusterMode"), "{err}");

    let yaml = "system:\n  - qps: 10\n  - cpu_usage: 80\nauthority:\n  - resource: a\n    strategy: allow\n    origins: []\n";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    let entries = err.entries();
    assert_eq!(entries.len(), 2, "{err}");
    let system = entries.iter().find(|e| e.kind == Some("system")).unwrap();
    assert_eq!(
        (system.index, system.line, system.field.as_deref()),
        (Some(1), Some(3), Some("cpu_usage"))
    );
    let authority = entries
        .iter()
        .find(|e| e.kind == Some("authority"))
        .unwrap();
    assert_eq!(
        (
            authority.index,
            authority.line,
            authority.field.as_deref(),
            authority.resource.as_deref()
        ),
        (Some(0), Some(5), Some("origins"), Some("a"))
    );
    // Sentinel's names in the error for a rule written with them.
    let err = RuleSet::from_json(r#"{"system": [{"highestCpuUsage": 80}]}"#).unwrap_err();
    assert_eq!(err.entries()[0].field.as_deref(), Some("highestCpuUsage"));
    let err =
        RuleSet::from_json(r#"{"authority": [{"resource": "a", "limitApp": "x", "strategy": 2}]}"#)
            .unwrap_err();
    assert_eq!(err.entries()[0].field.as_deref(), Some("strategy"));
}

#[test]
fn a_rule_file_puts_system_and_authority_rules_in_force_and_an_empty_set_takes_them_out() {
    let clock = MockClock::install();
    clock.advance(Duration::from_secs(1));
    let dir = std::env::temp_dir().join(format!("sentinel-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rules.yaml");
    std::fs::write(
        &path,
        "system:\n  - qps: 0\nauthority:\n  - { resource: files-admin, strategy: allow, origins: [ops] }\n",
    )
    .unwrap();
    rules::load(RuleSet::from_path(&path).unwrap()).unwrap();
    let inbound = EntryBuilder::new("files-api").inbound().enter();
    assert_eq!(inbound.unwrap_err().kind(), BlockKind::System);
    let admin = EntryBuilder::new("files-admin").origin("guest").enter();
    assert_eq!(admin.unwrap_err().kind(), BlockKind::Authority);
    assert_eq!(rules::current().system, vec![SystemRule::new().qps(0.0)]);

    std::fs::write(&path, "flow: []\n").unwrap();
    rules::load(RuleSet::from_path(&path).unwrap()).unwrap();
    assert!(EntryBuilder::new("files-api").inbound().enter().is_ok());
    assert!(EntryBuilder::new("files-admin")
        .origin("guest")
        .enter()
        .is_ok());
    assert!(rules::current().system.is_empty() && rules::current().authority.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn adaptive_concurrency_rules_read_with_their_settings() {
    let set = RuleSet::from_yaml(
        r#"
flow:
  - { resource: db, metric: adaptive_concurrency, threshold: 20 }
  - resource: search
    metric: adaptive_concurrency
    threshold: 20
    adaptive: { max_limit: 500, sample_window: 250ms, timeout: 2s }
"#,
    )
    .unwrap();
    assert_eq!(
        set.flow,
        vec![
            FlowRule::adaptive_concurrency("db"),
            FlowRule::adaptive_concurrency("search").adaptive(AdaptiveConcurrency {
                max_limit: 500,
                sample_window: Duration::from_millis(250),
                timeout: Some(Duration::from_secs(2)),
                ..AdaptiveConcurrency::default()
            }),
        ]
    );
    assert_eq!(RuleSet::from_json(&set.to_json().unwrap()).unwrap(), set);
    let err = RuleSet::from_yaml(
        "flow:\n  - { resource: db, metric: adaptive_concurrency, threshold: 20, adaptive: { max_limit: 5 } }\n",
    )
    .unwrap_err();
    assert_eq!(
        err.entries()[0].field.as_deref(),
        Some("adaptive.max_limit")
    );
    let err = RuleSet::from_yaml(
        "flow:\n  - { resource: db, threshold: 20, adaptive: { max_limit: 500 } }\n",
    )
    .unwrap_err();
    assert_eq!(
        err.entries()[0].field.as_deref(),
        Some("adaptive"),
        "QPS rule with settings"
    );
}

#[test]
fn the_readme_rule_file_reads() {
    let readme = include_str!("../README.md");
    let start = readme
        .find("```yaml\n")
        .expect("a YAML block in the README")
        + 8;
    let end = start + readme[start..].find("```").expect("the block's end");
    let set = RuleSet::from_yaml(&readme[start..end]).unwrap();
    assert!(!set.flow.is_empty() && !set.system.is_empty() && !set.authority.is_empty());
    assert!(!set.circuit_breaker.is_empty() && !set.hotspot.is_empty());
}
