//! The system check: the process-wide limits of the system rules, on inbound entries only. They
//! read the inbound traffic's statistics (`stat::inbound`, Sentinel's `ENTRY_NODE`).
//!
//! * **QPS** is admitted exactly, by a QPS gate of its own (one CAS per call, as a flow rule's).
//! * **Concurrency** is counted exactly, by a counter of inbound calls inside that every checked
//!   inbound entry takes and its exit gives back (from the first time a concurrency limit is
//!   loaded; the calls already inside then count too).
//! * **Average RT** is read from the inbound statistics over the last second (recomputed at
//!   most once per 10 ms, as is the BBR capacity below).
//! * **CPU usage and load** are checked adaptively (BBR): over the limit, a call is blocked only
//!   while the inbound calls inside exceed the largest completions per second of the last second
//!   times the smallest response time; that check stays on for 1 s after its first block (as
//!   go-kratos/aegis does), so a burst that has already overloaded the CPU is drained before the
//!   next sample says so.
//!
//! Shadow system rules ([`SystemRule::shadow`]) are a second set of limits with the same checks
//! and their own state (QPS gate, count of calls inside, adaptive episode): the shadow stage
//! checks them for the inbound calls the enforced stages admitted, and a block there is only
//! counted.
//!
//! With no system rule loaded, an inbound entry pays only its statistics (a per-thread add, like
//! any resource's) and one relaxed load of [`is_active`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, LazyLock};

use crate::error::{BlockError, BlockKind};
use crate::kinds::flow::gate::Gate;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::system::rule::{SystemRule, SYSTEM_RESOURCE};
use crate::slot::concurrency::ConcurrencyCounter;
use crate::stat::inbound;
use crate::sync::Published;
use crate::system_load::{cpu_usage, load_per_core};

/// How long the adaptive (BBR) check stays on after its first block, in nanoseconds.
const DROP_HOLD_NANOS: u64 = 1_000_000_000;

/// The limits in force, and the QPS gate of the `qps` limit.
#[derive(Debug, Default)]
struct Limits {
    rule: SystemRule,
    qps: Option<Arc<Gate>>,
}

/// One set of process-wide limits: the enforced system rules' or the shadow ones'. Each has its
/// own QPS gate, count of inbound calls inside and adaptive episode, so that the shadow rules
/// never change what the enforced ones see.
#[derive(Debug)]
pub(crate) struct SystemState {
    /// Rules of this set are in force.
    active: AtomicBool,
    limits: Published<Limits>,
    inside: ConcurrencyCounter,
    /// When the adaptive check first blocked in the current episode (0: not blocking).
    first_drop: AtomicU64,
}

impl Default for SystemState {
    fn default() -> Self {
        SystemState {
            active: AtomicBool::new(false),
            limits: Published::new(Arc::new(Limits::default())),
            inside: ConcurrencyCounter::default(),
            first_drop: AtomicU64::new(0),
        }
    }
}

/// Any system rule (enforced or shadow) is in force: inbound entries go through the stages.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The enforced system rules' limits.
static ENFORCED: LazyLock<SystemState> = LazyLock::new(SystemState::default);
/// The shadow system rules' limits: checked for the inbound calls the enforced stages admitted,
/// never refusing one (see `kinds::stages::check_shadow`).
static SHADOW: LazyLock<SystemState> = LazyLock::new(SystemState::default);

/// Whether any system rule (enforced or shadow) is in force.
#[inline(always)]
pub(crate) fn is_active() -> bool {
    ACTIVE.load(Relaxed)
}

/// Whether shadow system rules are in force.
#[inline(always)]
pub(crate) fn shadow_is_active() -> bool {
    is_active() && SHADOW.active.load(Relaxed)
}

/// The limits of the enforced rules (`shadow` false) or of the shadow ones.
#[inline(always)]
pub(crate) fn state(shadow: bool) -> &'static SystemState {
    if shadow {
        &SHADOW
    } else {
        &ENFORCED
    }
}

