//! What the kinds share to validate a list of rules: each rule's own `validate`, then caps on
//! the rules of one resource ([`Cap`]).

use std::collections::HashMap;

use crate::error::RuleError;

/// A cap on the rules of one kind per resource (or per resource and some part of the rule).
pub(crate) struct Cap<R> {
    pub(crate) max: usize,
    /// What the rules are called in the error ("hotspot rules"), or with a `field` other than
    /// `resource`, the whole error.
    pub(crate) what: &'static str,
    /// The rule's resource and what the cap counts within it (`None`: the rule is not counted).
    pub(crate) key: fn(&R) -> Option<(&str, u64)>,
    /// The field the error names.
    pub(crate) field: &'static str,
}

/// The problems of one kind's rules, in order: each rule's first bad field, and for each of
/// `caps`, the first valid rule beyond it.
pub(crate) fn problems<R>(
    rules: &[R],
    validate: impl Fn(&R) -> Result<(), RuleError>,
    caps: &[Cap<R>],
) -> Vec<(usize, RuleError)> {
    let mut problems = Vec::new();
    let mut counted: HashMap<(usize, &str, u64), usize> = HashMap::new();
    for (i, rule) in rules.iter().enumerate() {
        if let Err(e) = validate(rule) {
            problems.push((i, e));
            continue;
        }
        for (c, cap) in caps.iter().enumerate() {
            let Some((resource, part)) = (cap.key)(rule) else {
                continue;
            };
            let count = counted.entry((c, resource, part)).or_default();
            *count += 1;
            if *count == cap.max + 1 {
                let (max, what) = (cap.max, cap.what);
                let message = match cap.field {
                    "resource" => format!("has more than {max} {what}"),
                    _ => what.to_owned(),
                };
                problems.push((i, RuleError::new(resource, cap.field, message)));
                break;
            }
        }
    }
    problems
}
