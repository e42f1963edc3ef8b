//! The flow stage: the concurrency limit (fixed, or adaptive), then the QPS gates in order,
//! then the gates of rules with an origin that count the call's origin.
//! A call takes a place in the resource's count of calls inside and a pass in each gate; a
//! block gives back all of them.

use std::sync::Arc;

use crate::error::BlockError;
use crate::kinds::call::{BuildContext, Call};
use crate::kinds::flow::adaptive::AdaptiveLimit;
use crate::kinds::flow::gate::{successions as gate_successions, Gate};
use crate::kinds::flow::origin::{origin_key, OriginGate};
use crate::kinds::flow::rule::{FlowMetric, FlowRule};
use crate::kinds::kind::Successors;
use crate::kinds::succession::arcs;

/// The flow part of a chain.
#[derive(Debug, Default)]
pub(crate) struct FlowChecks {
    pub(crate) concurrency: Option<(u64, f64)>,
    pub(crate) adaptive: Option<Arc<AdaptiveLimit>>,
    pub(crate) gates: Vec<Arc<Gate>>,
    pub(crate) origin_gates: Vec<Arc<OriginGate>>,
}

/// The gates and the adaptive limit are the state: `first`'s, then `then`'s, without what
/// `taken` holds (a fixed concurrency limit counts on the resource, and keeps nothing).
impl Successors for FlowChecks {
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self {
        let adaptive = [&first.adaptive, &then.adaptive]
            .into_iter()
            .flatten()
            .find(|a| !taken.adaptive.as_ref().is_some_and(|t| Arc::ptr_eq(t, a)));
        FlowChecks {
            concurrency: None,
            adaptive: adaptive.cloned(),
            gates: arcs(&first.gates, &then.gates, &taken.gates),
            origin_gates: arcs(&first.origin_gates, &then.origin_gates, &taken.origin_gates),
        }
    }
}

/// The flow checks of `rules`. A gate of the same shape as one in `old` is kept with the new
/// threshold (its counts stay); a new gate starts with the passes the resource admitted in its
/// window; the adaptive limit is kept while its settings are unchanged.
pub(crate) fn build(rules: &[FlowRule], old: &FlowChecks, ctx: &BuildContext<'_>) -> FlowChecks {
    let mut checks = FlowChecks::default();
    // The gate each QPS rule takes over, decided before any threshold is set in place.
    let gated: Vec<&FlowRule> = rules
        .iter()
        .filter(|r| r.metric == FlowMetric::Qps && r.origin.is_all())
        .collect();
    let mut successions = gate_successions(&old.gates, &gated).into_iter();
    for rule in rules {
        match rule.metric {
            FlowMetric::AdaptiveConcurrency => {
                // One adaptive limit per resource: the first rule's (validation refuses none of
                // them; a second would only duplicate the first's measurements).
                if checks.adaptive.is_none() {
                    let settings = rule.adaptive_settings();
                    checks.adaptive = Some(match &old.adaptive {
                        Some(kept) if *kept.config() == settings => Arc::clone(kept),
                        _ => Arc::new(AdaptiveLimit::new(settings)),
                    });
                }
            }
            FlowMetric::Concurrency => {
                let limit = rule.threshold.floor() as u64;
                if !matches!(checks.concurrency, Some((held, _)) if held <= limit) {
                    checks.concurrency = Some((limit, rule.threshold));
                }
            }
            FlowMetric::Qps if !rule.origin.is_all() => {
                // A rule with an origin kept as it is keeps its counts; any other starts empty.
                let kept = old
                    .origin_gates
                    .iter()
                    .find(|g| g.serves(rule, rules))
                    .filter(|g| !checks.origin_gates.iter().any(|n| Arc::ptr_eq(n, g)));
                checks.origin_gates.push(match kept {
                    Some(gate) => Arc::clone(gate),
                    None => Arc::new(OriginGate::new(rule, rules, ctx.now, ctx.resolve)),
                });
            }
            FlowMetric::Qps => {
                let kept = successions.next().flatten().and_then(|i| old.gates.get(i));
                let gate = match kept {
                    Some(gate) => {
                        gate.set_threshold(rule.threshold);
                        Arc::clone(gate)
                    }
                    None => {
                        let recent = |since: u64, f: &mut dyn FnMut(u64, u64, u64)| {
                            ctx.stats.recent_passes(ctx.now, since, &mut *f)
                        };
                        Arc::new(Gate::new(rule, ctx.now, ctx.resolve, &recent))
                    }
                };
                checks.gates.push(gate);
            }
        }
    }
    checks
}

