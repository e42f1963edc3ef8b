//! Checks across the arguments and the guarded function's signature.

use quote::ToTokens;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::args::Args;
use crate::errors::Errors;

/// What the generated code passes to the fallback: `self` or an argument's name.
pub(crate) enum Passed {
    SelfValue(syn::token::SelfValue),
    Name(Ident),
}

impl ToTokens for Passed {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        match self {
            Passed::SelfValue(s) => s.to_tokens(tokens),
            Passed::Name(n) => n.to_tokens(tokens),
        }
    }
}

/// Whether the function's return type is a `Result` (any path whose last segment is
/// `Result`: `Result<T, E>`, `io::Result<T>`, `anyhow::Result<T>`).
pub(crate) fn returns_result(output: &ReturnType) -> bool {
    match output {
        ReturnType::Type(_, ty) => is_result(ty),
        ReturnType::Default => false,
    }
}

fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Result")
        }
        Type::Group(g) => is_result(&g.elem),
        Type::Paren(p) => is_result(&p.elem),
        _ => false,
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
    if !args.fallback_given && !returns_result(&sig.output) {
        let message = "#[sentinel] needs `fallback = ...` here: when a call is blocked the \
                       function must still return a value, and only a `Result` can carry the \
                       `BlockError`. Add `fallback = some_fn` (taking the same arguments plus a \
                       `BlockError`, returning the same type), or return a `Result` whose error \
                       type implements `From<BlockError>`";
        match &sig.output {
            ReturnType::Type(_, ty) => errors.at(ty, message),
            ReturnType::Default => errors.at(
                &sig.ident,
                format!("{message} (this function returns `()`)"),
            ),
        }
    }
    check_shaping(args, errors);
    if let Some(is_error) = &args.is_error {
        if !returns_result(&sig.output) {
            errors.at(
                is_error,
                "`is_error` decides which `Err` values count as errors, so the function must \
                 return a `Result`",
            );
        }
    }
    let mut passed = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => passed.push(Passed::SelfValue(r.self_token)),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    passed.push(Passed::Name(p.ident.clone()))
                }
                other if args.fallback.is_some() => errors.at(
                    other,
                    "#[sentinel] cannot pass this argument pattern to the fallback: bind the \
                     argument to a name (`arg: Type`) and destructure it in the body",
                ),
                _ => {}
            },
        }
    }
    passed
}
