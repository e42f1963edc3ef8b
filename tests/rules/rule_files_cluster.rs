//! Cluster settings in rule files: our `cluster` and `cluster_fallback` on flow and hotspot
//! rules in every format, and Sentinel's `clusterMode` with its `clusterConfig`; every bad value
//! refused by its field, at its line. Reading only: nothing here loads rules.

use sentinel_runtime::rules::{
    ClusterFallback, ClusterThreshold, FlowRule, HotspotRule, RuleSet, RuleSetError,
};

/// Each problem as `line field`, in file order.
fn problems(err: &RuleSetError) -> Vec<String> {
    err.entries()
        .iter()
        .map(|e| format!("{:?} {:?}", e.line, e.field))
        .collect()
}

/// The one problem's message.
fn message(err: &RuleSetError) -> &str {
    assert_eq!(err.entries().len(), 1, "{err}");
    &err.entries()[0].message
}

fn expected_flow() -> Vec<FlowRule> {
    vec![
        FlowRule::qps("checkout", 1000.0).cluster(ClusterThreshold::Global),
        FlowRule::qps("search", 50.0)
            .cluster(ClusterThreshold::PerInstance)
            .cluster_fallback(ClusterFallback::Pass),
        FlowRule::qps("local", 5.0),
    ]
}

fn expected_hotspot() -> Vec<HotspotRule> {
    vec![HotspotRule::qps("users", 0, 10.0)
        .cluster(ClusterThreshold::Global)
        .cluster_fallback(ClusterFallback::Local)]
}

#[test]
fn our_names_read_cluster_and_cluster_fallback_in_every_format() {
    let yaml = "\
flow:
  - { resource: checkout, threshold: 1000, cluster: global }
  - { resource: search, threshold: 50, cluster: per_instance, cluster_fallback: pass }
  - { resource: local, threshold: 5 }
hotspot:
  - { resource: users, param_index: 0, threshold: 10, cluster: global, cluster_fallback: local }
";
    let json = r#"{
  "flow": [
    { "resource": "checkout", "threshold": 1000, "cluster": "global" },
    { "resource": "search", "threshold": 50, "cluster": "per_instance",
      "cluster_fallback": "pass" },
    { "resource": "local", "threshold": 5 }
  ],
  "hotspot": [
    { "resource": "users", "param_index": 0, "threshold": 10, "cluster": "global",
      "cluster_fallback": "local" }
  ]
}"#;
    let toml = r#"
[[flow]]
resource = "checkout"
threshold = 1000
cluster = "global"

[[flow]]
resource = "search"
threshold = 50
cluster = "per_instance"
cluster_fallback = "pass"

[[flow]]
resource = "local"
threshold = 5

[[hotspot]]
resource = "users"
param_index = 0
threshold = 10
cluster = "global"
cluster_fallback = "local"
"#;
    for (format, set) in [
        ("yaml", RuleSet::from_yaml(yaml)),
        ("json", RuleSet::from_json(json)),
        ("toml", RuleSet::from_toml(toml)),
    ] {
        let set = set.unwrap_or_else(|e| panic!("{format}: {e}"));
        assert_eq!(set.flow, expected_flow(), "{format}");
        assert_eq!(set.hotspot, expected_hotspot(), "{format}");
    }
}

#[test]
fn cluster_rules_write_back_as_they_were_read() {
    let mut set = RuleSet::new();
    set.flow = expected_flow();
    set.hotspot = expected_hotspot();
    let yaml = set.to_yaml().unwrap();
    assert!(yaml.contains("cluster: global"), "{yaml}");
    assert!(yaml.contains("cluster: per_instance"), "{yaml}");
    assert!(yaml.contains("cluster_fallback: pass"), "{yaml}");
    // The default fallback is not written.
    assert!(!yaml.contains("cluster_fallback: local"), "{yaml}");
    assert_eq!(RuleSet::from_yaml(&yaml).unwrap(), set);
    assert_eq!(RuleSet::from_json(&set.to_json().unwrap()).unwrap(), set);
    assert_eq!(RuleSet::from_toml(&set.to_toml().unwrap()).unwrap(), set);
}

