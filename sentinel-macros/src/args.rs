//! Parsing the attribute's arguments: `key = value, ...`, each value checked on its own and kept
//! with its span so later errors point at the user's token.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Path, Token, UnOp};

use crate::errors::Errors;
use crate::limits;

/// The arguments the attribute accepts, in the order the error message lists them.
pub(crate) const KNOWN: &[&str] = &[
    "resource",
    "qps",
    "concurrency",
    "fallback",
    "window",
    "strict",
    "warm_up",
    "cold_factor",
    "max_wait",
    "relate",
    "breaker",
    "hotspot",
    "params",
    "is_error",
    "inbound",
    "crate",
];

/// The arguments `breaker(...)` accepts.
const BREAKER_KNOWN: &[&str] = &[
    "error_ratio",
    "error_count",
    "slow_rt",
    "slow_ratio",
    "min_requests",
    "window",
    "recovery",
    "probes",
];

/// The arguments `hotspot(...)` accepts.
const HOTSPOT_KNOWN: &[&str] = &[
    "param",
    "qps",
    "concurrency",
    "burst",
    "window",
    "max_wait",
    "capacity",
    "strict",
];

/// `key = value`, or `key(key = value, ...)`, not yet checked; or a literal written without
/// its key (`#[sentinel("orders")]`).
enum RawArg {
    Value { key: Ident, value: Expr },
    List { key: Ident, items: Vec<RawArg> },
    Bare(Lit),
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArg> {
        if input.peek(Lit) {
            return input.parse().map(RawArg::Bare);
        }
        // `crate` is a keyword: accept any identifier as the key, and check it later.
        let key = Ident::parse_any(input)?;
        if input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            let items = Punctuated::<RawArg, Token![,]>::parse_terminated(&content)?;
            return Ok(RawArg::List {
                key,
                items: items.into_iter().collect(),
            });
        }
        input.parse::<Token![=]>().map_err(|e| {
            // At the end of the arguments the parser's span is the whole attribute: use the key.
            let span = if input.is_empty() || input.peek(Token![,]) {
                key.span()
            } else {
                e.span()
            };
            syn::Error::new(
                span,
                format!("expected `=` after `{key}`: arguments are written `{key} = value`"),
            )
        })?;
        let value = ungroup(input.parse()?);
        Ok(RawArg::Value { key, value })
    }
}

/// `value` without the invisible groups a `macro_rules!` macro wraps its fragments in
/// (`$name:literal`, `$fallback:path`, `$qps:expr`), so a value passed through one reads as
/// written.
fn ungroup(value: Expr) -> Expr {
    match value {
        Expr::Group(g) => ungroup(*g.expr),
        Expr::Array(mut list) => {
            list.elems = list.elems.into_iter().map(ungroup).collect();
            Expr::Array(list)
        }
        other => other,
    }
}

/// A checked value with the spans of what the user wrote.
#[derive(Clone, Copy)]
pub(crate) struct WithSpan<T> {
    pub(crate) value: T,
    /// The argument's key (`max_wait`), or for `qps` and `concurrency` the value: where errors
    /// about the argument as a whole point.
    pub(crate) span: Span,
    /// The value (`"2h"`): where errors about the value point.
    pub(crate) value_span: Span,
}

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

/// The checked arguments.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) resource: Option<LitStr>,
    pub(crate) qps: Option<WithSpan<f64>>,
    pub(crate) concurrency: Option<WithSpan<u32>>,
    /// `concurrency = "adaptive"`: the span of the value.
    pub(crate) adaptive_concurrency: Option<Span>,
    /// `inbound = true`.
    pub(crate) inbound: Option<WithSpan<bool>>,
    pub(crate) fallback: Option<Path>,
    /// `fallback = ...` was written, even if its value was refused.
    pub(crate) fallback_given: bool,
    pub(crate) krate: Option<Path>,
    pub(crate) breakers: Vec<Breaker>,
    pub(crate) is_error: Option<Path>,
    /// `window = ".."` in milliseconds, with the key's span.
    pub(crate) window: Option<WithSpan<u64>>,
    pub(crate) strict: Option<WithSpan<bool>>,
    pub(crate) warm_up: Option<WithSpan<u64>>,
    pub(crate) cold_factor: Option<WithSpan<f64>>,
    pub(crate) max_wait: Option<WithSpan<u64>>,
    pub(crate) relate: Option<LitStr>,
    /// Every `hotspot(...)` that parsed.
    pub(crate) hotspots: Vec<Hotspot>,
    /// The arguments named by `params = [...]` and `hotspot(param = ...)`, in the order written
    /// (repeats included): the first mention of each gives its index.
    pub(crate) param_mentions: Vec<Ident>,
    /// Every duration parsed, the `qps` rule's and the breakers' (even those of a refused
    /// `breaker(...)`), by argument name: `valid` checks each against its run-time limit.
    pub(crate) durations: Vec<(&'static str, WithSpan<u64>)>,
}

