//! Shadow rules through the public API, with the mock clock: a shadow rule is evaluated with its
//! own state, counts what it would refuse, and refuses, delays or takes nothing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{
    self, AuthorityRule, CircuitBreakerRule, FlowRule, HotspotRule, OutlierRule, RuleSet,
    SystemRule,
};
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind, Entry, EntryBuilder};

/// Enters `resource` once, dropping the entry at once: `true` if admitted.
fn call(resource: &str) -> bool {
    EntryBuilder::new(resource).enter().is_ok()
}

/// `n` calls of `resource` at the current instant; how many were admitted.
fn calls(resource: &str, n: usize) -> usize {
    (0..n).filter(|_| call(resource)).count()
}

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).unwrap_or_else(|| panic!("{resource} was entered"))
}

fn clear() {
    let cleared = rules::load(RuleSet::default());
    assert!(cleared.is_ok(), "{cleared:?}");
}

#[sentinel(resource = "shadow-attr", qps = 2, concurrency = 1, shadow = true)]
fn watched(hold: Option<&dyn Fn()>) -> Result<(), BlockError> {
    if let Some(inside) = hold {
        inside();
    }
    Ok(())
}

#[test]
fn the_attributes_shadow_argument_makes_its_rules_shadow_rules() {
    let clock = MockClock::install();
    for _ in 0..5 {
        assert_eq!(watched(None), Ok(()), "nothing refused");
    }
    let s = stats("shadow-attr");
    assert_eq!((s.block_total, s.pass_total), (0, 5));
    assert_eq!(s.shadow_block_total_by_rule.flow, 3, "{s:?}");
    // In a new second, a call inside another: over the shadow concurrency limit of 1, and
    // still admitted.
    clock.advance(Duration::from_secs(1));
    let nested = || assert_eq!(watched(None), Ok(()));
    assert_eq!(watched(Some(&nested)), Ok(()));
    let s = stats("shadow-attr");
    assert_eq!(s.shadow_block_total_by_rule.concurrency, 1, "{s:?}");
    assert_eq!(s.block_total, 0);
    // A loaded rule without `shadow` replaces the attribute's flow rules, enforced.
    rules::load_flow_rules(vec![FlowRule::qps("shadow-attr", 0.0)]).unwrap();
    assert!(watched(None).is_err());
    clear();
}

#[test]
fn a_shadow_qps_rule_lets_every_call_through_and_counts_what_it_would_refuse() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("shadow-qps", 5.0).shadow(true)]).unwrap();
    assert_eq!(calls("shadow-qps", 20), 20, "a shadow rule refuses nothing");
    let s = stats("shadow-qps");
    assert_eq!(s.shadow_block_total, 15, "{s:?}");
    assert_eq!(s.shadow_block_total_by_rule.flow, 15);
    assert_eq!((s.block_total, s.pass_total), (0, 20));
    clear();
}

#[test]
fn an_enforced_rule_beside_a_shadow_rule_behaves_exactly_as_alone() {
    let clock = MockClock::install();
    let shadowed = "shadow-beside";
    let alone = "shadow-beside-alone";
    rules::load_flow_rules(vec![
        FlowRule::qps(shadowed, 10.0),
        FlowRule::qps(shadowed, 4.0).shadow(true),
        FlowRule::concurrency(shadowed, 1).shadow(true),
        FlowRule::qps(alone, 10.0),
    ])
    .unwrap();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(shadowed, 1)
        .min_requests(1)
        .recovery(Duration::from_secs(5))
        .shadow(true)])
    .unwrap();
    rules::load_hotspot_rules(vec![HotspotRule::qps(shadowed, 0, 1.0).shadow(true)]).unwrap();
    for second in 0..3 {
        let mut seen = [Vec::new(), Vec::new()];
        for (i, resource) in [shadowed, alone].into_iter().enumerate() {
            for call in 0..25u64 {
                let entry = EntryBuilder::new(resource).param(&(call % 2)).enter();
                if let Ok(entry) = &entry {
                    if call % 3 == 0 {
                        entry.set_error();
                    }
                }
                seen[i].push(entry.is_ok());
            }
        }
        assert_eq!(
            seen[0], seen[1],
            "second {second}: the same calls pass with and without the shadow rules"
        );
        assert_eq!(
            seen[0].iter().filter(|p| **p).count(),
            10,
            "second {second}"
        );
        clock.advance(Duration::from_secs(1));
    }
    let (s, a) = (stats(shadowed), stats(alone));
    assert_eq!((s.pass_total, s.block_total), (a.pass_total, a.block_total));
    assert_eq!(s.block_total_by_rule, a.block_total_by_rule);
    // The shadow breaker opened on the errors and would refuse the rest; a call it would
    // refuse is not counted as admitted by the shadow rules before it.
    assert!(s.shadow_block_total_by_rule.circuit_breaker > 0, "{s:?}");
    assert_eq!(a.shadow_block_total, 0);
    clear();
}