#[test]
fn a_bad_cluster_value_is_refused_naming_the_field_and_line() {
    let yaml = "\
flow:
  - resource: ok
    threshold: 10
  - resource: bad-cluster
    threshold: 10
    cluster: both
hotspot:
  - resource: bad-fallback
    param_index: 0
    threshold: 1
    cluster: global
    cluster_fallback: maybe
";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    assert_eq!(
        problems(&err),
        [
            r#"Some(6) Some("cluster")"#,
            r#"Some(12) Some("cluster_fallback")"#,
        ],
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("line 6, column 5: flow[1] (resource `bad-cluster`, rule at line 4): field `cluster` is `both`, expected one of `global`, `per_instance`"),
        "{text}"
    );
    assert!(
        text.contains("field `cluster_fallback` is `maybe`, expected one of `local`, `pass`"),
        "{text}"
    );

    let json = r#"{"flow": [
  {"resource": "a", "threshold": 1,
   "cluster": "both"}
]}"#;
    let err = RuleSet::from_json(json).unwrap_err();
    assert_eq!(problems(&err), [r#"Some(3) Some("cluster")"#], "{err}");

    let toml = "[[hotspot]]\nresource = \"a\"\nparam_index = 0\nthreshold = 1\ncluster = 2\n";
    let err = RuleSet::from_toml(toml).unwrap_err();
    assert_eq!(problems(&err), [r#"Some(5) Some("cluster")"#], "{err}");
}

#[test]
fn a_cluster_setting_on_a_concurrency_rule_is_refused_by_name() {
    let yaml = "\
flow:
  - resource: db
    metric: concurrency
    threshold: 8
    cluster: global
";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    assert_eq!(problems(&err), [r#"Some(5) Some("cluster")"#], "{err}");
    assert!(message(&err).contains("QPS rules only"), "{err}");
}

#[test]
fn sentinel_cluster_mode_reads_threshold_type_and_fallback() {
    let json = r#"{
  "flow": [
    { "resource": "f-global", "count": 100, "clusterMode": true,
      "clusterConfig": { "flowId": 1, "thresholdType": 1, "fallbackToLocalWhenFail": true } },
    { "resource": "f-avg", "count": 100, "clusterMode": true,
      "clusterConfig": { "flowId": 2, "thresholdType": 0, "fallbackToLocalWhenFail": false } },
    { "resource": "f-defaults", "count": 100, "clusterMode": true, "clusterConfig": {} },
    { "resource": "f-off", "count": 100, "clusterMode": false, "clusterConfig": null }
  ],
  "paramFlow": [
    { "resource": "p-global", "paramIdx": 0, "count": 10, "clusterMode": true,
      "clusterConfig": { "flowId": 3, "thresholdType": 1, "fallbackToLocalWhenFail": true } },
    { "resource": "p-defaults", "paramIdx": 1, "count": 10, "clusterMode": true,
      "clusterConfig": { "flowId": 4 } }
  ]
}"#;
    let set = RuleSet::from_json(json).unwrap();
    assert_eq!(
        set.flow,
        vec![
            FlowRule::qps("f-global", 100.0)
                .cluster(ClusterThreshold::Global)
                .cluster_fallback(ClusterFallback::Local),
            FlowRule::qps("f-avg", 100.0)
                .cluster(ClusterThreshold::PerInstance)
                .cluster_fallback(ClusterFallback::Pass),
            // Sentinel's defaults: thresholdType 0 (per instance), fallbackToLocalWhenFail true.
            FlowRule::qps("f-defaults", 100.0)
                .cluster(ClusterThreshold::PerInstance)
                .cluster_fallback(ClusterFallback::Local),
            FlowRule::qps("f-off", 100.0),
        ]
    );
    assert_eq!(
        set.hotspot,
        vec![
            HotspotRule::qps("p-global", 0, 10.0)
                .cluster(ClusterThreshold::Global)
                .cluster_fallback(ClusterFallback::Local),
            // Sentinel's param-flow default is fallbackToLocalWhenFail false: pass.
            HotspotRule::qps("p-defaults", 1, 10.0)
                .cluster(ClusterThreshold::PerInstance)
                .cluster_fallback(ClusterFallback::Pass),
        ]
    );
}

#[test]
fn sentinel_cluster_fields_without_meaning_here_are_accepted_and_ignored() {
    // Every field of Sentinel's ClusterFlowConfig, as its dashboard writes them.
    let json = r#"{"flow": [
    { "resource": "all-fields", "count": 100, "grade": 1, "clusterMode": true,
      "clusterConfig": { "flowId": 10, "thresholdType": 1, "fallbackToLocalWhenFail": true,
        "strategy": 0, "sampleCount": 10, "windowIntervalMs": 1000,
        "acquireRefuseStrategy": 0, "resourceTimeout": 2000, "resourceTimeoutStrategy": 0,
        "clientOfflineTime": 2000, "prefetchCntRatio": 0 } }
  ],
  "paramFlow": [
    { "resource": "all-fields", "paramIdx": 0, "count": 5, "clusterMode": true,
      "clusterConfig": { "flowId": 11, "thresholdType": 0, "fallbackToLocalWhenFail": true,
        "sampleCount": 5, "windowIntervalMs": 500 } }
  ]}"#;
    let set = RuleSet::from_json(json).unwrap();
    assert_eq!(
        set.flow,
        vec![FlowRule::qps("all-fields", 100.0).cluster(ClusterThreshold::Global)]
    );
    assert_eq!(
        set.hotspot,
        vec![HotspotRule::qps("all-fields", 0, 5.0).cluster(ClusterThreshold::PerInstance)]
    );
}

