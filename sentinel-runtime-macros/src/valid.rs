//! Checks across the arguments, against the run-time's rule limits, and of the guarded function's
//! signature.

use quote::ToTokens;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::args::{Args, WithSpan};
use crate::duration;
use crate::errors::Errors;
use crate::limits;

/// What the generated code passes to the fallback: `self`, an argument's name, or the hidden
/// name of an argument written as a pattern (`Path(id): Path<u64>`), which the body
/// destructures.
pub(crate) enum Passed {
    SelfValue(syn::token::SelfValue),
    Name(Ident),
    Hidden {
        /// The argument's position in the signature.
        index: usize,
        /// Our name for it, which the user's code cannot see.
        name: Ident,
    },
}

impl ToTokens for Passed {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        match self {
            Passed::SelfValue(s) => s.to_tokens(tokens),
            Passed::Name(n) | Passed::Hidden { name: n, .. } => n.to_tokens(tokens),
        }
    }
}

/// The path of an attribute that is this one, however it is imported: `sentinel`,
/// `sentinel_runtime::sentinel`, `::sentinel_runtime::sentinel`.
fn is_sentinel(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|last| last.ident == "sentinel")
}

/// One `#[sentinel]` per function. Two would nest (the one written second guards the body
/// inside the first, and the first sees only what the second lets through), which nobody
/// means. The one written first sees the second among the function's attributes; under a name
/// of its own (`use sentinel_runtime::sentinel as guard`) the second sees the first's expansion.
pub(crate) fn single_attribute(func: &ItemFn, errors: &mut Errors) {
    const COMBINE: &str = "put every rule in one attribute: `#[sentinel(qps = 100, \
                           concurrency = 10, breaker(error_ratio = 0.5, recovery = \"10s\"))]` \
                           guards one resource with all of them";
    for attr in func.attrs.iter().filter(|a| is_sentinel(a)) {
        errors.at(
            attr,
            format!("a function takes one #[sentinel] attribute, and this is a second: {COMBINE}"),
        );
    }
    let expanded = func.block.stmts.iter().any(|stmt| {
        matches!(stmt, syn::Stmt::Item(syn::Item::Static(s)) if s.ident == "__SENTINEL_NODE")
    });
    if expanded {
        errors.push(syn::Error::new(
            proc_macro2::Span::call_site(),
            format!(
                "this function is already guarded by #[sentinel] (under another name): a function \
                 takes one #[sentinel] attribute; {COMBINE}"
            ),
        ));
    }
}

/// `()`, however parenthesized.
fn is_unit(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Group(g) => is_unit(&g.elem),
        Type::Paren(p) => is_unit(&p.elem),
        _ => false,
    }
}

/// Whether the function returns `()`, written or not: never a `Result`.
pub(crate) fn returns_unit(sig: &syn::Signature) -> bool {
    match &sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => is_unit(ty),
    }
}

/// The traffic-shaping options shape the `qps` rule, and only combine in meaningful ways.
fn check_shaping(args: &Args, errors: &mut Errors) {
    let needs_qps = [
        ("window", args.window.map(|w| w.span)),
        ("strict", args.strict.map(|w| w.span)),
        ("warm_up", args.warm_up.map(|w| w.span)),
        ("max_wait", args.max_wait.map(|w| w.span)),
        ("relate", args.relate.as_ref().map(|r| r.span())),
    ];
    if args.qps.is_none() {
        for (name, span) in needs_qps {
            if let Some(span) = span {
                errors.push(syn::Error::new(
                    span,
                    format!("`{name}` shapes the `qps` rule: add `qps = N`"),
                ));
            }
        }
    }
    if let (Some(c), None) = (args.cold_factor, args.warm_up) {
        errors.push(syn::Error::new(
            c.span,
            "`cold_factor` needs `warm_up = \"10s\"` (how long the rate takes to warm up)",
        ));
    }
    if let (Some(w), Some(window)) = (args.warm_up, args.window) {
        if window.value != 1_000 {
            errors.push(syn::Error::new(
                w.span,
                "`warm_up` works on a per-second rate: remove `window` or make it \"1s\"",
            ));
        }
    }
    if let Some(related) = &args.relate {
        if args.warm_up.is_some() || args.max_wait.is_some() {
            errors.at(
                related,
                "`relate` cannot be combined with `warm_up` or `max_wait`",
            );
        }
        if args.window.is_some_and(|w| w.value != 1_000) {
            errors.at(
                related,
                "`relate` counts the related resource's passes per second: remove `window`",
            );
        }
    }
}

/// `shadow` makes the attribute's rules shadow rules: it needs one.
fn check_shadow(args: &Args, errors: &mut Errors) {
    let declares_a_rule = args.qps.is_some()
        || args.concurrency.is_some()
        || args.adaptive_concurrency.is_some()
        || !args.breakers.is_empty()
        || !args.hotspots.is_empty();
    if let (Some(shadow), false) = (args.shadow, declares_a_rule) {
        errors.push(syn::Error::new(
            shadow.span,
            "`shadow` makes the attribute's rules shadow rules (counted, never enforced), and \
             it declares none: add a rule (`qps = N`, `concurrency = N`, `breaker(...)`, \
             `hotspot(...)`), or remove `shadow`",
        ));
    }
}