impl Args {
    /// Parses and checks `key = value, ...`, recording every problem in `errors`.
    pub(crate) fn parse(input: ParseStream<'_>, errors: &mut Errors) -> syn::Result<Args> {
        let raw = Punctuated::<RawArg, Token![,]>::parse_terminated(input)?;
        let mut args = Args::default();
        let mut seen: Vec<String> = Vec::new();
        for arg in raw {
            let (key, value) = match arg {
                RawArg::Bare(lit) => {
                    bare(&lit, errors);
                    continue;
                }
                RawArg::List { key, items } if key.unraw() == "breaker" => {
                    if let Some(b) = breaker(&key, items, &mut args.durations, errors) {
                        args.breakers.push(b);
                    }
                    continue;
                }
                RawArg::List { key, items } if key.unraw() == "hotspot" => {
                    if let Some(h) = hotspot(&key, items, &mut args.param_mentions, errors) {
                        args.hotspots.push(h);
                    }
                    continue;
                }
                RawArg::List { key, .. } => {
                    let name = key.unraw().to_string();
                    if KNOWN.contains(&name.as_str()) {
                        errors.at(
                            &key,
                            format!("`{name}` is written `{name} = value`, not `{name}(...)`"),
                        );
                    } else {
                        errors.at(&key, unknown(&name, KNOWN));
                    }
                    continue;
                }
                RawArg::Value { key, .. } if key.unraw() == "breaker" => {
                    errors.at(
                        &key,
                        "`breaker` takes a list: `breaker(error_ratio = 0.5, recovery = \"5s\")`",
                    );
                    continue;
                }
                RawArg::Value { key, .. } if key.unraw() == "hotspot" => {
                    errors.at(
                        &key,
                        "`hotspot` takes a list: `hotspot(param = user_id, qps = 10)`",
                    );
                    continue;
                }
                RawArg::Value { key, value } => (key, value),
            };
            let name = key.unraw().to_string();
            if seen.contains(&name) && KNOWN.contains(&name.as_str()) {
                errors.at(&key, format!("duplicate argument `{name}`: give it once"));
                continue;
            }
            seen.push(name.clone());
            match name.as_str() {
                "resource" => args.resource = resource(&value, errors),
                "qps" => args.qps = qps(&value, errors),
                "concurrency" if is_string(&value) => {
                    args.adaptive_concurrency = adaptive(&value, errors)
                }
                "concurrency" => args.concurrency = concurrency(&value, errors),
                "inbound" => {
                    args.inbound = spanned(&key, &value, boolean(&value, "inbound", errors))
                }
                "fallback" => {
                    args.fallback_given = true;
                    args.fallback = path(&value, "fallback", "fallback = busy", errors);
                }
                "crate" => args.krate = path(&value, "crate", "crate = ::sentinel_runtime", errors),
                "is_error" => {
                    args.is_error = path(&value, "is_error", "is_error = counts_as_error", errors)
                }
                "window" => {
                    args.window = duration_arg(&key, &value, "window", &mut args.durations, errors)
                }
                "warm_up" => {
                    args.warm_up =
                        duration_arg(&key, &value, "warm_up", &mut args.durations, errors)
                }
                "max_wait" => {
                    args.max_wait =
                        duration_arg(&key, &value, "max_wait", &mut args.durations, errors)
                }
                "strict" => args.strict = spanned(&key, &value, boolean(&value, "strict", errors)),
                "cold_factor" => {
                    args.cold_factor = spanned(&key, &value, cold_factor(&value, errors))
                }
                "relate" => args.relate = string(&value, "relate", "relate = \"writes\"", errors),
                "params" => param_list(&value, &mut args.param_mentions, errors),
                _ => errors.at(&key, unknown(&name, KNOWN)),
            }
        }
        if let Some(extra) = args.hotspots.get(limits::MAX_HOTSPOTS) {
            errors.push(syn::Error::new(
                extra.span,
                format!(
                    "at most {} `hotspot(...)` per function (the run-time limit)",
                    limits::MAX_HOTSPOTS
                ),
            ));
        }
        if let Some(extra) = args.breakers.get(8) {
            errors.push(syn::Error::new(
                extra.span,
                "at most 8 `breaker(...)` per function",
            ));
        }
        Ok(args)
    }
}