#[test]
fn an_enforced_10_per_second_beside_a_shadow_4_per_second_admits_exactly_10() {
    let _clock = MockClock::install();
    let r = "shadow-10-4";
    rules::load_flow_rules(vec![
        FlowRule::qps(r, 10.0),
        FlowRule::qps(r, 4.0).shadow(true),
    ])
    .unwrap();
    assert_eq!(calls(r, 20), 10);
    let s = stats(r);
    assert_eq!(s.block_total_by_rule.flow, 10, "{s:?}");
    // The shadow rule sees only the 10 calls the enforced one admitted.
    assert_eq!(s.shadow_block_total_by_rule.flow, 6, "{s:?}");
    clear();
}

#[test]
fn a_shadow_breaker_opens_and_counts_every_call_while_open_without_blocking_one() {
    let clock = MockClock::install();
    let r = "shadow-breaker";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listened = Arc::clone(&seen);
    sentinel_runtime::breaker::on_state_change(move |change| {
        if change.resource == "shadow-breaker" {
            let mut seen = listened.lock().unwrap_or_else(|e| e.into_inner());
            seen.push((change.from, change.to, change.shadow));
        }
    });
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(r, 2)
        .min_requests(1)
        .recovery(Duration::from_secs(1))
        .shadow(true)])
    .unwrap();
    for _ in 0..2 {
        EntryBuilder::new(r).enter().unwrap().set_error();
    }
    assert_eq!(calls(r, 7), 7, "an open shadow breaker blocks nothing");
    let s = stats(r);
    assert_eq!(s.shadow_block_total_by_rule.circuit_breaker, 7, "{s:?}");
    assert_eq!(s.block_total, 0);
    assert_eq!(
        s.circuit, None,
        "a shadow breaker is not the resource's breaker"
    );
    // After the recovery the shadow breaker probes with a real call, and closes on its success.
    clock.advance(Duration::from_millis(1_100));
    assert!(call(r), "the probe");
    assert_eq!(calls(r, 3), 3);
    assert_eq!(
        stats(r).shadow_block_total,
        7,
        "closed again: nothing more counted"
    );
    use sentinel_runtime::breaker::CircuitState::{Closed, HalfOpen, Open};
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        seen,
        vec![
            (Closed, Open, true),
            (Open, HalfOpen, true),
            (HalfOpen, Closed, true)
        ],
        "listeners learn the transitions as a shadow breaker's"
    );
    assert!(
        !metrics::circuit_breaker_transitions()
            .iter()
            .any(|t| t.0 == r),
        "not counted as the resource's transitions"
    );
    clear();
}

#[test]
fn a_shadow_throttling_rule_never_waits_and_counts_the_wait() {
    let clock = MockClock::install();
    let r = "shadow-throttle";
    rules::load_flow_rules(vec![FlowRule::qps(r, 10.0)
        .throttle(Duration::from_secs(2))
        .shadow(true)])
    .unwrap();
    let start = clock.now_nanos();
    assert_eq!(calls(r, 5), 5);
    assert_eq!(
        clock.now_nanos(),
        start,
        "no call waited (the mock clock did not move)"
    );
    let s = stats(r);
    assert_eq!(s.shadow_wait_total, 4, "{s:?}");
    // Turns 100, 200, 300 and 400 ms away.
    assert_eq!(s.shadow_wait_time, Duration::from_millis(1_000), "{s:?}");
    assert_eq!(s.shadow_block_total, 0);
    clear();
}

