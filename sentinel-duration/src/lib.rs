//! The one duration grammar of `sentinel-runtime`: rule files (`recovery: 1m30s`) and the
//! `#[sentinel]` attribute (`recovery = "1m30s"`) read durations with this code, so a string
//! means the same in both places. (The attribute's proc-macro crate cannot depend on the
//! runtime, hence a crate of its own.)
//!
//! A duration is one or more numbers, each followed by its unit, optionally separated by
//! spaces, and summed: `"500ms"`, `"1.5s"`, `".5s"`, `"1m30s"`, `"1h 30m"`, `"2 min"`, `"1d"`,
//! `"250us"`, `"7ns"`, `"1_500ms"`.
//!
//! * Units: `ns`; `us` (`µs`, `μs`); `ms`; `s` (`sec`); `m` (`min`); `h`; `d` (24 h).
//! * A number is decimal digits with an optional fraction (`1.5`, `.5`); `_` may separate
//!   digits as in Rust's literals (`1_000ms`), but not start a number.
//! * Exact to the nanosecond: a fraction finer than that (`"1.5ns"`) is refused, never rounded.
//! * Every step is checked: a sum beyond [`Duration::MAX`] is refused, never wrapped.
//! * A number without a unit (`"500"`) is refused here. What a bare integer means is the
//!   caller's choice: rule files read an integer (not a string) as milliseconds; the attribute
//!   asks for the unit.
//!
//! Zero (`"0s"`) is a duration; whether a field accepts it is the field's check.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::time::Duration;

#[doc(hidden)]
pub mod cases;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The units the grammar accepts, as error messages list them.
pub const UNITS: &str = "ns, us, ms, s, m, h or d";

/// Why a string is not a duration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Nothing but whitespace.
    Empty,
    /// A unit with no number before it (`"ms"`).
    NoNumber,
    /// A number with no unit after it (`"500"`).
    NoUnit,
    /// A unit the grammar does not know (`"10x"`), as written.
    UnknownUnit(String),
    /// A number that is not one (`"1.2.3s"`, `"_5s"`), as written.
    BadNumber(String),
    /// A fraction finer than a nanosecond (`"1.5ns"`).
    FinerThanNanos,
    /// More than [`Duration::MAX`].
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Empty => f.write_str("empty"),
            DurationError::NoNumber => f.write_str("expected a number before the unit"),
            DurationError::NoUnit => write!(f, "a number needs a unit ({UNITS})"),
            DurationError::UnknownUnit(unit) => write!(f, "unknown unit {unit:?} ({UNITS})"),
            DurationError::BadNumber(number) => write!(f, "{number:?} is not a number"),
            DurationError::FinerThanNanos => f.write_str("finer than a nanosecond"),
            DurationError::TooLong => f.write_str(
                "out of range: longer than the longest duration (about 584.9 billion years)",
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// Nanoseconds per `unit`, or `None` for a unit the grammar does not know.
fn scale(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" | "sec" => NANOS_PER_SEC,
        "m" | "min" => 60 * NANOS_PER_SEC,
        "h" => 3_600 * NANOS_PER_SEC,
        "d" => 86_400 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// The digits of `text` without `_` separators, or `None` if it is not digits and separators
/// starting with a digit (an empty `text` is `Some("")`).
fn digits(text: &str) -> Option<String> {
    if text.starts_with('_') || !text.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    Some(text.chars().filter(|&c| c != '_').collect())
}

/// `number` (digits, an optional fraction) times `scale` nanoseconds, exactly, or why not.
fn scaled(number: &str, scale: u128) -> Result<u128, DurationError> {
    let bad = || DurationError::BadNumber(number.to_owned());
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let (whole, fraction) = (
        digits(whole).ok_or_else(bad)?,
        digits(fraction).ok_or_else(bad)?,
    );
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    // Leading zeros never overflow; any other whole part beyond 39 digits does.
    let whole = whole.trim_start_matches('0');
    let whole: u128 = match whole {
        "" => 0,
        w => w.parse().map_err(|_| DurationError::TooLong)?,
    };
    let mut nanos = whole.checked_mul(scale).ok_or(DurationError::TooLong)?;
    // Trailing zeros of a fraction add nothing. The rest must end at a whole nanosecond: with
    // its last digit not zero, `k` digits need 2^k or 5^k to divide the unit's nanoseconds
    // (at most 2^16 and 5^11 do), so more than 24 never can.
    let fraction = fraction.trim_end_matches('0');
    if !fraction.is_empty() {
        if fraction.len() > 24 {
            return Err(DurationError::FinerThanNanos);
        }
        let numerator: u128 = fraction.parse().map_err(|_| bad())?;
        let denominator = 10u128.pow(fraction.len() as u32);
        // numerator < 10^24 and scale <= 8.64e13: the product fits a u128 (< 3.4e38).
        let part = numerator * scale;
        if !part.is_multiple_of(denominator) {
            return Err(DurationError::FinerThanNanos);
        }
        nanos = nanos
            .checked_add(part / denominator)
            .ok_or(DurationError::TooLong)?;
    }
    Ok(nanos)
}

/// Parses a duration: `"500ms"`, `"1.5s"`, `"1m30s"`, `"2 h"`, `"1d"`, `"1_500ms"`.
///
/// ```
/// use std::time::Duration;
/// use sentinel_duration::{parse, DurationError};
///
/// assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1_500)));
/// assert_eq!(parse("500"), Err(DurationError::NoUnit));
/// assert_eq!(parse("99999999999999999999999999d"), Err(DurationError::TooLong));
/// ```
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        rest = rest[number_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start();
        if number.is_empty() {
            return Err(match unit {
                "" => DurationError::BadNumber(rest.chars().take(1).collect()),
                _ => DurationError::NoNumber,
            });
        }
        if unit.is_empty() {
            return Err(DurationError::NoUnit);
        }
        let scale = scale(unit).ok_or_else(|| DurationError::UnknownUnit(unit.to_owned()))?;
        let part = scaled(number, scale)?;
        nanos = nanos.checked_add(part).ok_or(DurationError::TooLong)?;
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| DurationError::TooLong)?;
    // The remainder is below 10^9: it fits.
    Ok(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32))
}

