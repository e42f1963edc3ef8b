//! The endpoint table: ejections, probes, the share bound, the bound on endpoints; and a model.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

const S: u64 = 1_000_000_000;
const T0: u64 = 3_600 * S;
/// The default share, for calls made without rules at hand.
const HALF: f64 = 0.5;

fn rules(n: u32) -> Vec<OutlierRule> {
    vec![OutlierRule::consecutive_errors("r", n).recovery(Duration::from_secs(10))]
}

/// One call to `name` at `at` that fails or not; whether it was admitted, and the change.
fn call(
    t: &mut EndpointTable,
    name: &str,
    at: u64,
    error: bool,
    rules: &[OutlierRule],
) -> (bool, Option<Change>) {
    match t.admit(name, at, largest_share(rules)) {
        Ok(ticket) => (true, t.report(ticket, at, error, rules)),
        Err(_) => (false, None),
    }
}

#[test]
fn consecutive_errors_eject_for_the_recovery_then_one_probe_decides() {
    let (r, mut t) = (rules(3), EndpointTable::new(16));
    // Two other endpoints seen, so one of three may be out.
    call(&mut t, "b", T0, false, &r);
    call(&mut t, "c", T0, false, &r);
    call(&mut t, "a", T0, true, &r);
    call(&mut t, "a", T0, false, &r); // a success breaks the run
    call(&mut t, "a", T0, true, &r);
    assert_eq!(call(&mut t, "a", T0, true, &r), (true, None));
    let (admitted, change) = call(&mut t, "a", T0, true, &r);
    assert!(admitted);
    assert!(matches!(change, Some(Change::Ejected { nanos, .. }) if nanos == 10 * S));
    assert_eq!(t.admit("a", T0 + 10 * S - 1, HALF), Err(T0 + 10 * S));
    assert_eq!(t.ejected(T0), ["a"]);
    // The probe, and no other call while it is out.
    let probe = t.admit("a", T0 + 10 * S, HALF).unwrap();
    assert!(probe.is_probe());
    assert_eq!(t.admit("a", T0 + 10 * S, HALF), Err(0));
    // It fails: ejected twice as long.
    let change = t.report(probe, T0 + 11 * S, true, &r);
    assert!(matches!(change, Some(Change::Ejected { nanos, .. }) if nanos == 20 * S));
    assert!(t.admit("a", T0 + 30 * S, HALF).is_err());
    let probe = t.admit("a", T0 + 31 * S, HALF).unwrap();
    assert!(matches!(
        t.report(probe, T0 + 31 * S, false, &r),
        Some(Change::Returned { .. })
    ));
    assert!(t.ejected(T0 + 31 * S).is_empty());
    assert!(t.admit("a", T0 + 31 * S, HALF).is_ok_and(|t| !t.is_probe()));
}

#[test]
fn failed_probes_eject_longer_up_to_the_cap() {
    let (r, mut t) = (rules(1), EndpointTable::new(4));
    let mut at = T0;
    call(&mut t, "a", at, true, &r);
    let mut lengths = Vec::new();
    for _ in 0..8 {
        let Err(until) = t.admit("a", at, HALF) else {
            panic!("ejected")
        };
        at = until;
        let probe = t.admit("a", at, HALF).unwrap();
        if let Some(Change::Ejected { nanos, .. }) = t.report(probe, at, true, &r) {
            lengths.push(nanos / S);
        }
    }
    assert_eq!(lengths, [20, 40, 80, 160, 160, 160, 160, 160]);
}

#[test]
fn a_probe_given_back_or_lost_lets_another_call_probe() {
    let (r, mut t) = (rules(1), EndpointTable::new(4));
    call(&mut t, "a", T0, true, &r);
    let probe = t.admit("a", T0 + 10 * S, HALF).unwrap();
    t.release(probe, T0 + 10 * S);
    let again = t.admit("a", T0 + 10 * S, HALF).unwrap();
    assert!(again.is_probe());
    // Never reports: after `recovery`, another probe replaces it.
    assert!(t.admit("a", T0 + 19 * S, HALF).is_err());
    assert!(t.admit("a", T0 + 20 * S, HALF).unwrap().is_probe());
}