#[test]
fn a_shadow_allow_list_counts_the_origin_it_would_deny() {
    let _clock = MockClock::install();
    let r = "shadow-allow";
    rules::load_authority_rules(vec![AuthorityRule::allow(r, ["ops"]).shadow(true)]).unwrap();
    assert!(EntryBuilder::new(r).origin("ops").enter().is_ok());
    assert!(EntryBuilder::new(r).origin("guest").enter().is_ok());
    let s = stats(r);
    assert_eq!(s.shadow_block_total_by_rule.authority, 1, "{s:?}");
    assert_eq!(s.shadow_block_total, 1);
    clear();
}

#[test]
fn shadow_true_in_a_yaml_file_and_back() {
    let _clock = MockClock::install();
    let set = RuleSet::from_yaml(
        "flow:\n  - { resource: shadow-yaml, threshold: 1, shadow: true }\n  \
         - { resource: shadow-yaml, threshold: 5 }\n",
    )
    .unwrap();
    assert_eq!(
        set.flow,
        vec![
            FlowRule::qps("shadow-yaml", 1.0).shadow(true),
            FlowRule::qps("shadow-yaml", 5.0)
        ]
    );
    let yaml = set.to_yaml().unwrap();
    assert_eq!(yaml.matches("shadow: true").count(), 1, "{yaml}");
    assert!(!yaml.contains("shadow: false"), "{yaml}");
    rules::load(set).unwrap();
    assert_eq!(calls("shadow-yaml", 8), 5);
    assert_eq!(
        stats("shadow-yaml").shadow_block_total,
        4,
        "1 of the 5 admitted"
    );
    clear();
}

/// Clears the rules (the system rules among them: they are process-wide) when a test ends,
/// even by a failed assertion.
struct ClearSystem;

impl Drop for ClearSystem {
    fn drop(&mut self) {
        let _ = rules::load(RuleSet::default());
    }
}

fn inbound(resource: &str) -> Result<Entry, BlockError> {
    EntryBuilder::new(resource).inbound().enter()
}

/// `n` inbound calls of `resource` at the current instant, each dropped at once: which were
/// admitted.
fn inbound_calls(resource: &str, n: usize) -> Vec<bool> {
    (0..n).map(|_| inbound(resource).is_ok()).collect()
}

#[test]
fn shadow_true_on_a_system_rule_in_code_and_in_a_file() {
    let _clock = MockClock::install();
    let _clear = ClearSystem;
    let rule = SystemRule::new().qps(10.0).shadow(true);
    assert_eq!(rule.validate(), Ok(()));
    assert_eq!(
        SystemRule::new()
            .shadow(true)
            .validate()
            .unwrap_err()
            .field(),
        "cpu_usage",
        "a shadow rule still needs a limit"
    );
    let set = RuleSet::from_yaml("system:\n  - { qps: 10, shadow: true }\n").unwrap();
    assert_eq!(set.system, vec![rule.clone()]);
    rules::load(set).unwrap();
    assert_eq!(rules::system_rules(), vec![rule]);
}

