//! The hotspot stage: each hotspot gate admits the call's value of its parameter.

use crate::error::BlockError;
use crate::kinds::call::Call;
use crate::kinds::hotspot::gate::{successions, HotPass, HotspotGate};
use crate::kinds::hotspot::rule::HotspotRule;
use crate::kinds::kind::Successors;

/// The hotspot part of a chain: a gate per rule, each taking over the table of the gate in
/// `old` that [`successions`] names (every value keeps its state), else on a new table.
pub(crate) fn build(rules: &[HotspotRule], old: &[HotspotGate]) -> Vec<HotspotGate> {
    rules
        .iter()
        .zip(successions(old, rules))
        .map(|(rule, kept)| match kept.and_then(|i| old.get(i)) {
            Some(gate) => gate.succeed(rule),
            None => HotspotGate::new(rule),
        })
        .collect()
}

/// A gate's table is its state: `first`'s gates, then `then`'s, each table once, without the
/// tables `taken` counts on (views of the old gates, for [`build`]'s succession search).
impl Successors for Vec<HotspotGate> {
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self {
        let mut out: Vec<HotspotGate> = Vec::with_capacity(first.len() + then.len());
        for gate in first.iter().chain(then) {
            let seen = |g: &HotspotGate| g.shares_table(gate);
            if !taken.iter().any(seen) && !out.iter().any(seen) {
                out.push(gate.clone());
            }
        }
        out
    }
}

/// The stage's check: each gate admits the call's value of its parameter; the latest
/// throttling turn among them goes into the call's admission, the passes into its
/// [`HotPasses`].
#[inline(always)]
pub(crate) fn check(checks: &[HotspotGate], call: &mut Call<'_>) -> Result<(), BlockError> {
    if checks.is_empty() {
        return Ok(());
    }
    check_values(checks, call)
}

fn check_values(checks: &[HotspotGate], call: &mut Call<'_>) -> Result<(), BlockError> {
    let (resource, params, at, count) = (call.target.name, call.params, call.out.at, call.count);
    for (i, gate) in checks.iter().enumerate() {
        let pass = gate
            .try_enter(resource, params, at, count)
            .inspect_err(|_| gate.note_block(params, at, count))?;
        if let HotPass::Rate { turn, .. } = pass {
            call.out.turn = call.out.turn.max(turn);
        }
        if pass != HotPass::Free {
            call.out.hot.push(i, pass);
        }
    }
    Ok(())
}

/// Gives back what the gates admitted, the latest first.
pub(crate) fn release(checks: &[HotspotGate], call: &mut Call<'_>) {
    for (i, pass) in call.out.hot.drain_latest_first() {
        if let Some(gate) = checks.get(i) {
            gate.cancel(pass, call.count);
        }
    }
}