/// Puts `rules` (validated) in force: the enforced ones and the shadow ones each combined to
/// the strictest value of each field, as two separate sets of limits; none makes the system
/// check inactive. A `qps` limit keeps its gate's counts across reloads, and a rule promoted
/// from shadow (or back) takes over the gate it had in the other set.
pub(crate) fn set_rules(rules: &[SystemRule], now: u64) {
    let (shadow, enforced): (Vec<&SystemRule>, Vec<&SystemRule>) =
        rules.iter().partition(|r| r.shadow);
    let combine = |rules: Vec<&SystemRule>| {
        let rules: Vec<SystemRule> = rules.into_iter().cloned().collect();
        crate::kinds::system::rule::combine(&rules)
    };
    let (enforced, shadow) = (combine(enforced), combine(shadow));
    let (old_enforced, old_shadow) = (ENFORCED.limits.load_full(), SHADOW.limits.load_full());
    let enforced_qps = successor(enforced.qps, [&old_enforced, &old_shadow], None, now);
    let shadow_qps = successor(
        shadow.qps,
        [&old_shadow, &old_enforced],
        enforced_qps.as_ref(),
        now,
    );
    put(&ENFORCED, enforced, enforced_qps, || {
        inbound().inflight_total()
    });
    // From nothing: the calls already inside took no place of the shadow rules, and their
    // exits give none back.
    put(&SHADOW, shadow, shadow_qps, || 0);
    DERIVED_PERIOD.store(0, Relaxed);
    let any = ENFORCED.active.load(Relaxed) || SHADOW.active.load(Relaxed);
    ACTIVE.store(any, Release);
}

/// Puts one set's combined `rule` in force with its gate; `inflight` seeds its count of calls
/// inside when a concurrency limit first starts it.
fn put(state: &SystemState, rule: SystemRule, qps: Option<Arc<Gate>>, inflight: fn() -> i64) {
    let active = rule != SystemRule::default();
    if rule.concurrency.is_some() {
        state.inside.start(inflight);
    }
    state.first_drop.store(0, Relaxed);
    state.limits.replace(Arc::new(Limits { rule, qps }));
    state.active.store(active, Release);
}

/// The gate of a `qps` limit: an old gate of either set (its own first) that `taken` is not,
/// preferring one that had the same limit (a rule promoted from shadow keeps its window), with
/// the new limit set in place; else a new gate, starting with the inbound passes of its window.
fn successor(
    qps: Option<f64>,
    old: [&Limits; 2],
    taken: Option<&Arc<Gate>>,
    now: u64,
) -> Option<Arc<Gate>> {
    let qps = qps?;
    let candidates: Vec<(Option<f64>, &Arc<Gate>)> = old
        .into_iter()
        .filter_map(|limits| Some((limits.rule.qps, limits.qps.as_ref()?)))
        .filter(|(_, gate)| !taken.is_some_and(|t| Arc::ptr_eq(t, gate)))
        .collect();
    let kept = candidates
        .iter()
        .find(|(limit, _)| limit.map(f64::to_bits) == Some(qps.to_bits()))
        .or(candidates.first());
    Some(match kept {
        Some((_, gate)) => {
            gate.set_threshold(qps);
            Arc::clone(gate)
        }
        None => {
            let recent = |since: u64, f: &mut dyn FnMut(u64, u64, u64)| {
                inbound().recent_passes(now, since, &mut *f)
            };
            let flow = FlowRule::qps(SYSTEM_RESOURCE, qps);
            Arc::new(Gate::new(&flow, now, |_| None, &recent))
        }
    })
}

/// What the system check reserved for an admitted call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SystemPass {
    /// The QPS gate counted the call at this time (0: no gate).
    pub(crate) gated_at: u64,
    /// The gate that counted it (its address: a cancel reaches only that gate).
    gate: usize,
    /// The call took a place in the inbound concurrency count.
    pub(crate) counted: bool,
}