#[test]
fn a_shadow_system_concurrency_limit_admits_every_inbound_call_and_counts_those_over_it() {
    let _clock = MockClock::install();
    let _clear = ClearSystem;
    let r = "shadow-sys-inside";
    rules::load_system_rules(vec![SystemRule::new().concurrency(3).shadow(true)]).unwrap();
    let held: Vec<Entry> = (0..5).filter_map(|_| inbound(r).ok()).collect();
    assert_eq!(held.len(), 5, "a shadow system rule refuses nothing");
    let s = stats(r);
    assert_eq!(s.shadow_block_total, 2, "the 4th and 5th are over 3: {s:?}");
    assert_eq!(s.shadow_block_total_by_rule.system, 2, "{s:?}");
    assert_eq!((s.block_total, s.pass_total), (0, 5));
    assert!(
        EntryBuilder::new(r).enter().is_ok(),
        "an outbound call is not checked"
    );
    assert_eq!(stats(r).shadow_block_total, 2);
    let text = metrics::prometheus::encode_text();
    let line = format!("sentinel_shadow_block_total{{resource=\"{r}\",rule=\"system\"}} 2");
    assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    drop(held);
    // The exits gave the 3 places back (the 2 calls over the limit took none).
    let held: Vec<Entry> = (0..3).filter_map(|_| inbound(r).ok()).collect();
    assert_eq!(
        stats(r).shadow_block_total,
        2,
        "the places came back at the exits"
    );
    drop(inbound(r));
    assert_eq!(stats(r).shadow_block_total, 3, "a 4th inside is over again");
    drop(held);
    // A panicking call gives its place back too.
    let two: Vec<Entry> = (0..2).filter_map(|_| inbound(r).ok()).collect();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _third = inbound(r);
        panic!("the body fails");
    }));
    assert!(panicked.is_err());
    let third = inbound(r);
    assert_eq!(
        stats(r).shadow_block_total,
        3,
        "the panicking call gave its place back"
    );
    drop(inbound(r));
    assert_eq!(stats(r).shadow_block_total, 4);
    drop((two, third));
    assert_eq!(stats(r).block_total, 0);
}

#[test]
fn a_shadow_system_qps_limit_counts_exactly_the_calls_over_it() {
    let clock = MockClock::install();
    let _clear = ClearSystem;
    clock.advance(Duration::from_secs(3));
    let r = "shadow-sys-qps";
    rules::load_system_rules(vec![SystemRule::new().qps(5.0).shadow(true)]).unwrap();
    assert!(
        inbound_calls(r, 20).iter().all(|&p| p),
        "20 of 20 go through"
    );
    let s = stats(r);
    assert_eq!(s.shadow_block_total_by_rule.system, 15, "{s:?}");
    assert_eq!(s.shadow_block_total, 15);
    assert_eq!((s.block_total, s.pass_total), (0, 20));
    // A new window: 5 more fit.
    clock.advance(Duration::from_secs(1));
    assert!(inbound_calls(r, 6).iter().all(|&p| p));
    assert_eq!(stats(r).shadow_block_total, 16);
}

#[test]
fn an_enforced_system_rule_beside_a_shadow_one_behaves_exactly_as_alone() {
    let clock = MockClock::install();
    let _clear = ClearSystem;
    clock.advance(Duration::from_secs(3));
    let enforced = SystemRule::new().qps(10.0).concurrency(6);
    // Each phase: 25 calls at one instant, the first 8 held inside together, the others one
    // at a time; then a new window.
    let phase = |resource: &str| -> Vec<bool> {
        let held: Vec<_> = (0..8).map(|_| inbound(resource)).collect();
        let mut seen: Vec<bool> = held.iter().map(Result::is_ok).collect();
        drop(held);
        seen.extend(inbound_calls(resource, 17));
        clock.advance(Duration::from_secs(2));
        seen
    };
    rules::load_system_rules(vec![enforced.clone()]).unwrap();
    let alone = phase("shadow-sys-alone");
    rules::load_system_rules(vec![]).unwrap();
    rules::load_system_rules(vec![
        enforced.clone(),
        SystemRule::new().qps(4.0).shadow(true),
        SystemRule::new().concurrency(1).shadow(true),
    ])
    .unwrap();
    let beside = phase("shadow-sys-beside");
    assert_eq!(
        alone, beside,
        "the same calls pass with and without the shadow rules"
    );
    assert_eq!(alone.iter().filter(|&&p| p).count(), 10, "{alone:?}");
    let (a, b) = (stats("shadow-sys-alone"), stats("shadow-sys-beside"));
    assert_eq!((a.pass_total, a.block_total), (b.pass_total, b.block_total));
    assert_eq!(a.block_total_by_rule, b.block_total_by_rule);
    assert_eq!(a.shadow_block_total, 0);
    // Of the 10 admitted, the first 6 were held: the shadow concurrency limit of 1 would refuse
    // 5 of those; of the 4 after them (each alone inside), the shadow QPS limit of 4 had
    // already admitted 1 and admits 3 more, so it would refuse 1.
    assert_eq!(b.shadow_block_total_by_rule.system, 6, "{b:?}");
}