/// The longest each duration argument may be, and whether that is the run-time's limit.
fn max_millis(name: &str) -> (u64, &'static str) {
    const RUN_TIME: &str = " (the run-time limit)";
    match name {
        "max_wait" => (limits::MAX_WAIT_MS, RUN_TIME),
        "warm_up" => (limits::MAX_WARM_UP_MS, RUN_TIME),
        "recovery" => (limits::MAX_RECOVERY_MS, RUN_TIME),
        "window" => (limits::MAX_WINDOW_MS, RUN_TIME),
        // No run-time limit: the attribute keeps response times to what a `u32` of
        // milliseconds holds, about 49 days.
        _ => (u64::from(u32::MAX), ""),
    }
}

/// Every value within the run-time's limits for the rule it ends up in, so no default rule is
/// dropped when its node is built. The limits checked while parsing (`qps`, `concurrency`,
/// `cold_factor > 1`, `min_requests`, `probes`, ratios, durations greater than zero) are not
/// repeated here.
fn check_limits(args: &Args, errors: &mut Errors) {
    for (name, d) in &args.durations {
        check_duration(name, *d, errors);
    }
    if let Some(c) = args.cold_factor {
        if c.value > limits::MAX_COLD_FACTOR {
            errors.push(syn::Error::new(
                c.value_span,
                format!(
                    "`cold_factor` must be at most {} (the run-time limit: colder would admit \
                     almost nothing while warming up), got {}",
                    limits::MAX_COLD_FACTOR,
                    c.value
                ),
            ));
        }
    }
}

fn check_duration(name: &str, d: WithSpan<u64>, errors: &mut Errors) {
    let (max, why) = max_millis(name);
    if d.value > max {
        errors.push(syn::Error::new(
            d.value_span,
            format!(
                "`{name}` must be at most {}{why}, got {}",
                duration::show(max),
                duration::show(d.value)
            ),
        ));
    }
}

/// Checks `func` against `args`; returns the values the fallback gets, in order.
pub(crate) fn check(args: &Args, func: &ItemFn, errors: &mut Errors) -> Vec<Passed> {
    let sig = &func.sig;
    if let Some(constness) = &sig.constness {
        errors.at(
            constness,
            "#[sentinel] cannot guard a `const fn`: entering a resource reads the clock and \
             updates statistics at run time; remove `const` or the attribute",
        );
    }
    // Whether any other return type is a `Result` is decided by the type system (an alias is
    // one), through `fallback::BlockedValue` and `__private::ResultValue`; `()` never is.
    let returns_unit = returns_unit(sig);
    if !args.fallback_given && returns_unit {
        let message = "#[sentinel] needs `fallback = ...` here: when a call is blocked the \
                       function must still return a value, and only a `Result` can carry the \
                       `BlockError`. Add `fallback = some_fn` (taking the same arguments plus a \
                       `BlockError`, returning the same type), or return a `Result` whose error \
                       type implements `From<BlockError>` (this function returns `()`)";
        errors.at(&sig.ident, message);
    }
    check_shaping(args, errors);
    check_shadow(args, errors);
    check_limits(args, errors);
    if let (Some(is_error), true) = (&args.is_error, returns_unit) {
        errors.at(
            is_error,
            "`is_error` decides which `Err` values count as errors, so the function must \
             return a `Result`, not `()`",
        );
    }
    let mut passed = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(r) => passed.push(Passed::SelfValue(r.self_token)),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    passed.push(Passed::Name(p.ident.clone()))
                }
                // A pattern (`Path(id): Path<u64>`, `(a, b): (u8, u8)`, `_: T`) binds no one
                // name the fallback could be given: the argument gets a hidden one, and the body
                // destructures it. Only needed where there is a fallback to pass it to.
                _ if args.fallback.is_some() => passed.push(Passed::Hidden {
                    index,
                    name: Ident::new(
                        &format!("__sentinel_arg{index}"),
                        proc_macro2::Span::mixed_site(),
                    ),
                }),
                _ => {}
            },
        }
    }
    passed
}

/// The hotspot parameters in index order, each the user's first mention of it (`params = [...]`
/// and `hotspot(param = ...)`, in the order written), checked to name an argument of `func`.
pub(crate) fn params(args: &Args, func: &ItemFn, errors: &mut Errors) -> Vec<Ident> {
    let mut names: Vec<String> = Vec::new();
    let mut has_self = false;
    for input in &func.sig.inputs {
        match input {
            FnArg::Receiver(_) => has_self = true,
            FnArg::Typed(pt) => {
                if let Pat::Ident(p) = &*pt.pat {
                    names.push(p.ident.to_string());
                }
            }
        }
    }
    let mut params: Vec<Ident> = Vec::new();
    for mention in &args.param_mentions {
        if params.iter().any(|p| p == mention) {
            continue;
        }
        let name = mention.to_string();
        if !(names.contains(&name) || (name == "self" && has_self)) {
            errors.at(mention, no_such_argument(&name, &names, &func.sig.ident));
            continue;
        }
        if params.len() == limits::MAX_PARAMS {
            errors.at(
                mention,
                format!(
                    "at most {} hotspot parameters per function (the run-time limit): `{name}` \
                     would be the {}th",
                    limits::MAX_PARAMS,
                    limits::MAX_PARAMS + 1
                ),
            );
            continue;
        }
        params.push(mention.clone());
    }
    params
}

fn no_such_argument(name: &str, names: &[String], func: &Ident) -> String {
    let nearest = names
        .iter()
        .map(|n| (crate::args::edit_distance(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d);
    let hint = match (nearest, names) {
        (Some((_, n)), _) => format!("did you mean `{n}`?"),
        (None, []) => format!("`{func}` takes no named arguments"),
        (None, names) => {
            let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("its arguments are {}", list.join(", "))
        }
    };
    format!(
        "`{name}` is not an argument of `{func}`: hotspot parameters name the function's \
         arguments; {hint}"
    )
}
