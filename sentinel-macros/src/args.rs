//! Parsing the attribute's arguments: `key = value, ...`, each value checked on its own and kept
//! with its span so later errors point at the user's token.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Path, Token, UnOp};

use crate::errors::Errors;

/// The arguments the attribute accepts, in the order the error message lists them.
pub(crate) const KNOWN: &[&str] = &["resource", "qps", "concurrency", "fallback", "crate"];

/// One `key = value`, not yet checked.
struct RawArg {
    key: Ident,
    value: Expr,
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArg> {
        // `crate` is a keyword: accept any identifier as the key, and check it later.
        let key = Ident::parse_any(input)?;
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
        let value = input.parse()?;
        Ok(RawArg { key, value })
    }
}

/// A value with the span of the literal the user wrote.
#[derive(Clone, Copy)]
pub(crate) struct WithSpan<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// The checked arguments.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) resource: Option<LitStr>,
    pub(crate) qps: Option<WithSpan<f64>>,
    pub(crate) concurrency: Option<WithSpan<u32>>,
    pub(crate) fallback: Option<Path>,
    /// `fallback = ...` was written, even if its value was refused.
    pub(crate) fallback_given: bool,
    pub(crate) krate: Option<Path>,
}

impl Args {
    /// Parses and checks `key = value, ...`, recording every problem in `errors`.
    pub(crate) fn parse(input: ParseStream<'_>, errors: &mut Errors) -> syn::Result<Args> {
        let raw = Punctuated::<RawArg, Token![,]>::parse_terminated(input)?;
        let mut args = Args::default();
        let mut seen: Vec<String> = Vec::new();
        for RawArg { key, value } in raw {
            let name = key.unraw().to_string();
            if seen.contains(&name) && KNOWN.contains(&name.as_str()) {
                errors.at(&key, format!("duplicate argument `{name}`: give it once"));
                continue;
            }
            seen.push(name.clone());
            match name.as_str() {
                "resource" => args.resource = resource(&value, errors),
                "qps" => args.qps = qps(&value, errors),
                "concurrency" => args.concurrency = concurrency(&value, errors),
                "fallback" => {
                    args.fallback_given = true;
                    args.fallback = path(&value, "fallback", "fallback = busy", errors);
                }
                "crate" => args.krate = path(&value, "crate", "crate = ::sentinel_runtime", errors),
                _ => errors.at(
                    &key,
                    format!(
                        "unknown argument `{name}`: expected one of {}",
                        KNOWN
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
            }
        }
        Ok(args)
    }
}

fn resource(value: &Expr, errors: &mut Errors) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if !s.value().is_empty() => Some(s.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            errors.at(
                s,
                "`resource` must not be empty: write a name, like `resource = \"orders\"`",
            );
            None
        }
        other => {
            errors.at(
                other,
                "`resource` expects a string literal, like `resource = \"orders\"`",
            );
            None
        }
    }
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
    let v = match number(value) {
        Number::Int(i) => i as f64,
        Number::Float(f) => f,
        Number::Other => {
            errors.at(
                value,
                "`qps` expects a number literal, like `qps = 100` or `qps = 2.5`",
            );
            return None;
        }
    };
    if !v.is_finite() || v <= 0.0 {
        errors.at(
            value,
            format!("`qps` must be a finite number greater than 0, got {v}"),
        );
        return None;
    }
    if v > 2_147_483_647.0 {
        errors.at(value, "`qps` must be at most 2147483647");
        return None;
    }
    Some(WithSpan {
        value: v,
        span: value.span(),
    })
}

fn concurrency(value: &Expr, errors: &mut Errors) -> Option<WithSpan<u32>> {
    match number(value) {
        Number::Int(i) if i > 0 && i <= i128::from(i32::MAX) => Some(WithSpan {
            value: i as u32,
            span: value.span(),
        }),
        Number::Int(i) => {
            errors.at(
                value,
                format!("`concurrency` must be a whole number from 1 to 2147483647, got {i}"),
            );
            None
        }
        Number::Float(_) | Number::Other => {
            errors.at(
                value,
                "`concurrency` expects a whole number literal, like `concurrency = 8`",
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
                "fallback" => "a path to a function",
                _ => "a path",
            };
            errors.at(other, format!("`{name}` expects {what}, like `{example}`"));
            None
        }
    }
}
