//! The flow rule's own values: `qps`, `concurrency` (a number or `"adaptive"`) and
//! `cold_factor`. Its durations (`window`, `warm_up`, `max_wait`) are read as every duration is.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Lit};

use super::values::{float, number, Number};
use super::with_span::WithSpan;
use crate::errors::Errors;
use crate::limits;

pub(super) fn qps(value: &Expr, errors: &mut Errors) -> Option<WithSpan<f64>> {
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

pub(super) fn concurrency(value: &Expr, errors: &mut Errors) -> Option<WithSpan<u32>> {
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

/// `concurrency = "adaptive"`: the only string `concurrency` takes.
pub(super) fn adaptive(value: &Expr, errors: &mut Errors) -> Option<Span> {
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

pub(super) fn cold_factor(value: &Expr, errors: &mut Errors) -> Option<f64> {
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
