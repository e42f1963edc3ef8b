//! Rule validity as Sentinel's own tests pin it, read from our files and Sentinel's JSON: blank
//! resources (`FlowRuleUtil.isValidRule`, `DegradeRuleManagerTest.testIsValidRule`,
//! `ParamFlowRuleUtil`, `AuthorityRuleManager`), a rate limiter that cannot queue
//! (`FlowRuleUtil.checkControlBehaviorField`), a blank `classType`
//! (`ParamFlowRuleUtilTest.testParseHotParamExceptionItemsFailure`) and `maxThread`
//! (`SystemRuleManager.checkSystem`). Parsing only: nothing here loads rules.

use sentinel_runtime::rules::{HotspotRule, RuleSet, RuleSetError, SystemRule};

/// The (kind, field) of each problem of a refused set.
fn problems(err: &RuleSetError) -> Vec<(String, String)> {
    err.entries()
        .iter()
        .map(|e| {
            (
                e.kind.unwrap_or_default().to_owned(),
                e.field.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn blank_resources_are_refused_in_our_files_for_every_kind() {
    let yaml = r#"
flow:
  - { resource: "   ", threshold: 1 }
circuit_breaker:
  - { resource: "  ", strategy: { type: error_count, threshold: 5 }, recovery: 1s }
hotspot:
  - { resource: "\t", param_index: 0, threshold: 1 }
authority:
  - { resource: " ", strategy: allow, origins: [ops] }
"#;
    let err = RuleSet::from_yaml(yaml).expect_err("blank resources are refused");
    let expected = ["flow", "circuit_breaker", "hotspot", "authority"]
        .map(|kind| (kind.to_owned(), "resource".to_owned()));
    assert_eq!(problems(&err), expected, "{err}");
    assert!(err.to_string().contains("must not be blank"), "{err}");
}

#[test]
fn blank_resources_are_refused_in_sentinel_json_for_every_kind() {
    let json = r#"{
  "flow": [{ "resource": " ", "count": 1, "grade": 1 }],
  "degrade": [{ "resource": "  ", "count": 5, "grade": 2, "timeWindow": 10 }],
  "paramFlow": [{ "resource": "   ", "paramIdx": 0, "count": 1 }],
  "authority": [{ "resource": "\t", "limitApp": "appA", "strategy": 0 }]
}"#;
    let err = RuleSet::from_json(json).expect_err("blank resources are refused");
    let expected = ["flow", "circuit_breaker", "hotspot", "authority"]
        .map(|kind| (kind.to_owned(), "resource".to_owned()));
    assert_eq!(problems(&err), expected, "{err}");
}

#[test]
fn a_rate_limiter_that_cannot_queue_is_refused_by_name() {
    for behaviour in [2, 3] {
        let json = format!(
            r#"{{"flow": [{{ "resource": "v-queue", "count": 10, "controlBehavior": {behaviour},
                 "maxQueueingTimeMs": 0 }}]}}"#
        );
        let err = RuleSet::from_json(&json).expect_err("maxQueueingTimeMs 0 is refused");
        assert_eq!(
            problems(&err),
            [("flow".to_owned(), "maxQueueingTimeMs".to_owned())],
            "controlBehavior {behaviour}: {err}"
        );
    }
    // A positive wait reads as before.
    let ok = r#"{"flow": [{ "resource": "v-queue", "count": 10, "controlBehavior": 2,
                 "maxQueueingTimeMs": 1 }]}"#;
    assert!(RuleSet::from_json(ok).is_ok());
}

#[test]
fn a_blank_class_type_is_a_string() {
    let json = r#"{"paramFlow": [{ "resource": "v-class", "paramIdx": 0, "count": 1,
      "paramFlowItemList": [{ "object": "vip", "count": 5, "classType": "" },
                            { "object": "gold", "count": 3, "classType": " " }] }]}"#;
    let set = RuleSet::from_json(json).expect("a blank classType is a string");
    assert_eq!(
        set.hotspot,
        vec![HotspotRule::qps("v-class", 0, 1.0)
            .exception_str("vip", 5.0)
            .exception_str("gold", 3.0)]
    );
}

#[test]
fn sentinel_max_thread_n_lets_n_plus_one_calls_in() {
    let json = r#"{"system": [{ "maxThread": 2 }, { "maxThread": 0, "qps": -1 }]}"#;
    let set = RuleSet::from_json(json).expect("Sentinel's system rules read");
    assert_eq!(
        set.system,
        vec![
            SystemRule::new().concurrency(3),
            SystemRule::new().concurrency(1)
        ],
        "Sentinel blocks above maxThread: a limit of maxThread + 1"
    );
    // Our own `concurrency` keeps its meaning: the most calls inside.
    let ours = RuleSet::from_json(r#"{"system": [{ "concurrency": 2 }]}"#).expect("reads");
    assert_eq!(ours.system, vec![SystemRule::new().concurrency(2)]);
}
