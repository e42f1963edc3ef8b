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
//! With no system rule loaded, an inbound entry pays only its statistics (a per-thread add, like
//! any resource's) and one relaxed load of [`is_active`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, LazyLock};

use crate::error::BlockError;
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

static ACTIVE: AtomicBool = AtomicBool::new(false);
static LIMITS: LazyLock<Published<Limits>> =
    LazyLock::new(|| Published::new(Arc::new(Limits::default())));
static INSIDE: LazyLock<ConcurrencyCounter> = LazyLock::new(ConcurrencyCounter::default);
/// When the adaptive check first blocked in the current episode (0: not blocking).
static FIRST_DROP: AtomicU64 = AtomicU64::new(0);

/// Whether any system rule is in force.
#[inline(always)]
pub(crate) fn is_active() -> bool {
    ACTIVE.load(Relaxed)
}

/// Puts `rules` (validated) in force, combined to the strictest value of each field; none makes
/// the system check inactive. A `qps` limit keeps its gate's counts across reloads.
pub(crate) fn set_rules(rules: &[SystemRule], now: u64) {
    let rule = crate::kinds::system::rule::combine(rules);
    let old = LIMITS.load_full();
    let qps = rule.qps.map(|qps| match &old.qps {
        Some(gate) => {
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
    });
    if rule.concurrency.is_some() {
        INSIDE.start(|| inbound().inflight_total());
    }
    let active = !rules.is_empty();
    FIRST_DROP.store(0, Relaxed);
    DERIVED_PERIOD.store(0, Relaxed);
    LIMITS.replace(Arc::new(Limits { rule, qps }));
    ACTIVE.store(active, Release);
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

/// Checks an inbound call of `count` at `now` against the limits in force.
pub(crate) fn try_enter(
    resource: &'static str,
    now: u64,
    count: u32,
) -> Result<SystemPass, BlockError> {
    LIMITS.read(|limits| {
        let rule = &limits.rule;
        let mut pass = SystemPass::default();
        if let Some(gate) = &limits.qps {
            let counted = gate
                .try_enter(resource, now, count)
                .map_err(|_| BlockError::system(resource, "qps", rule.qps.unwrap_or(0.0)))?;
            pass.gated_at = counted.at.max(1);
            pass.gate = Arc::as_ptr(gate) as usize;
        }
        if INSIDE.is_tracking() {
            if !INSIDE.try_acquire(rule.concurrency, 1) {
                give_back(&limits.qps, pass, count);
                let limit = rule.concurrency.unwrap_or(0) as f64;
                return Err(BlockError::system(resource, "concurrency", limit));
            }
            pass.counted = true;
        }
        if let Err(block) = check_readings(resource, rule, now) {
            give_back(&limits.qps, pass, count);
            return Err(block);
        }
        Ok(pass)
    })
}

/// The limits read from statistics and readings (nothing reserved).
fn check_readings(resource: &'static str, rule: &SystemRule, now: u64) -> Result<(), BlockError> {
    if let Some(limit_us) = rule.avg_rt.map(|rt| rt.as_micros() as u64) {
        let (avg_us, _) = derived(now);
        if avg_us.is_some_and(|avg| avg > limit_us) {
            let limit_ms = limit_us as f64 / 1_000.0;
            return Err(BlockError::system(resource, "avg_rt", limit_ms));
        }
    }
    let cpu_over = rule.cpu_usage.filter(|&limit| cpu_usage() > limit);
    let load_over = rule.load_per_core.filter(|&limit| load_per_core() > limit);
    let held = FIRST_DROP.load(Relaxed);
    if cpu_over.is_none() && load_over.is_none() && held == 0 {
        return Ok(());
    }
    if cpu_over.is_none() && load_over.is_none() && now.saturating_sub(held) > DROP_HOLD_NANOS {
        // The episode is over: the readings are back under the limits.
        let _ = FIRST_DROP.compare_exchange(held, 0, Relaxed, Relaxed);
        return Ok(());
    }
    if !over_capacity(now) {
        return Ok(());
    }
    if held == 0 {
        let _ = FIRST_DROP.compare_exchange(0, now.max(1), Relaxed, Relaxed);
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

/// Undoes what [`try_enter`] reserved, for a call a later check blocked.
pub(crate) fn cancel(pass: SystemPass, count: u32) {
    LIMITS.read(|limits| give_back(&limits.qps, pass, count));
}

fn give_back(gate: &Option<Arc<Gate>>, pass: SystemPass, count: u32) {
    if let Some(gate) = gate {
        if pass.gated_at != 0 && Arc::as_ptr(gate) as usize == pass.gate {
            gate.cancel(pass.gated_at, count);
        }
    }
    if pass.counted {
        INSIDE.release(1);
    }
}

/// The count of inbound calls inside (an exit gives back its place with
/// [`ConcurrencyCounter::exit`]).
#[inline]
pub(crate) fn inside() -> &'static ConcurrencyCounter {
    &INSIDE
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
