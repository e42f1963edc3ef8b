//! Rule validity from Sentinel's own tests, through the loading API: a blank resource is
//! refused for every kind, naming the field, and the rules in force stay
//! (`FlowRuleUtil.isValidRule`, `DegradeRuleManagerTest.testIsValidRule`, `ParamFlowRuleUtil`,
//! `AuthorityRuleManager`); Sentinel's system `maxThread: n` lets n + 1 calls in
//! (`SystemRuleManager.checkSystem` blocks when `currentThread > maxThread`).

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{
    self, AuthorityRule, CircuitBreakerRule, FlowRule, HotspotRule, RuleSet,
};
use sentinel_runtime::{entry, BlockKind, EntryBuilder};

#[test]
fn blank_resources_are_refused_in_code_for_every_kind_and_the_rules_in_force_stay() {
    let _clock = MockClock::install();
    let good = "parity-blank-good";
    rules::load_flow_rules(vec![FlowRule::qps(good, 1.0)]).expect("a good rule loads");
    for blank in ["", "   ", "\t\n"] {
        let flow = rules::load_flow_rules(vec![FlowRule::qps(blank, 5.0)]);
        let breaker =
            rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(blank, 5)]);
        let hotspot = rules::load_hotspot_rules(vec![HotspotRule::qps(blank, 0, 1.0)]);
        let authority = rules::load_authority_rules(vec![AuthorityRule::allow(blank, ["ops"])]);
        for (kind, result) in [
            ("flow", flow),
            ("circuit_breaker", breaker),
            ("hotspot", hotspot),
            ("authority", authority),
        ] {
            let err = result.expect_err("a blank resource is refused");
            assert_eq!(err.field(), "resource", "{kind} {blank:?}: {err}");
        }
        let mut set = RuleSet::new();
        set.flow.push(FlowRule::qps(blank, 5.0));
        let err = rules::load(set).expect_err("a blank resource is refused");
        assert_eq!(err.entries()[0].field.as_deref(), Some("resource"), "{err}");
    }
    // The good rule is still in force: 1 a second.
    assert!(entry(good).is_ok());
    assert_eq!(entry(good).unwrap_err().kind(), BlockKind::Flow);
    rules::load(RuleSet::new()).expect("rules clear");
}

#[test]
fn sentinel_max_thread_blocks_only_above_it() {
    let _clock = MockClock::install();
    let set = RuleSet::from_json(r#"{"system": [{ "maxThread": 2 }]}"#).expect("reads");
    rules::load(set).expect("loads");
    let call = || EntryBuilder::new("parity-max-thread").inbound().enter();
    let inside: Vec<_> = (0..3)
        .map(|i| call().unwrap_or_else(|e| panic!("call {i}: {e}")))
        .collect();
    assert_eq!(
        call().unwrap_err().kind(),
        BlockKind::System,
        "3 inside: more than maxThread 2"
    );
    drop(inside);
    rules::load(RuleSet::new()).expect("rules clear");
}