#[test]
fn the_share_bound_allows_one_of_three_at_half_and_a_lone_endpoint() {
    let r = vec![OutlierRule::consecutive_errors("r", 1).max_ejection_percent(0.5)];
    let mut t = EndpointTable::new(16);
    for name in ["a", "b", "c"] {
        call(&mut t, name, T0, false, &r);
    }
    for name in ["a", "b", "c"] {
        call(&mut t, name, T0, true, &r);
    }
    assert_eq!(t.ejected(T0), ["a"], "3 * 0.5 rounds down to 1");
    // A fourth endpoint: 4 * 0.5 = 2 may be out.
    call(&mut t, "d", T0, false, &r);
    call(&mut t, "b", T0, true, &r);
    assert_eq!(t.ejected(T0), ["a", "b"]);
    let mut lone = EndpointTable::new(16);
    call(&mut lone, "only", T0, true, &r);
    assert_eq!(
        lone.ejected(T0),
        ["only"],
        "one endpoint may always be ejected"
    );
    // Endpoints not seen for a minute leave the share's base.
    let mut t = EndpointTable::new(16);
    for name in ["a", "b", "c", "d"] {
        call(&mut t, name, T0, false, &r);
    }
    call(&mut t, "a", T0 + 61 * S, true, &r);
    call(&mut t, "b", T0 + 61 * S, true, &r);
    assert_eq!(t.ejected(T0 + 61 * S), ["a"]);
}

#[test]
fn a_lapsed_ejection_holds_its_place_until_its_probe_or_for_a_minute() {
    let r = vec![OutlierRule::consecutive_errors("r", 1)
        .recovery(Duration::from_secs(10))
        .max_ejection_percent(0.5)];
    let mut t = EndpointTable::new(16);
    for name in ["a", "b", "c", "d"] {
        call(&mut t, name, T0, false, &r);
    }
    call(&mut t, "a", T0, true, &r);
    call(&mut t, "b", T0, true, &r);
    // a's and b's ejections are over, their probes have not come: they still hold the 2
    // places of 4 * 0.5, so c stays in.
    let later = T0 + 10 * S;
    assert!(t.ejected(later).is_empty(), "their calls are not blocked");
    call(&mut t, "c", later, true, &r);
    assert!(t.ejected(later).is_empty(), "c is not ejected");
    // The probes come and fail: ejected again, within the share.
    for name in ["a", "b"] {
        let probe = t.admit(name, later, HALF).unwrap();
        assert!(probe.is_probe());
        assert!(matches!(
            t.report(probe, later, true, &r),
            Some(Change::Ejected { .. })
        ));
    }
    assert_eq!(t.ejected(later), ["a", "b"]);
}

#[test]
fn a_failed_probe_beyond_a_lowered_share_brings_its_endpoint_back() {
    let half = vec![OutlierRule::consecutive_errors("r", 1)
        .recovery(Duration::from_secs(10))
        .max_ejection_percent(0.5)];
    let mut t = EndpointTable::new(16);
    for name in ["a", "b", "c", "d"] {
        call(&mut t, name, T0, false, &half);
    }
    call(&mut t, "a", T0, true, &half);
    call(&mut t, "b", T0, true, &half);
    let later = T0 + 10 * S;
    let probe = t.admit("a", later, HALF).unwrap();
    // Reloaded at a quarter: one of 4, and b holds it.
    let quarter = vec![half[0].clone().max_ejection_percent(0.25)];
    assert!(matches!(
        t.report(probe, later, true, &quarter),
        Some(Change::Returned { .. })
    ));
    assert!(t.admit("a", later, 0.25).is_ok_and(|t| !t.is_probe()));
    // b's probe fails: it is the one the quarter allows, so it is ejected again.
    let probe = t.admit("b", later, 0.25).unwrap();
    assert!(matches!(
        t.report(probe, later, true, &quarter),
        Some(Change::Ejected { .. })
    ));
    assert_eq!(t.ejected(later), ["b"]);
}

#[test]
fn an_endpoint_not_probed_for_a_minute_probes_only_if_the_share_allows() {
    let r = vec![OutlierRule::consecutive_errors("r", 1)
        .recovery(Duration::from_secs(10))
        .max_ejection_percent(0.34)];
    let mut t = EndpointTable::new(16);
    call(&mut t, "a", T0, true, &r);
    assert_eq!(t.ejected(T0), ["a"], "one may always be ejected");
    // a's ejection ended at 10 s and no call came for a minute after: it holds no place, and
    // c is ejected (1 of b, c, d).
    let later = T0 + 71 * S;
    for name in ["b", "c", "d"] {
        call(&mut t, name, later, false, &r);
    }
    call(&mut t, "c", later, true, &r);
    assert_eq!(t.ejected(later), ["c"]);
    // a comes back: 4 seen at 0.34 allow 1, which c holds. Its call is an ordinary one.
    let ticket = t.admit("a", later, 0.34).unwrap();
    assert!(ticket.is_some() && !ticket.is_probe());
    assert_eq!(t.ejected(later), ["c"]);
    // With room in the share, it would have been the probe.
    let mut t = EndpointTable::new(16);
    call(&mut t, "a", T0, true, &r);
    assert!(t.admit("a", later, 0.34).unwrap().is_probe());
}