/// A literal written without its key: a string can only be the resource's name.
fn bare(lit: &Lit, errors: &mut Errors) {
    match lit {
        Lit::Str(s) => errors.at(
            s,
            format!(
                "expected `resource = {}`: arguments are written `key = value`",
                s.token()
            ),
        ),
        other => errors.at(
            other,
            "expected `key = value`: a value needs its argument's name, like `qps = 100`",
        ),
    }
}

/// The message for an unknown argument: the nearest known name if it is a likely misspelling
/// (at most 2 edits away), else the list of known names.
fn unknown(name: &str, known: &[&str]) -> String {
    if known == KNOWN && BREAKER_KNOWN.contains(&name) {
        return format!(
            "`{name}` is an argument of `breaker(...)`: write `breaker(..., {name} = ...)`"
        );
    }
    if known == KNOWN && matches!(name, "param" | "burst" | "capacity") {
        return format!(
            "`{name}` is an argument of `hotspot(...)`: write `hotspot(param = ..., {name} = ...)`"
        );
    }
    let nearest = known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d);
    if let Some((_, k)) = nearest {
        return format!("unknown argument `{name}`: did you mean `{k}`?");
    }
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "unknown argument `{name}`: expected one of {}",
        list.join(", ")
    )
}

/// The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of
/// two neighbouring characters, one each (optimal string alignment).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// Checks one `breaker(...)`: exactly one strategy, a recovery time, sane numbers.
fn breaker(
    key: &Ident,
    items: Vec<RawArg>,
    durations: &mut Vec<(&'static str, WithSpan<u64>)>,
    errors: &mut Errors,
) -> Option<Breaker> {
    let mut values: Vec<(Ident, Expr)> = Vec::new();
    for item in items {
        match item {
            RawArg::Value { key, value } => {
                let name = key.to_string();
                if !BREAKER_KNOWN.contains(&name.as_str()) {
                    errors.at(&key, unknown(&name, BREAKER_KNOWN));
                } else if values.iter().any(|(k, _)| *k == key) {
                    errors.at(
                        &key,
                        format!("duplicate argument `{name}` in `breaker(...)`"),
                    );
                } else {
                    values.push((key, value));
                }
            }
            RawArg::List { key, .. } => errors.at(&key, "`breaker(...)` does not nest"),
            RawArg::Bare(lit) => errors.at(
                lit,
                "expected `key = value` inside `breaker(...)`, like `error_ratio = 0.5`",
            ),
        }
    }
    let get = |name: &str| values.iter().find(|(k, _)| k == name);
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
    let recovery_ms = match get("recovery") {
        Some((k, v)) => duration_arg(k, v, "recovery", durations, errors).map(|d| d.value),
        None => {
            errors.at(
                key,
                "`breaker(...)` needs `recovery = \"5s\"`: how long it stays open before probing",
            );
            None
        }
    };
    let min_requests = get("min_requests").map_or(Some(0), |(_, v)| {
        whole(v, "min_requests", 1, limits::MAX_MIN_REQUESTS, errors)
    });
    let window_ms = get("window").map_or(Some(0), |(k, v)| {
        duration_arg(k, v, "window", durations, errors).map(|d| d.value)
    });
    let probes = get("probes").map_or(Some(0), |(_, v)| {
        whole(v, "probes", 1, limits::MAX_PROBES, errors)
    });
    if strategies.len() > 1 {
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

fn ratio(value: &Expr, name: &str, errors: &mut Errors) -> Option<f64> {
    let v = float(value, name, &format!("{name} = 0.5"), errors)?;
    if !(0.0..=1.0).contains(&v) {
        errors.at(value, format!("`{name}` must be a ratio in 0..=1, got {v}"));
        return None;
    }
    Some(v)
}

/// A function argument's name in `params = [...]` or `hotspot(param = ...)`.
fn param_name(value: &Expr, errors: &mut Errors) -> Option<Ident> {
    match value {
        Expr::Path(ExprPath {
            qself: None, path, ..
        }) if path.get_ident().is_some() => path.get_ident().cloned(),
        other => {
            errors.at(
                other,
                "expected the name of one of the function's arguments, like `user_id`",
            );
            None
        }
    }
}

/// `params = [a, b]`: arguments passed as hotspot parameters.
fn param_list(value: &Expr, mentions: &mut Vec<Ident>, errors: &mut Errors) {
    let Expr::Array(list) = value else {
        errors.at(
            value,
            "`params` expects a list of argument names, like `params = [user_id, region]`",
        );
        return;
    };
    let mut listed: Vec<Ident> = Vec::new();
    for item in &list.elems {
        if let Some(name) = param_name(item, errors) {
            if listed.contains(&name) {
                errors.at(&name, format!("`{name}` is listed twice in `params`"));
                continue;
            }
            listed.push(name.clone());
            mentions.push(name);
        }
    }
}

/// Checks one `hotspot(...)`: a `param`, exactly one of `qps` and `concurrency`, sane numbers.
fn hotspot(
    key: &Ident,
    items: Vec<RawArg>,
    mentions: &mut Vec<Ident>,
    errors: &mut Errors,
) -> Option<Hotspot> {
    let mut values: Vec<(Ident, Expr)> = Vec::new();
    for item in items {
        match item {
            RawArg::Value { key, value } => {
                let name = key.to_string();
                if !HOTSPOT_KNOWN.contains(&name.as_str()) {
                    errors.at(&key, unknown(&name, HOTSPOT_KNOWN));
                } else if values.iter().any(|(k, _)| *k == key) {
                    errors.at(
                        &key,
                        format!("duplicate argument `{name}` in `hotspot(...)`"),
                    );
                } else {
                    values.push((key, value));
                }
            }
            RawArg::List { key, .. } => errors.at(&key, "`hotspot(...)` does not nest"),
            RawArg::Bare(lit) => errors.at(
                lit,
                "expected `key = value` inside `hotspot(...)`, like `param = user_id`",
            ),
        }
    }
    let get = |name: &str| values.iter().find(|(k, _)| k == name);
    let param = match get("param") {
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
    };
    let limit = match (get("qps"), get("concurrency")) {
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
    };
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
    let burst = get("burst").and_then(|(k, v)| {
        let b = whole(v, "burst", 0, limits::MAX_CONCURRENCY, errors);
        spanned(k, v, b)
    });
    let capacity = get("capacity").and_then(|(k, v)| {
        let c = whole(v, "capacity", 1, limits::MAX_HOTSPOT_CAPACITY, errors);
        spanned(k, v, c)
    });
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
    if let Some(HotspotLimit::Qps(threshold)) = limit {
        let qps = get("qps").map(|(_, v)| v);
        let window_ms = window.map_or(1_000, |w| w.value);
        hotspot_debt(threshold, window_ms, qps, burst, errors);
        if strict == Some(true) {
            hotspot_strict_burst(threshold, window_ms, burst, errors);
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

/// With `strict = true`, `1 + burst` calls at once must fit in the threshold's whole calls, and
/// what a value owes from idle (`1 + burst` intervals of `window / (floor(qps) - burst)`) in
/// the run-time's clock (its validation refuses the rule otherwise).
fn hotspot_strict_burst(
    threshold: f64,
    window_ms: u64,
    burst: Option<WithSpan<u32>>,
    errors: &mut Errors,
) {
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
fn hotspot_debt(
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

fn whole(value: &Expr, name: &str, min: u32, max: u32, errors: &mut Errors) -> Option<u32> {
    match number(value) {
        Number::Int(i) if i >= i128::from(min) && i <= i128::from(max) => Some(i as u32),
        Number::Int(i) => {
            errors.at(
                value,
                format!("`{name}` must be a whole number from {min} to {max}, got {i}"),
            );
            None
        }
        _ => {
            errors.at(
                value,
                format!("`{name}` expects a whole number literal, like `{name} = {min}`"),
            );
            None
        }
    }
}

/// The duration argument `key = value`, also recorded in `durations` for the limit checks.
fn duration_arg(
    key: &Ident,
    value: &Expr,
    name: &'static str,
    durations: &mut Vec<(&'static str, WithSpan<u64>)>,
    errors: &mut Errors,
) -> Option<WithSpan<u64>> {
    let parsed = spanned(key, value, duration(value, name, errors))?;
    durations.push((name, parsed));
    Some(parsed)
}

/// A duration literal, in milliseconds.
pub(crate) fn duration(value: &Expr, name: &str, errors: &mut Errors) -> Option<u64> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => match crate::duration::millis(s) {
            Ok(ms) => Some(ms),
            Err(why) => {
                errors.at(s, format!("`{name}`: {why}"));
                None
            }
        },
        // Rule files read an integer as milliseconds; the attribute asks for the unit.
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => {
            errors.at(
                i,
                format!(
                    "`{name} = {i}` has no unit: write one, like `{name} = \"{i}s\"` or \
                     `{name} = \"{i}ms\"`; `{name}` expects {}",
                    crate::duration::ACCEPTED
                ),
            );
            None
        }
        other => {
            errors.at(
                other,
                format!("`{name}` expects {}", crate::duration::ACCEPTED),
            );
            None
        }
    }
}

fn resource(value: &Expr, errors: &mut Errors) -> Option<LitStr> {
    string(value, "resource", "resource = \"orders\"", errors)
}

/// A non-empty string literal.
fn string(value: &Expr, name: &str, example: &str, errors: &mut Errors) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if !s.value().is_empty() => Some(s.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            errors.at(
                s,
                format!("`{name}` must not be empty: write a name, like `{example}`"),
            );
            None
        }
        other => {
            errors.at(
                other,
                format!("`{name}` expects a string literal, like `{example}`"),
            );
            None
        }
    }
}

/// A checked value with its key's and its own spans.
fn spanned<T>(key: &Ident, written: &Expr, value: Option<T>) -> Option<WithSpan<T>> {
    value.map(|value| WithSpan {
        value,
        span: key.span(),
        value_span: written.span(),
    })
}

fn boolean(value: &Expr, name: &str, errors: &mut Errors) -> Option<bool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Some(b.value),
        other => {
            errors.at(other, format!("`{name}` expects `true` or `false`"));
            None
        }
    }
}

/// A number literal (integer or float, possibly negated) as `f64`.
fn float(value: &Expr, name: &str, example: &str, errors: &mut Errors) -> Option<f64> {
    match number(value) {
        Number::Int(i) => Some(i as f64),
        Number::Float(f) => Some(f),
        Number::Other => {
            errors.at(
                value,
                format!("`{name}` expects a number literal, like `{example}`"),
            );
            None
        }
    }
}

fn cold_factor(value: &Expr, errors: &mut Errors) -> Option<f64> {
    let v = float(value, "cold_factor", "cold_factor = 3", errors)?;
    if !v.is_finite() || v <= 1.0 {
        errors.at(
            value,
            format!(
                "`cold_factor` must be greater than 1 (the cold rate is qps / cold_factor), got {v}"
            ),
        );
        return None;
    }
    Some(v)
}

/// A number literal, possibly negated: its value as written, or why it is not one.
enum Number {
    Int(i128),
    Float(f64),
    Other,
}

fn number(value: &Expr) -> Number {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<i128>().map_or(Number::Other, Number::Int),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().map_or(Number::Other, Number::Float),
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match number(&u.expr) {
            Number::Int(i) => Number::Int(-i),
            Number::Float(f) => Number::Float(-f),
            Number::Other => Number::Other,
        },
        Expr::Group(g) => number(&g.expr),
        _ => Number::Other,
    }
}

fn qps(value: &Expr, errors: &mut Errors) -> Option<WithSpan<f64>> {
    let v = float(value, "qps", "qps = 100` or `qps = 2.5", errors)?;
    if !v.is_finite() || v <= 0.0 {
        errors.at(
            value,
            format!("`qps` must be a finite number greater than 0, got {v}"),
        );
        return None;
    }
    if v > limits::MAX_THRESHOLD {
        errors.at(
            value,
            format!(
                "`qps` must be at most {} (the run-time limit), got {v}",
                limits::MAX_THRESHOLD
            ),
        );
        return None;
    }
    Some(WithSpan {
        value: v,
        span: value.span(),
        value_span: value.span(),
    })
}

/// A string literal.
fn is_string(value: &Expr) -> bool {
    matches!(
        value,
        Expr::Lit(ExprLit {
            lit: Lit::Str(_),
            ..
        })
    )
}

/// `concurrency = "adaptive"`: the only string `concurrency` takes.
fn adaptive(value: &Expr, errors: &mut Errors) -> Option<Span> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if s.value() == "adaptive" => Some(s.span()),
        other => {
            errors.at(
                other,
                "`concurrency` takes a whole number (`concurrency = 8`) or `\"adaptive\"` (a \
                 limit that follows the measured latency)",
            );
            None
        }
    }
}

