//! Per-origin flow rules, Sentinel's `limitApp`, ported from alibaba/Sentinel
//! `slots/block/flow/FlowRuleCheckerTest.java`: Sentinel selects the node a rule counts on
//! (`selectNodeByRequesterAndStrategy`); here the port checks what that selection does to calls.
//!
//! * `"appA"`: the rule counts appA's calls (its origin node); other origins pass it.
//! * `"other"`: the rule counts each origin that no other rule of the resource names, each on
//!   its own; a named origin passes it.
//! * `"default"`: the rule counts every caller together (the cluster node).

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowOrigin, FlowRule, RuleSet};
use sentinel_runtime::{context, BlockKind, EntryBuilder};

fn call(resource: &str, origin: &str) -> Result<(), BlockKind> {
    EntryBuilder::new(resource)
        .origin(origin)
        .enter()
        .map(drop)
        .map_err(|e| e.kind())
}

/// How many of `n` calls of `origin` pass.
fn passes(resource: &str, origin: &str, n: usize) -> usize {
    (0..n).filter(|_| call(resource, origin).is_ok()).count()
}

fn load_json(json: &str) {
    rules::load(RuleSet::from_json(json).expect("Sentinel's JSON reads")).expect("rules load");
}

#[test]
fn flow_rule_checker_test_custom_origin_flow_select_node() {
    let _clock = MockClock::install();
    let r = "parity-origin-custom";
    load_json(&format!(
        r#"{{"flow": [{{ "resource": "{r}", "count": 1, "grade": 1, "limitApp": "appA" }}]}}"#
    ));
    assert_eq!(passes(r, "appA", 3), 1, "appA's calls count on the rule");
    assert_eq!(
        passes(r, "appB", 3),
        3,
        "origin mismatch: the rule does not apply"
    );
    assert!(EntryBuilder::new(r).enter().is_ok(), "no origin: not appA");
    rules::load(RuleSet::new()).expect("rules clear");
}

#[test]
fn flow_rule_checker_test_other_origin_flow_select_node() {
    let _clock = MockClock::install();
    let r = "parity-origin-other";
    load_json(&format!(
        r#"{{"flow": [
            {{ "resource": "{r}", "count": 1, "limitApp": "appA" }},
            {{ "resource": "{r}", "count": 2, "limitApp": "other" }}
        ]}}"#
    ));
    assert_eq!(passes(r, "appB", 4), 2, "appB matches other: its own 2");
    assert_eq!(
        passes(r, "appC", 4),
        2,
        "appC is counted on its own: 2 more"
    );
    assert_eq!(
        passes(r, "appA", 4),
        1,
        "appA is named by another rule: only its own rule (1) applies"
    );
    assert_eq!(passes(r, "appB", 1), 0, "appB is still spent");
    rules::load(RuleSet::new()).expect("rules clear");
}

#[test]
fn flow_rule_checker_test_default_limit_app_flow_select_node() {
    let _clock = MockClock::install();
    let r = "parity-origin-default";
    load_json(&format!(
        r#"{{"flow": [{{ "resource": "{r}", "count": 1, "limitApp": "default" }}]}}"#
    ));
    assert_eq!(passes(r, "appA", 1), 1);
    assert_eq!(
        passes(r, "appB", 1),
        0,
        "default counts every caller together"
    );
    assert!(EntryBuilder::new(r).enter().is_err());
    rules::load(RuleSet::new()).expect("rules clear");
}

#[test]
fn origin_rules_in_code_and_a_default_rule_apply_together() {
    let clock = MockClock::install();
    let r = "parity-origin-code";
    rules::load_flow_rules(vec![
        FlowRule::qps(r, 3.0),
        FlowRule::qps(r, 1.0).origin("appA"),
        FlowRule::qps(r, 1.0).other_origins(),
    ])
    .expect("rules load");
    assert_eq!(passes(r, "appA", 2), 1, "appA: its rule's 1");
    assert_eq!(passes(r, "appB", 2), 1, "appB: other's 1 of its own");
    assert_eq!(
        passes(r, "appC", 2),
        1,
        "appC: other's 1 of its own; 3 of default spent"
    );
    assert_eq!(
        passes(r, "appD", 1),
        0,
        "default's 3 are spent for every caller"
    );
    clock.advance(std::time::Duration::from_secs(1));
    // The origin from the scope the call runs in, as for authority rules.
    let scoped = context::with_origin("APPA ", || {
        (0..2)
            .filter(|_| EntryBuilder::new(r).enter().is_ok())
            .count()
    });
    assert_eq!(
        scoped, 1,
        "the scope's origin, trimmed and any case, is appA"
    );
    rules::load_flow_rules(vec![]).expect("rules clear");
}

#[test]
fn a_flood_of_origins_on_an_other_rule_does_not_free_a_spent_origin() {
    let _clock = MockClock::install();
    let r = "parity-origin-flood";
    rules::load_flow_rules(vec![FlowRule::qps(r, 1.0).other_origins()]).expect("rules load");
    assert_eq!(passes(r, "victim", 2), 1);
    for i in 0..20_000 {
        let _ = call(r, &format!("junk-{i}"));
    }
    assert_eq!(passes(r, "victim", 1), 0, "the spent origin stays spent");
    rules::load_flow_rules(vec![]).expect("rules clear");
}

#[test]
fn origins_are_refused_where_they_mean_nothing() {
    let _clock = MockClock::install();
    let field = |rule: FlowRule| rules::load_flow_rules(vec![rule]).unwrap_err().field();
    assert_eq!(field(FlowRule::qps("parity-o", 1.0).origin(" ")), "origin");
    assert_eq!(
        field(FlowRule::qps("parity-o", 1.0).origin("other")),
        "origin"
    );
    assert_eq!(
        field(FlowRule::concurrency("parity-o", 1).origin("a")),
        "origin"
    );
    assert_eq!(
        field(FlowRule::qps("parity-o", 1.0).origin("a").relate("b")),
        "origin"
    );
    let err = RuleSet::from_json(
        r#"{"flow": [{ "resource": "parity-o", "count": 1, "grade": 0, "limitApp": "appA" }]}"#,
    )
    .unwrap_err();
    assert_eq!(err.entries()[0].field.as_deref(), Some("limitApp"), "{err}");
}

#[test]
fn our_files_read_and_write_origin() {
    let set = RuleSet::from_yaml(
        "flow:\n  - { resource: a, threshold: 1, origin: appA }\n  - { resource: a, threshold: 2, origin: other }\n  - { resource: a, threshold: 3, origin: default }\n",
    )
    .expect("reads");
    assert_eq!(
        set.flow,
        vec![
            FlowRule::qps("a", 1.0).origin("appA"),
            FlowRule::qps("a", 2.0).other_origins(),
            FlowRule::qps("a", 3.0),
        ]
    );
    assert_eq!(set.flow[0].origin, FlowOrigin::Named("appA".into()));
    let json = set.to_json().expect("writes");
    assert_eq!(RuleSet::from_json(&json).expect("reads back"), set);
}
