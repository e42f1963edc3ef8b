//! Adaptive-concurrency rules in rule files, and the guide's rule file (docs/rules.md). (System
//! and authority rules in files are tested in `tests/rules/rule_files.rs`.)

use std::time::Duration;

use sentinel_runtime::rules::{AdaptiveConcurrency, FlowRule, RuleSet};

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
    // The minimum RTT's probe settings.
    let set = RuleSet::from_yaml(
        r#"
flow:
  - resource: search
    metric: adaptive_concurrency
    threshold: 20
    adaptive:
      rtt_tolerance: 1.25
      min_rtt_interval: 30s
      min_rtt_jitter: 0.1
      probe_limit: 2
      probe_samples: 50
"#,
    )
    .unwrap();
    assert_eq!(
        set.flow,
        vec![
            FlowRule::adaptive_concurrency("search").adaptive(AdaptiveConcurrency {
                rtt_tolerance: 1.25,
                min_rtt_interval: Duration::from_secs(30),
                min_rtt_jitter: 0.1,
                probe_limit: 2,
                probe_samples: 50,
                ..AdaptiveConcurrency::default()
            }),
        ]
    );
    assert_eq!(RuleSet::from_json(&set.to_json().unwrap()).unwrap(), set);
    for (bad, field) in [
        ("probe_limit: 0", "adaptive.probe_limit"),
        ("min_rtt_interval: 0s", "adaptive.min_rtt_interval"),
        ("min_rtt_jitter: 2", "adaptive.min_rtt_jitter"),
        ("probe_samples: 0", "adaptive.probe_samples"),
    ] {
        let yaml = format!(
            "flow:\n  - {{ resource: db, metric: adaptive_concurrency, threshold: 20, adaptive: {{ {bad} }} }}\n"
        );
        let err = RuleSet::from_yaml(&yaml).unwrap_err();
        assert_eq!(err.entries()[0].field.as_deref(), Some(field), "{bad}");
    }
    // Gradient2's long-term RTT is gone: its setting is refused, by name.
    let err = RuleSet::from_yaml(
        "flow:\n  - { resource: db, metric: adaptive_concurrency, threshold: 20, adaptive: { long_window: 600 } }\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("long_window"), "{err}");
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
fn the_guides_rule_file_reads() {
    let guide = include_str!("../../docs/rules.md");
    let start = guide
        .find("```yaml\n")
        .expect("a YAML block in docs/rules.md")
        + 8;
    let end = start + guide[start..].find("```").expect("the block's end");
    let set = RuleSet::from_yaml(&guide[start..end]).unwrap();
    assert!(!set.flow.is_empty() && !set.system.is_empty() && !set.authority.is_empty());
    assert!(!set.circuit_breaker.is_empty() && !set.hotspot.is_empty());
}