/// The stage's check: the concurrency limit, then the QPS gates. The latest throttling turn
/// among the gates goes into the call's admission.
#[inline(always)]
pub(crate) fn check(checks: &FlowChecks, call: &mut Call<'_>) -> Result<(), BlockError> {
    let resource = call.target.name;
    if call.counter.is_tracking() {
        let fixed = checks.concurrency.map(|(limit, _)| limit);
        let adaptive = checks.adaptive.as_ref().map(|a| a.limit());
        let limit = match (fixed, adaptive) {
            (Some(f), Some(a)) => Some(f.min(a)),
            (f, a) => f.or(a),
        };
        // A batch holds as many places as it asks passes (Sentinel's `canPass`).
        let places = u64::from(call.count);
        if !call.counter.try_acquire(limit, places) {
            if let Some(a) = &checks.adaptive {
                a.on_block(call.out.at); // ends a probe past its deadline
            }
            return Err(concurrency_block(resource, checks, fixed, adaptive));
        }
        call.out.counted = places;
    }
    match checks.gates.as_slice() {
        [] => {}
        [gate] => {
            // One gate (the common case): no other gate to check again at a later time.
            let pass = gate.try_enter(resource, call.out.at, call.count)?;
            call.out.at = call.out.at.max(pass.at);
            call.gates = 1;
            call.out.turn = call.out.turn.max(pass.turn);
        }
        _ => check_gates(checks, call, resource)?,
    }
    if checks.origin_gates.is_empty() {
        return Ok(());
    }
    check_origins(checks, call, resource)
}

/// The gates of the rules with an origin that count the call's origin (the entry's own, else
/// its scope's), each at the time the call counts at. A gate whose window has moved past it
/// refuses the call (rare: the thread was delayed; refusing is always safe).
#[cold]
#[inline(never)]
fn check_origins(
    checks: &FlowChecks,
    call: &mut Call<'_>,
    resource: &'static str,
) -> Result<(), BlockError> {
    let scoped;
    let origin = match call.params.origin() {
        Some(origin) => Some(origin),
        None => {
            scoped = crate::context::origin();
            scoped.as_deref()
        }
    };
    let Some(origin) = origin else {
        return Ok(());
    };
    let key = origin_key(origin);
    call.out.origin_key = key;
    for (i, gate) in checks.origin_gates.iter().enumerate().take(64) {
        if !gate.applies(Some(origin)) {
            continue;
        }
        let block = match gate.try_enter(resource, key, call.out.at, call.count) {
            Ok(pass) if pass.at == call.out.at => {
                call.out.origin_passes |= 1 << i;
                call.out.turn = call.out.turn.max(pass.turn);
                continue;
            }
            Ok(pass) => {
                gate.cancel(key, pass.at, call.count);
                BlockError::flow(resource, 0.0, 1_000).because("the clock raced past the window")
            }
            Err(block) => block,
        };
        cancel_origins(checks, call);
        return Err(block);
    }
    Ok(())
}

/// Gives back the passes the origin gates took.
fn cancel_origins(checks: &FlowChecks, call: &mut Call<'_>) {
    let mut passes = std::mem::take(&mut call.out.origin_passes);
    while passes != 0 {
        let i = passes.trailing_zeros() as usize;
        passes &= passes - 1;
        if let Some(gate) = checks.origin_gates.get(i) {
            gate.cancel(call.out.origin_key, call.out.at, call.count);
        }
    }
}

/// The QPS gates of a chain with more than one, each counting the call at the same time.
#[inline(never)]
fn check_gates(
    checks: &FlowChecks,
    call: &mut Call<'_>,
    resource: &'static str,
) -> Result<(), BlockError> {
    let mut turn = 0;
    // A gate whose window has moved past `at` counts the call later; the gates before it then
    // check again at that time, so that every gate counts the call at the time it is recorded.
    for _round in 0..3 {
        let mut moved = false;
        for gate in checks.gates.iter() {
            let pass = gate.try_enter(resource, call.out.at, call.count)?;
            turn = turn.max(pass.turn);
            if pass.at > call.out.at && call.gates > 0 {
                cancel_gates(checks, call);
                gate.cancel(pass.at, call.count);
                call.out.at = pass.at;
                moved = true;
                break;
            }
            call.out.at = call.out.at.max(pass.at);
            call.gates += 1;
        }
        if !moved {
            call.out.turn = call.out.turn.max(turn);
            return Ok(());
        }
        turn = 0;
    }
    // Still moving after three rounds: the clock is racing past bucket boundaries faster than
    // the check runs. Refusing is always safe.
    cancel_gates(checks, call);
    Err(checks.gates.first().map_or_else(
        || BlockError::flow(resource, 0.0, 1_000),
        |g| g.block_error(resource),
    ))
}

/// Gives back the passes the admitting gates took.
fn cancel_gates(checks: &FlowChecks, call: &mut Call<'_>) {
    for gate in &checks.gates[..call.gates] {
        gate.cancel(call.out.at, call.count);
    }
    call.gates = 0;
}

/// Gives back the gates' passes and the place inside.
pub(crate) fn release(checks: &FlowChecks, call: &mut Call<'_>) {
    cancel_origins(checks, call);
    cancel_gates(checks, call);
    if call.out.counted != 0 {
        call.counter.release(call.out.counted);
        call.out.counted = 0;
    }
}

/// The block of a call over the concurrency limit: the fixed rule's, or the adaptive one's if
/// that is the lower.
#[cold]
fn concurrency_block(
    resource: &'static str,
    checks: &FlowChecks,
    fixed: Option<u64>,
    adaptive: Option<u64>,
) -> BlockError {
    match adaptive {
        Some(a) if fixed.is_none_or(|f| a < f) => {
            BlockError::concurrency(resource, a as f64).because("adaptive limit")
        }
        _ => BlockError::concurrency(resource, checks.concurrency.map_or(0.0, |(_, given)| given)),
    }
}
