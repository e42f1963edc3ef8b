//! The checks of single values every group shares: numbers, strings, booleans, paths and
//! durations, each reporting a value of the wrong kind at the user's token.

use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Path, UnOp};

use super::with_span::WithSpan;
use crate::errors::Errors;

pub(super) fn whole(
    value: &Expr,
    name: &str,
    min: u32,
    max: u32,
    errors: &mut Errors,
) -> Option<u32> {
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
pub(super) fn duration_arg(
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
pub(super) fn duration(value: &Expr, name: &str, errors: &mut Errors) -> Option<u64> {
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

/// A non-empty string literal.
pub(super) fn string(
    value: &Expr,
    name: &str,
    example: &str,
    errors: &mut Errors,
) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if !s.value().trim().is_empty() => Some(s.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            errors.at(
                s,
                format!(
                    "`{name}` must not be blank (empty or only white space): write a name, \
                     like `{example}`"
                ),
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
pub(super) fn spanned<T>(key: &Ident, written: &Expr, value: Option<T>) -> Option<WithSpan<T>> {
    value.map(|value| WithSpan {
        value,
        span: key.span(),
        value_span: written.span(),
    })
}

pub(super) fn boolean(value: &Expr, name: &str, errors: &mut Errors) -> Option<bool> {
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
pub(super) fn float(value: &Expr, name: &str, example: &str, errors: &mut Errors) -> Option<f64> {
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

/// A number literal, possibly negated: its value as written, or why it is not one.
pub(super) enum Number {
    Int(i128),
    Float(f64),
    Other,
}

pub(super) fn number(value: &Expr) -> Number {
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

/// A string literal.
pub(super) fn is_string(value: &Expr) -> bool {
    matches!(
        value,
        Expr::Lit(ExprLit {
            lit: Lit::Str(_),
            ..
        })
    )
}

pub(super) fn path(value: &Expr, name: &str, example: &str, errors: &mut Errors) -> Option<Path> {
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