#[test]
fn sentinel_cluster_errors_name_the_field_and_line() {
    // (the rule, with `@` for the line the error must name; the field named)
    let cases = [
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {"thresholdType": 2}}]}"#,
            2,
            "clusterConfig.thresholdType",
        ),
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {
    "strategy": 1}}]}"#,
            3,
            "clusterConfig.strategy",
        ),
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {"sampleCount": 3,
     "windowIntervalMs": 1000}}]}"#,
            3,
            "clusterConfig.windowIntervalMs",
        ),
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {"sampleCount": 0}}]}"#,
            2,
            "clusterConfig.sampleCount",
        ),
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {"fallbackToLocalWhenFail": "yes"}}]}"#,
            2,
            "clusterConfig.fallbackToLocalWhenFail",
        ),
        (
            r#"{"flow": [{"resource": "a", "count": 1, "clusterMode": true,
  "clusterConfig": {"thresholdType": 1,
    "borrowFrom": "b"}}]}"#,
            3,
            "clusterConfig.borrowFrom",
        ),
        // Fields only flow rules' configs have are unknown on a param-flow rule's.
        (
            r#"{"paramFlow": [{"resource": "a", "paramIdx": 0, "count": 1, "clusterMode": true,
  "clusterConfig": {"acquireRefuseStrategy": 0}}]}"#,
            2,
            "clusterConfig.acquireRefuseStrategy",
        ),
        // A cluster rule without its config, as Sentinel drops it.
        (
            r#"{"flow": [{"resource": "a", "count": 1,
  "clusterMode": true}]}"#,
            2,
            "clusterMode",
        ),
        // A config without clusterMode, which Sentinel ignores.
        (
            r#"{"paramFlow": [{"resource": "a", "paramIdx": 0, "count": 1,
  "clusterConfig": {"thresholdType": 1}}]}"#,
            2,
            "clusterConfig",
        ),
        // A cluster concurrency rule (grade 0): a cluster rule counts QPS here.
        (
            r#"{"flow": [{"resource": "a", "count": 1, "grade": 0,
  "clusterMode": true, "clusterConfig": {}}]}"#,
            2,
            "clusterMode",
        ),
    ];
    for (json, line, field) in cases {
        let err = RuleSet::from_json(json).unwrap_err();
        assert_eq!(
            problems(&err),
            [format!("Some({line}) Some({field:?})")],
            "{json}: {err}"
        );
    }
    let err = RuleSet::from_json(cases[0].0).unwrap_err();
    assert!(message(&err).contains("got 2"), "{err}");
}
