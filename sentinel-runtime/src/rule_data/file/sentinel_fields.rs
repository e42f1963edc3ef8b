//! Sentinel's field values, as its JSON writes them: numbers that may be strings, whole numbers,
//! codes, and the checks every kind shares (`limitApp`, `regex`, fields at their defaults).

use serde::de::{self, Deserializer, Visitor};

use crate::rule_data::file::value::ValueError;

pub(crate) fn refuse(field: &str, message: impl Into<String>) -> ValueError {
    ValueError::new(Some(field), message)
}

/// A number as Sentinel's JSON may give it: a number, or a string holding a finite one
/// (fastjson reads both, and Sentinel's own datasource tests write `"count": "0.0"`).
pub(crate) fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(NumberVisitor)
}

/// [`number`], or `null` (or absent, with `#[serde(default)]`) for none.
pub(crate) fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(OptNumber)
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number (or a string holding one)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

/// The `Option<f64>` side of [`NumberVisitor`], for [`opt_number`].
impl<'de> Visitor<'de> for OptNumber {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number (or a string holding one), or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        number(d).map(Some)
    }
}

struct OptNumber;

/// Sentinel's `regex` (a resource name that is a regular expression, since 1.8.7; its
/// serialisers write `"regex": false` on every rule): accepted when false.
pub(crate) fn check_regex(regex: Option<bool>) -> Result<(), ValueError> {
    if regex == Some(true) {
        return Err(refuse(
            "regex",
            "is true: resource names as regular expressions are not supported (only false)",
        ));
    }
    Ok(())
}

/// A whole number in `0..=max`, for Sentinel's integer fields (which JSON may write as `10.0`).
pub(crate) fn whole(field: &str, value: f64, max: f64) -> Result<f64, ValueError> {
    if value.is_finite() && value >= 0.0 && value <= max && value.fract() == 0.0 {
        Ok(value)
    } else {
        Err(refuse(
            field,
            format!("must be a whole number in 0..={max}, got {value}"),
        ))
    }
}

/// A whole number in `1..=u32::MAX` of `unit`.
pub(crate) fn positive(field: &str, value: f64, unit: &str) -> Result<f64, ValueError> {
    let max = f64::from(u32::MAX);
    if value.is_finite() && value >= 1.0 && value <= max && value.fract() == 0.0 {
        Ok(value)
    } else {
        Err(refuse(
            field,
            format!("must be a whole number of {unit} in 1..={max}, got {value}"),
        ))
    }
}

/// One of the `codes` (with their meanings, for the message).
pub(crate) fn code(
    field: &str,
    value: Option<f64>,
    default: u8,
    codes: &str,
) -> Result<u8, ValueError> {
    match value {
        None => Ok(default),
        Some(v) if v.fract() == 0.0 && (0.0..=255.0).contains(&v) => Ok(v as u8),
        Some(v) => Err(refuse(field, format!("must be {codes}, got {v}"))),
    }
}

pub(crate) fn check_limit_app(limit_app: Option<&str>) -> Result<(), ValueError> {
    match limit_app {
        None | Some("default") => Ok(()),
        Some(other) => Err(refuse(
            "limitApp",
            format!(
                "is `{other}`: limiting by caller origin is not supported yet, only \"default\" \
                 (every caller)"
            ),
        )),
    }
}

/// A field Sentinel writes on every rule with its default: accepted when unused only at that
/// default (another value would be a setting we would silently drop).
pub(crate) fn unused_at_default(
    field: &str,
    value: Option<f64>,
    default: f64,
    used_with: &str,
) -> Result<(), ValueError> {
    match value {
        Some(v) if v != default => Err(refuse(
            field,
            format!(
                "is only used {used_with}; got {v} without it (remove it, or set it to {default})"
            ),
        )),
        _ => Ok(()),
    }
}
