//! The statistics window both flow and circuit-breaker rules declare.

use std::time::Duration;

use crate::error::RuleError;

/// The largest sample count a rule's window accepts.
pub const MAX_SAMPLE_COUNT: u32 = 10_000;

/// Checks a rule's `window` and `sample_count`: a positive whole number of milliseconds (at most
/// `u32::MAX`), split into `1..=MAX_SAMPLE_COUNT` buckets that divide it evenly.
pub(crate) fn validate(
    resource: &str,
    window: Duration,
    sample_count: u32,
) -> Result<(), RuleError> {
    let err = |field, message: String| Err(RuleError::new(resource, field, message));
    if sample_count == 0 || sample_count > MAX_SAMPLE_COUNT {
        return err(
            "sample_count",
            format!("must be in 1..={MAX_SAMPLE_COUNT}, got {sample_count}"),
        );
    }
    let ms = window.as_millis();
    if window.is_zero()
        || !window.subsec_nanos().is_multiple_of(1_000_000)
        || ms > u128::from(u32::MAX)
    {
        return err(
            "window",
            format!(
                "must be a positive whole number of milliseconds (at most {} ms), got {window:?}",
                u32::MAX
            ),
        );
    }
    if !ms.is_multiple_of(u128::from(sample_count)) {
        return err(
            "window",
            format!("({ms} ms) must be divisible by sample_count ({sample_count})"),
        );
    }
    Ok(())
}