impl SystemState {
    /// Checks an inbound call of `count` at `now` against this set's limits (none in force:
    /// an empty pass).
    pub(crate) fn try_enter(
        &self,
        resource: &'static str,
        now: u64,
        count: u32,
    ) -> Result<SystemPass, BlockError> {
        if !self.active.load(Relaxed) {
            return Ok(SystemPass::default());
        }
        self.limits.read(|limits| {
            let rule = &limits.rule;
            let mut pass = SystemPass::default();
            if let Some(gate) = &limits.qps {
                let counted = gate
                    .try_enter(resource, now, count)
                    .map_err(|_| BlockError::system(resource, "qps", rule.qps.unwrap_or(0.0)))?;
                pass.gated_at = counted.at.max(1);
                pass.gate = Arc::as_ptr(gate) as usize;
            }
            if self.inside.is_tracking() {
                if !self.inside.try_acquire(rule.concurrency, 1) {
                    self.give_back(&limits.qps, pass, count);
                    let limit = rule.concurrency.unwrap_or(0) as f64;
                    return Err(BlockError::system(resource, "concurrency", limit));
                }
                pass.counted = true;
            }
            if let Err(block) = self.check_readings(resource, rule, now) {
                self.give_back(&limits.qps, pass, count);
                return Err(block);
            }
            Ok(pass)
        })
    }

    /// The limits read from statistics and readings (nothing reserved).
    fn check_readings(
        &self,
        resource: &'static str,
        rule: &SystemRule,
        now: u64,
    ) -> Result<(), BlockError> {
        if let Some(limit_us) = rule.avg_rt.map(|rt| rt.as_micros() as u64) {
            let (avg_us, _) = derived(now);
            if avg_us.is_some_and(|avg| avg > limit_us) {
                let limit_ms = limit_us as f64 / 1_000.0;
                return Err(BlockError::system(resource, "avg_rt", limit_ms));
            }
        }
        let cpu_over = rule.cpu_usage.filter(|&limit| cpu_usage() > limit);
        let load_over = rule.load_per_core.filter(|&limit| load_per_core() > limit);
        let held = self.first_drop.load(Relaxed);
        if cpu_over.is_none() && load_over.is_none() && held == 0 {
            return Ok(());
        }
        if cpu_over.is_none() && load_over.is_none() && now.saturating_sub(held) > DROP_HOLD_NANOS {
            // The episode is over: the readings are back under the limits.
            let _ = self.first_drop.compare_exchange(held, 0, Relaxed, Relaxed);
            return Ok(());
        }
        if !over_capacity(now) {
            return Ok(());
        }
        if held == 0 {
            let _ = self
                .first_drop
                .compare_exchange(0, now.max(1), Relaxed, Relaxed);
        }
        Err(match (cpu_over, load_over) {
            (Some(limit), _) => BlockError::system(resource, "cpu_usage", limit),
            (None, Some(limit)) => BlockError::system(resource, "load_per_core", limit),
            (None, None) => {
                let limit = rule.cpu_usage.or(rule.load_per_core).unwrap_or(0.0);
                BlockError::system(resource, "adaptive", limit)
            }
        })
    }

    /// Undoes what [`try_enter`](Self::try_enter) reserved, for a call a later check blocked
    /// (or, in the shadow set, a call given up before it ran).
    pub(crate) fn cancel(&self, pass: SystemPass, count: u32) {
        self.limits
            .read(|limits| self.give_back(&limits.qps, pass, count));
    }

    fn give_back(&self, gate: &Option<Arc<Gate>>, pass: SystemPass, count: u32) {
        if let Some(gate) = gate
            && pass.gated_at != 0
            && Arc::as_ptr(gate) as usize == pass.gate
        {
            gate.cancel(pass.gated_at, count);
        }
        if pass.counted {
            self.inside.release(1);
        }
    }
}

