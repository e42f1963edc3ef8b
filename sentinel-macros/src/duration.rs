//! Duration literals: `"500ms"`, `"10s"`, `"1m"`, `"1h"`, checked at compile time.

use syn::LitStr;

/// What the error messages list as accepted.
pub(crate) const ACCEPTED: &str =
    "a duration string like \"500ms\", \"10s\", \"1m\" or \"1h\" (units: ms, s, m, h)";

/// Milliseconds of a duration literal, or what is wrong with it.
pub(crate) fn millis(lit: &LitStr) -> Result<u64, String> {
    let text = lit.value();
    let text = text.trim();
    // Digits, with `_` separators as in Rust's literals (`"1_500ms"`).
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("expected {ACCEPTED}, got {text:?}"));
    }
    if let Some(fraction) = unit.strip_prefix('.') {
        let unit = fraction
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim();
        let smaller = match unit {
            "h" => "m",
            "m" => "s",
            _ => "ms",
        };
        return Err(format!(
            "{text:?} is not a whole number: write it in a smaller unit ({smaller}); expected \
             {ACCEPTED}"
        ));
    }
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    let per_unit: u64 = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "" => return Err(format!("{text:?} has no unit: expected {ACCEPTED}")),
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: expected {ACCEPTED}"
            ))
        }
    };
    // How long each argument may be is checked where its run-time limit is known (`valid`).
    let ms = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(per_unit))
        .ok_or_else(|| format!("{text:?} is too long"))?;
    if ms == 0 {
        return Err(format!("{text:?} must be greater than zero"));
    }
    Ok(ms)
}

/// `ms` in the largest unit that divides it evenly: `"2h"`, `"90s"`, `"1500ms"`.
pub(crate) fn show(ms: u64) -> String {
    [(3_600_000, "h"), (60_000, "m"), (1_000, "s")]
        .iter()
        .find(|(per_unit, _)| ms.is_multiple_of(*per_unit) && ms > 0)
        .map_or_else(
            || format!("{ms}ms"),
            |(per_unit, unit)| format!("{}{unit}", ms / per_unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> Result<u64, String> {
        millis(&LitStr::new(s, proc_macro2::Span::call_site()))
    }

    #[test]
    fn units() {
        assert_eq!(ms("500ms"), Ok(500));
        assert_eq!(ms("10s"), Ok(10_000));
        assert_eq!(ms("2m"), Ok(120_000));
        assert_eq!(ms("1h"), Ok(3_600_000));
        assert_eq!(ms(" 7 s "), Ok(7_000));
        assert_eq!(ms("1_500ms"), Ok(1_500));
    }

    #[test]
    fn mistakes() {
        assert!(ms("10").unwrap_err().contains("no unit"));
        assert!(ms("10d").unwrap_err().contains("unknown unit"));
        assert!(ms("0s").unwrap_err().contains("greater than zero"));
        assert!(ms("s").unwrap_err().contains("expected"));
        assert!(
            ms("1.5s").unwrap_err().contains("not a whole number"),
            "{:?}",
            ms("1.5s")
        );
        assert!(ms("1.5s").unwrap_err().contains("(ms)"));
        assert!(ms("2.5h").unwrap_err().contains("(m)"));
        assert!(ms("_5s").unwrap_err().contains("expected"));
        assert!(ms("99999999999999999999ms")
            .unwrap_err()
            .contains("too long"));
        assert!(ms("9999999999999999h").unwrap_err().contains("too long"));
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
