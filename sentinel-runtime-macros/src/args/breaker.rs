//! `breaker(...)`: a circuit breaker's strategy, its recovery and its statistics.

use proc_macro2::Span;
use syn::{Expr, Ident};

use super::known::BREAKER_KNOWN;
use super::list::{Group, RawArg};
use super::values::{duration_arg, float, whole};
use super::with_span::WithSpan;
use crate::errors::Errors;
use crate::limits;

/// The strategy of a `breaker(...)`.
#[derive(Clone, Copy)]
pub(crate) enum BreakerKind {
    SlowRatio { max_rt_ms: u64, ratio: f64 },
    ErrorRatio(f64),
    ErrorCount(u32),
}

/// A checked `breaker(...)`.
pub(crate) struct Breaker {
    pub(crate) kind: BreakerKind,
    pub(crate) min_requests: u32,
    pub(crate) window_ms: u64,
    pub(crate) recovery_ms: u64,
    pub(crate) probes: u32,
    pub(crate) span: Span,
}

/// Checks one `breaker(...)`: exactly one strategy, a recovery time, sane numbers.
pub(super) fn breaker(
    key: &Ident,
    items: Vec<RawArg>,
    durations: &mut Vec<(&'static str, WithSpan<u64>)>,
    errors: &mut Errors,
) -> Option<Breaker> {
    let list = Group::read("breaker", BREAKER_KNOWN, "error_ratio = 0.5", items, errors);
    let (kind, strategies) = strategy(key, &list, durations, errors);
    let recovery_ms = match list.get("recovery") {
        Some((k, v)) => duration_arg(k, v, "recovery", durations, errors).map(|d| d.value),
        None => {
            errors.at(
                key,
                "`breaker(...)` needs `recovery = \"5s\"`: how long it stays open before probing",
            );
            None
        }
    };
    let min_requests = list.get("min_requests").map_or(Some(0), |(_, v)| {
        whole(v, "min_requests", 1, limits::MAX_MIN_REQUESTS, errors)
    });
    let window_ms = list.get("window").map_or(Some(0), |(k, v)| {
        duration_arg(k, v, "window", durations, errors).map(|d| d.value)
    });
    let probes = list.get("probes").map_or(Some(0), |(_, v)| {
        whole(v, "probes", 1, limits::MAX_PROBES, errors)
    });
    if strategies > 1 {
        return None;
    }
    Some(Breaker {
        kind: kind?,
        min_requests: min_requests?,
        window_ms: window_ms?,
        recovery_ms: recovery_ms?,
        probes: probes?,
        span: key.span(),
    })
}

/// The breaker's strategy (`None` if refused), and how many were given: one is wanted.
fn strategy(
    key: &Ident,
    list: &Group,
    durations: &mut Vec<(&'static str, WithSpan<u64>)>,
    errors: &mut Errors,
) -> (Option<BreakerKind>, usize) {
    let get = |name: &str| list.get(name);
    let strategies: Vec<&Ident> = ["error_ratio", "error_count", "slow_rt"]
        .iter()
        .filter_map(|s| get(s).map(|(k, _)| k))
        .collect();
    if let Some(second) = strategies.get(1) {
        errors.at(
            second,
            "one strategy per `breaker(...)`: `error_ratio`, `error_count`, or `slow_rt` with \
             `slow_ratio`; write another `breaker(...)` for a second strategy",
        );
    }
    let kind = match (
        get("error_ratio"),
        get("error_count"),
        get("slow_rt"),
        get("slow_ratio"),
    ) {
        (Some((_, v)), _, _, _) => ratio(v, "error_ratio", errors).map(BreakerKind::ErrorRatio),
        (_, Some((_, v)), _, _) => {
            whole(v, "error_count", 1, u32::MAX, errors).map(BreakerKind::ErrorCount)
        }
        (_, _, Some((k, rt)), Some((_, r))) => {
            let max_rt_ms = duration_arg(k, rt, "slow_rt", durations, errors).map(|d| d.value);
            let ratio = ratio(r, "slow_ratio", errors);
            max_rt_ms
                .zip(ratio)
                .map(|(max_rt_ms, ratio)| BreakerKind::SlowRatio { max_rt_ms, ratio })
        }
        (_, _, Some((k, _)), None) => {
            errors.at(
                k,
                "`slow_rt` needs `slow_ratio`: the share of slow calls (0..=1) that opens the \
                 breaker",
            );
            None
        }
        (_, _, None, Some((k, _))) => {
            errors.at(
                k,
                "`slow_ratio` needs `slow_rt`: the response time above which a call is slow, \
                 like \"200ms\"",
            );
            None
        }
        (None, None, None, None) => {
            errors.at(
                key,
                "`breaker(...)` needs a strategy: `error_ratio = 0.5`, `error_count = 20`, or \
                 `slow_rt = \"200ms\", slow_ratio = 0.5`",
            );
            None
        }
    };
    (kind, strategies.len())
}

/// A ratio in 0..=1.
fn ratio(value: &Expr, name: &str, errors: &mut Errors) -> Option<f64> {
    let v = float(value, name, &format!("{name} = 0.5"), errors)?;
    if !(0.0..=1.0).contains(&v) {
        errors.at(value, format!("`{name}` must be a ratio in 0..=1, got {v}"));
        return None;
    }
    Some(v)
}
