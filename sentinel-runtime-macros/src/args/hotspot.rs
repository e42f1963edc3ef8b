//! `hotspot(...)`: a limit per value of one of the function's arguments, and the limits of
//! the run-time's clock on what a value may owe.

use proc_macro2::Span;
use syn::{Expr, Ident};

use super::known::HOTSPOT_KNOWN;
use super::list::{Group, RawArg};
use super::params::param_name;
use super::values::{boolean, duration_arg, float, spanned, whole};
use super::with_span::WithSpan;
use crate::errors::Errors;
use crate::limits;

/// What a `hotspot(...)` limits per value.
#[derive(Clone, Copy)]
pub(crate) enum HotspotLimit {
    Qps(f64),
    Concurrency(u32),
}

/// A checked `hotspot(...)`.
pub(crate) struct Hotspot {
    /// The argument it limits, as written (its span is the user's token).
    pub(crate) param: Ident,
    pub(crate) limit: HotspotLimit,
    pub(crate) burst: Option<WithSpan<u32>>,
    pub(crate) window: Option<WithSpan<u64>>,
    pub(crate) max_wait: Option<WithSpan<u64>>,
    pub(crate) capacity: Option<WithSpan<u32>>,
    /// `strict = true`: at most `qps` calls of a value in any interval of the window's length.
    pub(crate) strict: bool,
    /// The `hotspot` key.
    pub(crate) span: Span,
}

/// Checks one `hotspot(...)`: a `param`, exactly one of `qps` and `concurrency`, sane numbers.
pub(super) fn hotspot(
    key: &Ident,
    items: Vec<RawArg>,
    mentions: &mut Vec<Ident>,
    errors: &mut Errors,
) -> Option<Hotspot> {
    let list = Group::read("hotspot", HOTSPOT_KNOWN, "param = user_id", items, errors);
    let get = |name: &str| list.get(name);
    let param = param(key, &list, mentions, errors);
    let limit = limit(key, &list, errors);
    let strict = strict(&list, errors);
    let burst = get("burst").and_then(|(k, v)| {
        let b = whole(v, "burst", 0, limits::MAX_CONCURRENCY, errors);
        spanned(k, v, b)
    });
    let capacity = get("capacity").and_then(|(k, v)| {
        let c = whole(v, "capacity", 1, limits::MAX_HOTSPOT_CAPACITY, errors);
        spanned(k, v, c)
    });
    let (window, max_wait) = waits(&list, errors);
    if let Some(HotspotLimit::Qps(threshold)) = limit {
        let qps = get("qps").map(|(_, v)| v);
        let window_ms = window.map_or(1_000, |w| w.value);
        debt(threshold, window_ms, qps, burst, errors);
        if strict == Some(true) {
            strict_burst(threshold, window_ms, burst, errors);
        }
    }
    Some(Hotspot {
        param: param?,
        limit: limit?,
        burst,
        window,
        max_wait,
        capacity,
        strict: strict.unwrap_or(false),
        span: key.span(),
    })
}

/// The argument whose values are limited, recorded among the `mentions` of parameters.
fn param(
    key: &Ident,
    list: &Group,
    mentions: &mut Vec<Ident>,
    errors: &mut Errors,
) -> Option<Ident> {
    match list.get("param") {
        Some((_, v)) => {
            let name = param_name(v, errors);
            if let Some(name) = &name {
                mentions.push(name.clone());
            }
            name
        }
        None => {
            errors.at(
                key,
                "`hotspot(...)` needs `param = ...`: the argument whose values are limited \
                 one by one",
            );
            None
        }
    }
}

/// The limit per value: `qps` or `concurrency`, one of them.
fn limit(key: &Ident, list: &Group, errors: &mut Errors) -> Option<HotspotLimit> {
    match (list.get("qps"), list.get("concurrency")) {
        (Some(_), Some((second, _))) => {
            errors.at(
                second,
                "one limit per `hotspot(...)`: `qps` or `concurrency`, not both; write another \
                 `hotspot(...)` for the other",
            );
            None
        }
        (Some((_, v)), None) => {
            let v = float(v, "qps", "qps = 10", errors).and_then(|q| {
                if q.is_finite() && (0.0..=limits::MAX_THRESHOLD).contains(&q) {
                    Some(q)
                } else {
                    errors.at(
                        v,
                        format!(
                            "`qps` of `hotspot(...)` must be a finite number from 0 to {} (the \
                             run-time limit), got {q}",
                            limits::MAX_THRESHOLD
                        ),
                    );
                    None
                }
            });
            v.map(HotspotLimit::Qps)
        }
        (None, Some((_, v))) => whole(v, "concurrency", 0, limits::MAX_CONCURRENCY, errors)
            .map(HotspotLimit::Concurrency),
        (None, None) => {
            errors.at(
                key,
                "`hotspot(...)` needs a limit per value: `qps = 10` or `concurrency = 2`",
            );
            None
        }
    }
}