#[test]
fn a_shadow_system_rule_promoted_keeps_its_window() {
    let clock = MockClock::install();
    let _clear = ClearSystem;
    clock.advance(Duration::from_secs(3));
    let r = "shadow-sys-promote";
    rules::load_system_rules(vec![SystemRule::new().qps(2.0).shadow(true)]).unwrap();
    assert!(inbound_calls(r, 6).iter().all(|&p| p));
    assert_eq!(stats(r).shadow_block_total, 4);
    // The shadow gate admitted 2 of the 6 in this window (6 inbound passes): enforced at 4/s on
    // the same gate, 2 more pass now (a gate started afresh would count the 6).
    rules::load_system_rules(vec![SystemRule::new().qps(4.0)]).unwrap();
    let after = inbound_calls(r, 5);
    assert_eq!(after, [true, true, false, false, false], "kept window");
    assert_eq!(stats(r).block_total_by_rule.system, 3);
    // And back to shadow: the enforced gate's counts go with it.
    rules::load_system_rules(vec![SystemRule::new().qps(4.0).shadow(true)]).unwrap();
    assert!(inbound_calls(r, 2).iter().all(|&p| p));
    assert_eq!(stats(r).shadow_block_total, 6, "{:?}", stats(r));
}

#[test]
fn a_waiting_inbound_entry_dropped_gives_back_its_shadow_system_place() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let _clock = MockClock::install();
    let _clear = ClearSystem;
    let r = "shadow-sys-cancelled";
    rules::load_flow_rules(vec![FlowRule::qps(r, 10.0).throttle(Duration::from_secs(1))]).unwrap();
    rules::load_system_rules(vec![SystemRule::new().concurrency(1).shadow(true)]).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let _in_runtime = runtime.enter(); // tokio timers need a runtime context when polled
    let mut cx = Context::from_waker(Waker::noop());
    let enter = || Box::pin(EntryBuilder::new(r).inbound().enter_async());
    // A: turn now; it leaves at once (its shadow place back).
    drop(inbound(r).unwrap());
    // B: turn 100 ms away; while it waits it holds the shadow rule's one place.
    let mut b = enter();
    assert!(b.as_mut().poll(&mut cx).is_pending());
    drop(b);
    // C: the place B held came back when B was dropped, so the shadow rule admits C.
    let mut c = enter();
    assert!(c.as_mut().poll(&mut cx).is_pending());
    assert_eq!(stats(r).shadow_block_total, 0, "{:?}", stats(r));
    // D, while C waits, is one over.
    let mut d = enter();
    assert!(d.as_mut().poll(&mut cx).is_pending());
    assert_eq!(stats(r).shadow_block_total_by_rule.system, 1);
    drop((c, d));
}