#[test]
fn the_error_ratio_waits_for_min_requests_in_its_window() {
    let r = vec![OutlierRule::error_ratio("r", 0.5).min_requests(4)];
    let mut t = EndpointTable::new(4);
    for e in [true, false, true] {
        assert_eq!(call(&mut t, "a", T0, e, &r).1, None);
    }
    assert!(
        call(&mut t, "a", T0, false, &r).1.is_some(),
        "2 of 4 failed"
    );
    // A new window forgets the old counts.
    let mut t = EndpointTable::new(4);
    for e in [true, true, true] {
        call(&mut t, "a", T0, e, &r);
    }
    call(&mut t, "a", T0 + 10 * S, false, &r);
    assert!(t.ejected(T0 + 10 * S).is_empty());
}

#[test]
fn a_flood_of_names_keeps_the_table_bounded_and_the_ejected_endpoint() {
    let r = vec![OutlierRule::consecutive_errors("r", 1).max_ejection_percent(1.0)];
    let mut t = EndpointTable::new(1_024);
    call(&mut t, "bad", T0, true, &r);
    for i in 0..100_000u32 {
        call(&mut t, &format!("junk-{i}"), T0 + 1, false, &r);
        assert!(t.len() <= 1_024);
    }
    assert_eq!(t.len(), 1_024);
    assert_eq!(t.slots.len(), 1_024);
    assert_eq!(t.recency.len(), 1_024);
    assert_eq!(
        t.ejected(T0 + 1),
        ["bad"],
        "healthy endpoints are replaced first"
    );
    assert!(t
        .admit(&"x".repeat(MAX_NAME + 1), T0, HALF)
        .is_ok_and(|t| !t.is_some()));
}

#[test]
fn a_ticket_of_a_replaced_endpoint_reports_nothing() {
    let r = rules(1);
    let mut t = EndpointTable::new(1);
    let ticket = t.admit("a", T0, HALF).unwrap();
    t.admit("b", T0, HALF).unwrap();
    assert_eq!(t.report(ticket, T0, true, &r), None);
    assert!(t.ejected(T0).is_empty());
}

/// A plain model: every endpoint kept (no bound), the same rules written out.
#[derive(Default)]
struct Model {
    endpoints: std::collections::BTreeMap<String, (u64, u32, Option<u64>)>,
}

impl Model {
    /// (last seen, errors in a row, ejected until)
    fn call(&mut self, name: &str, at: u64, error: bool, n: u32, share: f64) -> bool {
        let e = self
            .endpoints
            .entry(name.to_owned())
            .or_insert((at, 0, None));
        e.0 = at;
        if e.2.is_some_and(|until| at < until) {
            return false;
        }
        if e.2.is_some() {
            return true; // the probe: not modelled further
        }
        e.1 = if error { e.1 + 1 } else { 0 };
        if e.1 >= n {
            let out = self
                .endpoints
                .values()
                .filter(|v| v.2.is_some_and(|u| u + SEEN_NANOS > at))
                .count();
            let seen = (self.endpoints.values())
                .filter(|v| v.2.is_some_and(|u| u + SEEN_NANOS > at) || v.0 + SEEN_NANOS >= at)
                .count();
            if out < ((share * seen as f64).floor() as usize).max(1) {
                let e = self.endpoints.get_mut(name).unwrap();
                *e = (at, 0, Some(at + 10 * S));
            }
        }
        true
    }
}

proptest! {
    #[test]
    fn the_table_decides_as_the_model(
        calls in proptest::collection::vec((0..6usize, any::<bool>(), 0..3_000u64), 1..200),
        n in 1..4u32,
        share in 0.0..=1.0f64,
    ) {
        let r = vec![OutlierRule::consecutive_errors("r", n)
            .recovery(Duration::from_secs(10))
            .max_ejection_percent(share)];
        let (mut t, mut m) = (EndpointTable::new(64), Model::default());
        let mut at = T0;
        for (who, error, step_ms) in calls {
            at += step_ms * 1_000_000;
            let name = format!("e{who}");
            // Only until a probe: the model leaves probes out.
            if m.endpoints.get(&name).is_some_and(|e| e.2.is_some_and(|u| at >= u)) {
                break;
            }
            let modelled = m.call(&name, at, error, n, share);
            let (admitted, _) = call(&mut t, &name, at, error, &r);
            prop_assert_eq!(admitted, modelled);
            let expected: Vec<String> = (m.endpoints.iter())
                .filter(|(_, v)| v.2.is_some_and(|u| u > at))
                .map(|(k, _)| k.clone())
                .collect();
            prop_assert_eq!(t.ejected(at), expected);
        }
    }
}
