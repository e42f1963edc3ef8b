//! The resource a rule names, checked the same way for every kind.

use crate::error::RuleError;

/// Refuses a blank resource (empty, or only white space), naming the field `resource`: no
/// entry can name it on purpose, so it is a mistake (Sentinel refuses blank resources in
/// `FlowRuleUtil`, `DegradeRuleManager`, `ParamFlowRuleUtil` and `AuthorityRuleManager`).
pub(crate) fn validate(resource: &str) -> Result<(), RuleError> {
    if resource.trim().is_empty() {
        return Err(RuleError::new(
            resource,
            "resource",
            "must not be blank (empty or only white space)",
        ));
    }
    Ok(())
}