#[test]
fn promotion_keeps_the_counts_watched_in_shadow() {
    let clock = MockClock::install();
    let r = "shadow-promote";
    let rule = FlowRule::qps(r, 2.0);
    rules::load_flow_rules(vec![rule.clone().shadow(true)]).unwrap();
    for second in 0..3 {
        assert_eq!(calls(r, 5), 5, "second {second}");
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(stats(r).shadow_block_total, 9, "would block 3/s");
    // Mid-second, the rule flips to enforced: the 2 it admitted at this instant are kept.
    assert_eq!(calls(r, 2), 2);
    rules::load_flow_rules(vec![rule.clone()]).unwrap();
    assert_eq!(calls(r, 3), 0, "the kept window is full");
    clock.advance(Duration::from_secs(1));
    for second in 0..2 {
        assert_eq!(calls(r, 5), 2, "blocks 3/s, second {second}");
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(stats(r).block_total, 3 + 6);
    // And back: enforced to shadow keeps the counts too (the window at this instant is full).
    assert_eq!(calls(r, 2), 2);
    rules::load_flow_rules(vec![rule.shadow(true)]).unwrap();
    let before = stats(r).shadow_block_total;
    assert_eq!(calls(r, 1), 1);
    assert_eq!(stats(r).shadow_block_total, before + 1);
    clear();
}

#[test]
fn promotion_keeps_an_open_breaker_open() {
    let _clock = MockClock::install();
    let r = "shadow-promote-breaker";
    let rule = CircuitBreakerRule::error_count(r, 1)
        .min_requests(1)
        .recovery(Duration::from_secs(10));
    rules::load_circuit_breaker_rules(vec![rule.clone().shadow(true)]).unwrap();
    EntryBuilder::new(r).enter().unwrap().set_error();
    assert!(call(r), "open in shadow: passes");
    rules::load_circuit_breaker_rules(vec![rule]).unwrap();
    let err = EntryBuilder::new(r).enter().unwrap_err();
    assert_eq!(
        err.kind(),
        BlockKind::CircuitBreaker,
        "the promoted breaker is still open"
    );
    clear();
}

#[test]
fn a_shadow_rule_never_shares_state_with_an_enforced_twin() {
    let _clock = MockClock::install();
    let r = "shadow-twin";
    let rule = FlowRule::qps(r, 3.0);
    rules::load_flow_rules(vec![rule.clone()]).unwrap();
    assert_eq!(calls(r, 2), 2);
    // The same rule added in shadow: it must not count on the enforced gate.
    rules::load_flow_rules(vec![rule.clone(), rule.shadow(true)]).unwrap();
    assert_eq!(calls(r, 2), 1, "the enforced gate kept its 2");
    assert_eq!(
        stats(r).shadow_block_total,
        0,
        "the shadow gate started on its own"
    );
    clear();
}

#[test]
fn the_prometheus_line_carries_the_shadow_count() {
    let _clock = MockClock::install();
    let r = "shadow-prom";
    rules::load_flow_rules(vec![FlowRule::qps(r, 1.0).shadow(true)]).unwrap();
    assert_eq!(calls(r, 4), 4);
    let text = metrics::prometheus::encode_text();
    let line = format!("sentinel_shadow_block_total{{resource=\"{r}\",rule=\"flow\"}} 3");
    assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    clear();
}

#[test]
fn a_shadow_concurrency_rule_gives_its_places_back_at_exit_and_on_panic() {
    let _clock = MockClock::install();
    let r = "shadow-inside";
    rules::load_flow_rules(vec![FlowRule::concurrency(r, 1).shadow(true)]).unwrap();
    let first = EntryBuilder::new(r).enter().unwrap();
    let second = EntryBuilder::new(r).enter().unwrap();
    assert_eq!(stats(r).shadow_block_total_by_rule.concurrency, 1);
    drop((first, second));
    let third = EntryBuilder::new(r).enter().unwrap();
    drop(third);
    assert_eq!(
        stats(r).shadow_block_total,
        1,
        "the place came back at the exit"
    );
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _inside = EntryBuilder::new(r).enter().unwrap();
        panic!("the body fails");
    }));
    assert!(panicked.is_err());
    let after = EntryBuilder::new(r).enter().unwrap();
    drop(after);
    assert_eq!(
        stats(r).shadow_block_total,
        1,
        "the panicking call gave its place back"
    );
    assert_eq!(stats(r).block_total, 0);
    clear();
}

#[test]
fn a_shadow_hotspot_concurrency_rule_gives_its_places_back() {
    let _clock = MockClock::install();
    let r = "shadow-hot-inside";
    rules::load_hotspot_rules(vec![HotspotRule::concurrency(r, 0, 1).shadow(true)]).unwrap();
    let enter = || EntryBuilder::new(r).param(&7u64).enter().unwrap();
    let (a, b) = (enter(), enter());
    assert_eq!(stats(r).shadow_block_total_by_rule.hotspot, 1);
    drop((a, b));
    drop(enter());
    assert_eq!(stats(r).shadow_block_total, 1);
    clear();
}

