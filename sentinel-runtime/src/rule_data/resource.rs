//! The resource a rule names, checked the same way for every kind.

use crate::error::RuleError;

/// The longest resource name a rule may give: 512 bytes. A longer one is refused, naming
/// `resource` (and shown cut to its first 64 characters in the error): names come from code,
/// routes and files, where a longer one is a mistake, and every name is kept and shown.
pub const MAX_RESOURCE_NAME_BYTES: usize = 512;

/// How much of a name too long an error shows.
const SHOWN: usize = 64;

/// Refuses a blank resource (empty, or only white space), naming the field `resource`: no
/// entry can name it on purpose, so it is a mistake (Sentinel refuses blank resources in
/// `FlowRuleUtil`, `DegradeRuleManager`, `ParamFlowRuleUtil` and `AuthorityRuleManager`);
/// and one longer than [`MAX_RESOURCE_NAME_BYTES`].
pub(crate) fn validate(resource: &str) -> Result<(), RuleError> {
    if resource.trim().is_empty() {
        return Err(RuleError::new(
            resource,
            "resource",
            "must not be blank (empty or only white space)",
        ));
    }
    if resource.len() > MAX_RESOURCE_NAME_BYTES {
        return Err(RuleError::new(
            &shown(resource),
            "resource",
            format!(
                "is {} bytes long, over the limit of {MAX_RESOURCE_NAME_BYTES} bytes",
                resource.len()
            ),
        ));
    }
    Ok(())
}

/// A name as errors show it: whole up to [`MAX_RESOURCE_NAME_BYTES`], else its first
/// characters and `…`.
pub(crate) fn shown(resource: &str) -> String {
    if resource.len() <= MAX_RESOURCE_NAME_BYTES {
        return resource.to_owned();
    }
    let mut out: String = resource.chars().take(SHOWN).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_shown_cut() {
        let longest = "a".repeat(MAX_RESOURCE_NAME_BYTES);
        assert!(validate(&longest).is_ok());
        let e = validate(&format!("{longest}b")).unwrap_err();
        assert_eq!(e.field(), "resource");
        assert!(e.message().contains("513 bytes long"), "{e}");
        assert_eq!(e.resource().chars().count(), SHOWN + 1, "{e}");
        // Cut at a character, never inside one.
        assert_eq!(shown(&"é".repeat(600)), format!("{}…", "é".repeat(SHOWN)));
    }
}