/// `d` in the largest unit that is exact, up to hours: `"500ms"`, `"10s"`, `"90s"`, `"1m"`,
/// `"24h"`, `"1500us"`, `"0ms"`. What [`parse`] reads back as `d`.
pub fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0ms".to_owned();
    }
    let units: [(u128, &str); 5] = [
        (3_600 * NANOS_PER_SEC, "h"),
        (60 * NANOS_PER_SEC, "m"),
        (NANOS_PER_SEC, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ];
    for (scale, unit) in units {
        if nanos.is_multiple_of(scale) {
            return format!("{}{unit}", nanos / scale);
        }
    }
    format!("{nanos}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        for &(text, expected) in cases::CASES {
            assert_eq!(parse(text).ok(), expected, "{text:?}: {:?}", parse(text));
        }
    }

    #[test]
    fn each_refusal_says_why() {
        let cases = [
            ("", DurationError::Empty),
            ("   ", DurationError::Empty),
            ("ms", DurationError::NoNumber),
            ("5", DurationError::NoUnit),
            ("1m30", DurationError::NoUnit),
            ("1x", DurationError::UnknownUnit("x".into())),
            ("10m30x", DurationError::UnknownUnit("x".into())),
            ("1.2.3s", DurationError::BadNumber("1.2.3".into())),
            ("_5s", DurationError::BadNumber("_5".into())),
            ("1._5s", DurationError::BadNumber("1._5".into())),
            (".s", DurationError::BadNumber(".".into())),
            ("-1s", DurationError::BadNumber("-".into())),
            ("1.5ns", DurationError::FinerThanNanos),
            ("1.0000000001ns", DurationError::FinerThanNanos),
            ("0.000000000000001d", DurationError::FinerThanNanos),
            (
                "0.0000000000000000000000001s",
                DurationError::FinerThanNanos,
            ),
            (
                "99999999999999999999999999999999999999999999ns",
                DurationError::TooLong,
            ),
            ("18446744073709551616s", DurationError::TooLong),
            (
                "3938453320844195178974243.14183759504d",
                DurationError::TooLong,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn the_edges_of_the_range() {
        let max = Duration::MAX;
        assert_eq!(parse("18446744073709551615.999999999s"), Ok(max));
        assert_eq!(parse("18446744073709551615s 999999999ns"), Ok(max));
        assert_eq!(
            parse("18446744073709551615s 1000000000ns"),
            Err(DurationError::TooLong)
        );
        // Leading zeros of any length, trailing zeros of any length.
        let zeros = "0".repeat(100);
        assert_eq!(parse(&format!("{zeros}1s")), Ok(Duration::from_secs(1)));
        assert_eq!(
            parse(&format!("1.5{zeros}s")),
            Ok(Duration::from_millis(1_500))
        );
        // A long fraction that still ends at a whole nanosecond: 625e-15 d is 54 ns.
        assert_eq!(parse("0.000000000000625d"), Ok(Duration::from_nanos(54)));
    }

    #[test]
    fn formatted_durations_read_back() {
        for (d, text) in [
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(1), "1s"),
            (Duration::from_secs(90), "90s"),
            (Duration::from_secs(60), "1m"),
            (Duration::from_secs(7_200), "2h"),
            (Duration::from_secs(86_400), "24h"),
            (Duration::ZERO, "0ms"),
            (Duration::from_micros(1_500), "1500us"),
            (Duration::from_nanos(3), "3ns"),
            (Duration::MAX, "18446744073709551615999999999ns"),
        ] {
            assert_eq!(format(d), text);
            assert_eq!(parse(text), Ok(d), "{text}");
        }
    }
}