#[test]
fn a_shadow_cluster_rule_is_refused_by_its_field() {
    use sentinel_runtime::rules::ClusterThreshold;
    let flow = FlowRule::qps("shadow-cluster", 5.0)
        .cluster(ClusterThreshold::Global)
        .shadow(true);
    assert_eq!(flow.validate().unwrap_err().field(), "cluster");
    let hot = HotspotRule::qps("shadow-cluster", 0, 5.0)
        .cluster(ClusterThreshold::Global)
        .shadow(true);
    assert_eq!(hot.validate().unwrap_err().field(), "cluster");
}

#[test]
fn promotion_with_a_new_threshold_keeps_the_shadow_window() {
    let _clock = MockClock::install();
    let r = "shadow-promote-raised";
    rules::load_flow_rules(vec![FlowRule::qps(r, 2.0).shadow(true)]).unwrap();
    assert_eq!(calls(r, 6), 6);
    // The shadow gate admitted 2 of the 6 in this window (the resource passed 6): enforced at
    // 4/s on the same gate, 2 more pass now (a gate started afresh would count the 6).
    rules::load_flow_rules(vec![FlowRule::qps(r, 4.0)]).unwrap();
    assert_eq!(calls(r, 5), 2);
    clear();
}

#[test]
fn a_waiting_entry_dropped_gives_back_what_the_shadow_part_holds() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let _clock = MockClock::install();
    let r = "shadow-cancelled";
    rules::load_flow_rules(vec![
        FlowRule::qps(r, 10.0).throttle(Duration::from_secs(1)),
        FlowRule::concurrency(r, 1).shadow(true),
    ])
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let _in_runtime = runtime.enter(); // tokio timers need a runtime context when polled
    let mut cx = Context::from_waker(Waker::noop());
    // A: turn now; it leaves at once (its shadow place back).
    drop(EntryBuilder::new(r).enter().unwrap());
    // B: turn 100 ms away; while it waits it holds the shadow rule's one place.
    let mut b = Box::pin(EntryBuilder::new(r).enter_async());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    drop(b);
    // C: the place B held came back when B was dropped, so the shadow rule admits C.
    let mut c = Box::pin(EntryBuilder::new(r).enter_async());
    assert!(c.as_mut().poll(&mut cx).is_pending());
    assert_eq!(stats(r).shadow_block_total, 0, "{:?}", stats(r));
    drop(c);
    clear();
}

#[test]
fn a_shadow_outlier_rule_ejects_an_endpoint_without_refusing_its_calls_and_keeps_it_when_promoted()
{
    let _clock = MockClock::install();
    const R: &str = "shadow-outlier";
    let rule = OutlierRule::consecutive_errors(R, 2).recovery(Duration::from_secs(30));
    rules::load_outlier_rules(vec![rule.clone().shadow(true)]).unwrap();
    let call = |endpoint: &str, fail: bool| {
        let entry = EntryBuilder::new(R).endpoint(endpoint).enter();
        if let (Ok(entry), true) = (&entry, fail) {
            entry.set_error();
        }
        entry.is_ok()
    };
    assert!(
        call("e1", true) && call("e1", true),
        "two errors: ejected, in shadow"
    );
    assert!(call("e1", false), "a shadow ejection refuses nothing");
    assert!(call("e2", false));
    let s = stats(R);
    assert_eq!(s.shadow_block_total_by_rule.outlier, 1, "{s:?}");
    assert_eq!(s.block_total, 0);
    // Promoted: the same rule, enforced, keeps the ejection it made in shadow.
    rules::load_outlier_rules(vec![rule]).unwrap();
    let refused = EntryBuilder::new(R).endpoint("e1").enter().unwrap_err();
    assert_eq!(refused.kind(), BlockKind::Outlier);
    assert!(call("e2", false), "the healthy endpoint");
    rules::load_outlier_rules(vec![]).unwrap();
}
