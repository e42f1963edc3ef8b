//! Duration literals (`"500ms"`, `"1.5s"`, `"1m30s"`, `"1d"`), read by the grammar the rule
//! files use (`sentinel_duration`), so a string means the same in both places. The attribute
//! counts whole milliseconds above zero; a bare number (`500` or `"500"`) is refused: write its
//! unit (rule files read an integer as milliseconds, a convenience of file formats).

use std::time::Duration;

use sentinel_duration::DurationError;
use syn::LitStr;

/// What the error messages list as accepted.
pub(crate) const ACCEPTED: &str =
    "a duration string like \"500ms\", \"1.5s\", \"1m30s\" or \"1d\" \
     (units: ns, us, ms, s, m, h, d)";

/// Milliseconds of a duration literal, or what is wrong with it.
pub(crate) fn millis(lit: &LitStr) -> Result<u64, String> {
    let text = lit.value();
    let text = text.trim();
    let d = match sentinel_duration::parse(text) {
        Ok(d) => d,
        Err(DurationError::NoUnit) if text.parse::<u64>().is_ok() => {
            return Err(format!(
                "{text:?} has no unit: write one, like \"{text}s\" or \"{text}ms\"; expected \
                 {ACCEPTED}"
            ))
        }
        // These two list the units already.
        Err(why @ (DurationError::UnknownUnit(_) | DurationError::NoUnit)) => {
            return Err(format!("{text:?} is not a duration: {why}"))
        }
        Err(why) => {
            return Err(format!(
                "{text:?} is not a duration: {why}; expected {ACCEPTED}"
            ))
        }
    };
    whole_millis(text, d)
}

/// `d` in whole milliseconds above zero, or what is wrong with it.
fn whole_millis(text: &str, d: Duration) -> Result<u64, String> {
    if d.is_zero() {
        return Err(format!("{text:?} must be greater than zero"));
    }
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(format!(
            "{text:?} is not a whole number of milliseconds: the attribute counts milliseconds"
        ));
    }
    // How long each argument may be is checked where its run-time limit is known (`valid`).
    u64::try_from(d.as_millis()).map_err(|_| format!("{text:?} is out of range"))
}

/// `ms` in the largest unit that divides it evenly: `"2h"`, `"90s"`, `"1500ms"`.
pub(crate) fn show(ms: u64) -> String {
    sentinel_duration::format(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> Result<u64, String> {
        millis(&LitStr::new(s, proc_macro2::Span::call_site()))
    }

    /// The grammar's table, which the rule files' reader runs too: every duration it accepts
    /// means the same here, or is refused for the attribute's own range (zero, finer than a
    /// millisecond, beyond `u64` milliseconds); everything it refuses is refused.
    #[test]
    fn the_duration_table_reads_as_in_rule_files() {
        for &(text, expected) in sentinel_duration::cases::CASES {
            let got = ms(text);
            let millis = expected.and_then(|d| u64::try_from(d.as_millis()).ok());
            match expected {
                Some(d)
                    if !d.is_zero()
                        && d.subsec_nanos().is_multiple_of(1_000_000)
                        && millis.is_some() =>
                {
                    assert_eq!(got, Ok(d.as_millis() as u64), "{text:?}")
                }
                Some(d) if d.is_zero() => {
                    assert!(got.unwrap_err().contains("greater than zero"), "{text:?}")
                }
                Some(d) if !d.subsec_nanos().is_multiple_of(1_000_000) => {
                    assert!(
                        got.unwrap_err().contains("whole number of milli"),
                        "{text:?}"
                    )
                }
                Some(_) => assert!(got.unwrap_err().contains("out of range"), "{text:?}"),
                None => assert!(got.is_err(), "{text:?} accepted: {got:?}"),
            }
        }
    }

    #[test]
    fn units() {
        assert_eq!(ms("500ms"), Ok(500));
        assert_eq!(ms("10s"), Ok(10_000));
        assert_eq!(ms("1.5s"), Ok(1_500));
        assert_eq!(ms("2m"), Ok(120_000));
        assert_eq!(ms("1m30s"), Ok(90_000));
        assert_eq!(ms("1h"), Ok(3_600_000));
        assert_eq!(ms("1d"), Ok(86_400_000));
        assert_eq!(ms(" 7 s "), Ok(7_000));
        assert_eq!(ms("1_500ms"), Ok(1_500));
        assert_eq!(ms("2000us"), Ok(2));
    }

    #[test]
    fn mistakes() {
        let err = ms("10").unwrap_err();
        assert!(
            err.contains("no unit") && err.contains("\"10s\" or \"10ms\""),
            "{err}"
        );
        assert!(ms("10x").unwrap_err().contains("unknown unit \"x\""));
        assert!(ms("1m30").unwrap_err().contains("needs a unit"));
        assert!(ms("0s").unwrap_err().contains("greater than zero"));
        assert!(ms("s").unwrap_err().contains("expected"));
        assert!(ms("_5s").unwrap_err().contains("not a number"));
        assert!(ms("1500us")
            .unwrap_err()
            .contains("whole number of milliseconds"));
        assert!(ms("99999999999999999999ms")
            .unwrap_err()
            .contains("out of range"));
        assert!(ms("3938453320844195178974243.14183759504d")
            .unwrap_err()
            .contains("out of range"));
    }

    #[test]
    fn shown() {
        assert_eq!(show(1), "1ms");
        assert_eq!(show(1_500), "1500ms");
        assert_eq!(show(90_000), "90s");
        assert_eq!(show(120_000), "2m");
        assert_eq!(show(7_200_000), "2h");
        assert_eq!(show(86_400_000), "24h");
        assert_eq!(show(u64::from(u32::MAX)), "4294967295ms");
    }
}