fn concurrency(value: &Expr, errors: &mut Errors) -> Option<WithSpan<u32>> {
    match number(value) {
        Number::Int(i) if i > 0 && i <= i128::from(limits::MAX_CONCURRENCY) => Some(WithSpan {
            value: i as u32,
            span: value.span(),
            value_span: value.span(),
        }),
        Number::Int(i) => {
            errors.at(
                value,
                format!(
                    "`concurrency` must be a whole number from 1 to {}, got {i}",
                    limits::MAX_CONCURRENCY
                ),
            );
            None
        }
        Number::Float(_) | Number::Other => {
            errors.at(
                value,
                "`concurrency` expects a whole number literal, like `concurrency = 8`, or \
                 `\"adaptive\"`",
            );
            None
        }
    }
}

fn path(value: &Expr, name: &str, example: &str, errors: &mut Errors) -> Option<Path> {
    match value {
        Expr::Path(ExprPath {
            qself: None, path, ..
        }) => Some(path.clone()),
        other => {
            let what = match name {
                "fallback" | "is_error" => "a path to a function",
                _ => "a path",
            };
            errors.at(other, format!("`{name}` expects {what}, like `{example}`"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, unknown, BREAKER_KNOWN, KNOWN};

    #[test]
    fn edit_distance_counts_swaps_as_one_edit() {
        assert_eq!(edit_distance("qps", "qps"), 0);
        assert_eq!(edit_distance("qsp", "qps"), 1);
        assert_eq!(edit_distance("fallbak", "fallback"), 1);
        assert_eq!(edit_distance("concurency", "concurrency"), 1);
        assert_eq!(edit_distance("qpss", "qps"), 1);
        assert_eq!(edit_distance("warmup", "warm_up"), 1);
        assert_eq!(edit_distance("resorce", "resource"), 1);
        assert_eq!(edit_distance("", "qps"), 3);
        assert_eq!(edit_distance("timeout", "window"), 5);
    }

    #[test]
    fn near_misses_are_suggested_others_listed() {
        assert_eq!(
            unknown("qsp", KNOWN),
            "unknown argument `qsp`: did you mean `qps`?"
        );
        assert_eq!(
            unknown("maxwait", KNOWN),
            "unknown argument `maxwait`: did you mean `max_wait`?"
        );
        assert_eq!(
            unknown("recovry", BREAKER_KNOWN),
            "unknown argument `recovry`: did you mean `recovery`?"
        );
        assert!(unknown("timeout", KNOWN)
            .starts_with("unknown argument `timeout`: expected one of `resource`, `qps`"));
        assert_eq!(
            unknown("recovery", KNOWN),
            "`recovery` is an argument of `breaker(...)`: write `breaker(..., recovery = ...)`"
        );
    }
}