/// `strict`, after the arguments that shape a `qps` limit only are refused beside
/// `concurrency`, and `max_wait` beside `strict = true`.
fn strict(list: &Group, errors: &mut Errors) -> Option<bool> {
    let get = |name: &str| list.get(name);
    let qps_only = |name: &str, errors: &mut Errors| {
        if let (Some((k, _)), Some(_)) = (get(name), get("concurrency")) {
            errors.at(
                k,
                format!("`{name}` applies to a `qps` hotspot limit only, not to `concurrency`"),
            );
        }
    };
    for name in ["burst", "window", "max_wait", "strict"] {
        qps_only(name, errors);
    }
    let strict = get("strict").and_then(|(_, v)| boolean(v, "strict", errors));
    if let (Some(true), Some((k, _))) = (strict, get("max_wait")) {
        errors.at(
            k,
            "`max_wait` does not combine with `strict = true` in `hotspot(...)`: strict calls \
             are admitted or refused at once (the run-time refuses the rule)",
        );
    }
    strict
}

/// `window` and `max_wait`, each within the run-time's limit.
fn waits(list: &Group, errors: &mut Errors) -> (Option<WithSpan<u64>>, Option<WithSpan<u64>>) {
    let get = |name: &str| list.get(name);
    // Checked here against the hotspot rule's own limits, not among `Args::durations`.
    let mut durations = Vec::new();
    let window =
        get("window").and_then(|(k, v)| duration_arg(k, v, "window", &mut durations, errors));
    let max_wait =
        get("max_wait").and_then(|(k, v)| duration_arg(k, v, "max_wait", &mut durations, errors));
    if let Some(w) = window.filter(|w| w.value > limits::MAX_HOTSPOT_WINDOW_MS) {
        errors.push(syn::Error::new(
            w.value_span,
            format!(
                "`window` of `hotspot(...)` must be at most {} (the run-time limit), got {}",
                crate::duration::show(limits::MAX_HOTSPOT_WINDOW_MS),
                crate::duration::show(w.value)
            ),
        ));
    }
    if let Some(w) = max_wait.filter(|w| w.value > limits::MAX_WAIT_MS) {
        errors.push(syn::Error::new(
            w.value_span,
            format!(
                "`max_wait` of `hotspot(...)` must be at most {} (the run-time limit), got {}",
                crate::duration::show(limits::MAX_WAIT_MS),
                crate::duration::show(w.value)
            ),
        ));
    }
    (window, max_wait)
}

/// With `strict = true`, `1 + burst` calls at once must fit in the threshold's whole calls, and
/// what a value owes from idle (`1 + burst` intervals of `window / (floor(qps) - burst)`) in
/// the run-time's clock (its validation refuses the rule otherwise).
fn strict_burst(threshold: f64, window_ms: u64, burst: Option<WithSpan<u32>>, errors: &mut Errors) {
    let Some(b) = burst.filter(|_| threshold > 0.0) else {
        return;
    };
    let whole = (threshold.floor() as u128).max(1);
    let burst = u128::from(b.value);
    let window = crate::duration::show(window_ms);
    if burst >= whole {
        errors.push(syn::Error::new(
            b.value_span,
            format!(
                "`burst` of `hotspot(...)` must be below {whole} with `qps = {threshold}` and \
                 `strict = true` (at most `qps` calls pass in any window, `1 + burst` of them \
                 at once), got {burst}"
            ),
        ));
        return;
    }
    // `rules::hotspot::strict_interval_nanos`.
    let interval = (u128::from(window_ms) * 1_000_000)
        .div_ceil(whole - burst)
        .max(1);
    if (1 + burst) * interval > limits::MAX_HOTSPOT_DEBT_NANOS {
        let years = limits::MAX_HOTSPOT_DEBT_NANOS / 1_000_000_000 / 31_557_600;
        errors.push(syn::Error::new(
            b.value_span,
            format!(
                "`burst` of `hotspot(...)` is too large with `qps = {threshold}` per {window} \
                 and `strict = true` (the run-time limit: a value may owe at most {years} years \
                 from idle), got {burst}"
            ),
        ));
    }
}

/// What one value of a `qps` hotspot limit may owe from idle must fit in the run-time's clock
/// (its validation refuses the rule otherwise): `threshold + burst` calls of
/// `window / threshold` each, at most `MAX_HOTSPOT_DEBT_NANOS`.
fn debt(
    threshold: f64,
    window_ms: u64,
    qps: Option<&Expr>,
    burst: Option<WithSpan<u32>>,
    errors: &mut Errors,
) {
    if threshold <= 0.0 {
        return;
    }
    // `rules::hotspot::interval_nanos`: window / threshold, rounded up, at least 1.
    let window = u128::from(window_ms) * 1_000_000;
    let interval = if threshold.fract() == 0.0 {
        window.div_ceil(threshold as u128)
    } else {
        (window as f64 / threshold).ceil() as u128
    }
    .max(1);
    let fit = limits::MAX_HOTSPOT_DEBT_NANOS / interval;
    let years = limits::MAX_HOTSPOT_DEBT_NANOS / 1_000_000_000 / 31_557_600;
    let window = crate::duration::show(window_ms);
    if fit == 0 {
        if let Some(qps) = qps {
            errors.at(
                qps,
                format!(
                    "`qps` of `hotspot(...)` must be 0 or at least one call per {years} years \
                     (the run-time limit), got {threshold} per {window}"
                ),
            );
        }
        return;
    }
    let own = (threshold.floor() as u128).max(1);
    if let Some(b) = burst.filter(|b| own + u128::from(b.value) > fit) {
        errors.push(syn::Error::new(
            b.value_span,
            format!(
                "`burst` of `hotspot(...)` must be at most {} with `qps = {threshold}` per \
                 {window} (the run-time limit: a value may owe at most {years} years from idle), \
                 got {}",
                fit - own,
                b.value
            ),
        ));
    }
}