/// Sentinel's BBR test: more inbound calls inside than the process has shown it finishes, the
/// largest completions per second of the last second times the smallest response time.
fn over_capacity(now: u64) -> bool {
    let inside = inbound().inflight_total();
    if inside <= 1 {
        return false;
    }
    let (_, capacity) = derived(now);
    inside as f64 > capacity
}

/// How often the figures read from the inbound window are recomputed: summing every thread's
/// shard of the window on every inbound call would cost more than the rest of the check.
const REFRESH_NANOS: u64 = 10_000_000;

/// The figures of the inbound window, as of the 10 ms period `period - 1` (0: none yet).
static DERIVED_PERIOD: AtomicU64 = AtomicU64::new(0);
/// The average response time in microseconds (`u64::MAX`: no call finished).
static DERIVED_AVG_RT_US: AtomicU64 = AtomicU64::new(u64::MAX);
/// The calls the process has shown it can hold: max completions per second x min RT (f64).
static DERIVED_CAPACITY: AtomicU64 = AtomicU64::new(0);

/// The inbound calls' average response time over the last second (`None` if none finished) and
/// the BBR capacity, recomputed at most once per 10 ms (concurrent recomputations store the same
/// kind of figures; a reader may pair one recomputation's average with another's capacity).
fn derived(now: u64) -> (Option<u64>, f64) {
    let period = now / REFRESH_NANOS + 1;
    if DERIVED_PERIOD.load(Acquire) != period {
        let window = inbound().window(now);
        let avg = match window.complete {
            0 => u64::MAX,
            n => window.rt_sum_us / n,
        };
        let per_second = inbound().max_bucket_completes(now) as f64 * 10.0;
        let min_rt_s = window.min_rt_us.unwrap_or(0) as f64 / 1e6;
        DERIVED_AVG_RT_US.store(avg, Relaxed);
        DERIVED_CAPACITY.store((per_second * min_rt_s).to_bits(), Relaxed);
        DERIVED_PERIOD.store(period, Release);
    }
    let avg = DERIVED_AVG_RT_US.load(Relaxed);
    let capacity = f64::from_bits(DERIVED_CAPACITY.load(Relaxed));
    ((avg != u64::MAX).then_some(avg), capacity)
}

/// The count of inbound calls inside the enforced rules' limits (an exit gives back its place
/// with [`ConcurrencyCounter::exit`]).
#[inline]
pub(crate) fn inside() -> &'static ConcurrencyCounter {
    &ENFORCED.inside
}

/// Gives back the place a call admitted by the shadow system rules took in their count of
/// calls inside (at its exit: the call ran, so its pass stays counted).
pub(crate) fn exit_shadow(pass: SystemPass) {
    if pass.counted {
        SHADOW.inside.release(1);
    }
}

impl BlockError {
    /// A system rule's `limit` (its field name) refused an inbound call; `threshold` is the
    /// limit's value (milliseconds for `avg_rt`).
    pub(crate) fn system(
        resource: &'static str,
        limit: &'static str,
        threshold: f64,
    ) -> BlockError {
        BlockError::new(resource, BlockKind::System, threshold).because(limit)
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::{self, SystemRule};

    /// The only test of this crate's unit tests that starts the sampler (it is process-wide).
    #[test]
    fn the_sampler_runs_only_while_a_system_rule_is_loaded() {
        assert!(!crate::system_load::is_running());
        crate::system_load::start();
        crate::system_load::start(); // idempotent: one thread
        crate::system_load::stop();
        crate::system_load::stop();
        assert!(!crate::system_load::is_running());
        rules::load_system_rules(vec![SystemRule::new().cpu_usage(0.9)]).unwrap();
        assert!(crate::system_load::is_running());
        rules::load_system_rules(vec![SystemRule::new().qps(100.0)]).unwrap();
        assert!(crate::system_load::is_running(), "still a rule");
        rules::load_system_rules(vec![]).unwrap();
        assert!(!crate::system_load::is_running());
        assert!(!super::is_active());
    }
}
