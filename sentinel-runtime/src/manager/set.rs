//! [`RuleSet`]: every kind of rule in one value, loaded all at once by [`load`]; [`current`]
//! reads the rules in force back; [`RuleSetError`] lists every problem of a refused set.

use std::fmt;
use std::path::{Path, PathBuf};

pub use super::rule_set::RuleSet;
use crate::error::RuleError;

impl RuleSet {
    /// An empty set: loading it clears every loaded rule (resources return to their defaults).
    pub fn new() -> RuleSet {
        RuleSet::default()
    }

    /// Whether the set has no rule of any kind.
    pub fn is_empty(&self) -> bool {
        super::load::is_empty(self)
    }

    /// Checks every rule of every kind (as [`load`] does first), listing every problem by kind,
    /// position and field.
    pub fn validate(&self) -> Result<(), RuleSetError> {
        let problems = problems(self);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RuleSetError::new(
                problems
                    .into_iter()
                    .map(|(kind, index, e)| RuleSetErrorEntry::from_rule_error(kind, index, &e))
                    .collect(),
            ))
        }
    }
}

/// Every invalid rule of `set`, by kind and position in its kind's list (see
/// [`load::problems`](super::load::problems)).
pub(crate) fn problems(set: &RuleSet) -> Vec<(&'static str, usize, RuleError)> {
    super::load::problems(set)
}

/// Validates every rule of every kind, then replaces **every kind at once**: the loaded rules of
/// each kind become exactly the set's (an empty list clears that kind; resources no longer named
/// return to their defaults). One bad rule refuses the whole set and nothing changes; the error
/// lists every bad rule with its kind, position, resource and field.
///
/// A concurrent load of one kind ([`load_flow_rules`](crate::rules::load_flow_rules)) sees
/// either none or all of this set.
pub fn load(set: RuleSet) -> Result<(), RuleSetError> {
    super::load::counted("rule_set", load_uncounted(set))
}

/// [`load`] without counting or reporting the load (a rule file's load is reported with the
/// file's name).
pub(crate) fn load_uncounted(set: RuleSet) -> Result<(), RuleSetError> {
    set.validate()?;
    super::load::replace_all(set).map_err(|problems| {
        // Unreachable after `validate`, which makes the same checks; kept for safety.
        RuleSetError::new(
            problems
                .into_iter()
                .map(|(kind, index, e)| RuleSetErrorEntry::from_rule_error(kind, index, &e))
                .collect(),
        )
    })
}

/// The rules loaded now, every kind (not the resources' defaults): what the last [`load`] (or
/// per-kind load) put in force, every kind read at once, each in the order of
/// [`flow_rules`](crate::rules::flow_rules),
/// [`circuit_breaker_rules`](crate::rules::circuit_breaker_rules),
/// [`hotspot_rules`](crate::rules::hotspot_rules),
/// [`system_rules`](crate::rules::system_rules) and
/// [`authority_rules`](crate::rules::authority_rules).
pub fn current() -> RuleSet {
    super::load::current()
}

/// A refused rule set: every problem found, each with where it is.
///
/// Parsing a file refuses it at the first syntax error (one entry with the line and column);
/// a file that parses has each of its bad rules listed, at the bad field's line and column
/// (with the line where the rule starts, if another), the first 100 in file order and a last
/// entry counting the others.
///
/// ```
/// use sentinel_runtime::rules::{self, FlowRule, RuleSet};
///
/// let mut set = RuleSet::new();
/// set.flow.push(FlowRule::qps("", 1.0));
/// set.flow.push(FlowRule::qps("doc-err", f64::NAN));
/// let err = rules::load(set).unwrap_err();
/// assert_eq!(err.entries().len(), 2);
/// assert_eq!(
///     err.to_string(),
///     "invalid rule set (2 problems):\n  \
///      flow[0] (resource ``): field `resource` must not be blank (empty or only white space)\n  \
///      flow[1] (resource `doc-err`): field `threshold` must be a finite number, got NaN"
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSetError {
    path: Option<PathBuf>,
    entries: Vec<RuleSetErrorEntry>,
    /// Whether the rules were not read at all (their store unreachable, no document there)
    /// rather than found invalid: said first by the error's words.
    unread: Option<Unread>,
}

/// Why a source's rules were not read at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Only a Redis source (features `rule-files` and `redis`) is ever unreachable.
#[cfg_attr(not(all(feature = "rule-files", feature = "redis")), allow(dead_code))]
pub(crate) enum Unread {
    /// The store that keeps the document did not answer.
    Unreachable,
    /// The store answered, and holds no document.
    NoDocument,
}

/// One problem of a [`RuleSetError`]: a bad rule (its kind, position, resource and field), or a
/// problem of the whole file (a syntax error, an unreadable or empty file).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleSetErrorEntry {
    /// The rule's kind (`"flow"`, `"circuit_breaker"`, `"hotspot"`, `"system"`,
    /// `"authority"`), if the problem is one rule's.
    pub kind: Option<&'static str>,
    /// The rule's position in its kind's list (from 0), if the problem is one rule's.
    pub index: Option<usize>,
    /// The line in the file (from 1): where the bad field is (where its rule starts if the field
    /// is not in the file, e.g. a missing one), or where the syntax error is.
    pub line: Option<usize>,
    /// The column (from 1) of `line`, where known.
    pub column: Option<usize>,
    /// The line where the bad rule starts (from 1), if the problem is one rule's in a file.
    pub rule_line: Option<usize>,
    /// The resource the bad rule names, if it names one.
    pub resource: Option<String>,
    /// The bad field, as the file spells it (`threshold`, `warm_up.period`, Sentinel's `count`).
    pub field: Option<String>,
    /// What is wrong, and what is accepted.
    pub message: String,
}

impl RuleSetErrorEntry {
    /// A problem of the whole input, not of one rule.
    pub(crate) fn whole(message: impl Into<String>) -> RuleSetErrorEntry {
        RuleSetErrorEntry {
            kind: None,
            index: None,
            line: None,
            column: None,
            rule_line: None,
            resource: None,
            field: None,
            message: message.into(),
        }
    }

    pub(crate) fn from_rule_error(
        kind: &'static str,
        index: usize,
        e: &RuleError,
    ) -> RuleSetErrorEntry {
        RuleSetErrorEntry {
            kind: Some(kind),
            index: Some(index),
            resource: Some(e.resource().to_owned()),
            field: Some(e.field().to_owned()),
            message: e.message().to_owned(),
            ..RuleSetErrorEntry::whole("")
        }
    }

    #[cfg(feature = "rule-files")]
    pub(crate) fn at(mut self, location: Option<(usize, usize)>) -> RuleSetErrorEntry {
        if let Some((line, column)) = location {
            self.line = Some(line);
            self.column = Some(column);
        }
        self
    }
}

impl fmt::Display for RuleSetErrorEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
            f.write_str(": ")?;
        }
        if let Some(kind) = self.kind {
            f.write_str(kind)?;
            if let Some(index) = self.index {
                write!(f, "[{index}]")?;
            }
            let resource = self.resource.as_ref().map(|r| format!("resource `{r}`"));
            let rule_line = self
                .rule_line
                .filter(|&rule| Some(rule) != self.line)
                .map(|rule| format!("rule at line {rule}"));
            let notes: Vec<String> = resource.into_iter().chain(rule_line).collect();
            if !notes.is_empty() {
                write!(f, " ({})", notes.join(", "))?;
            }
            f.write_str(": ")?;
        }
        match &self.field {
            Some(field) => write!(f, "field `{field}` {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl RuleSetError {
    pub(crate) fn new(entries: Vec<RuleSetErrorEntry>) -> RuleSetError {
        RuleSetError {
            path: None,
            entries,
            unread: None,
        }
    }

    #[cfg(feature = "rule-files")]
    /// The rules were not read at all (see [`Unread`]): `message` says why.
    pub(crate) fn unread(why: Unread, message: impl Into<String>) -> RuleSetError {
        RuleSetError {
            unread: Some(why),
            ..RuleSetError::whole(message)
        }
    }

    #[cfg(feature = "rule-files")]
    /// Why the rules were not read at all, if they were not (else they were found invalid).
    pub(crate) fn unread_why(&self) -> Option<Unread> {
        self.unread
    }

    #[cfg(feature = "rule-files")]
    /// An error of the whole input (unreadable, empty, syntax).
    pub(crate) fn whole(message: impl Into<String>) -> RuleSetError {
        RuleSetError::new(vec![RuleSetErrorEntry::whole(message)])
    }

    #[cfg(feature = "rule-files")]
    /// The same error, about the file at `path`.
    pub(crate) fn in_file(mut self, path: &Path) -> RuleSetError {
        self.path = Some(path.to_owned());
        self
    }

    /// Every problem found, in file order where known. Never empty.
    pub fn entries(&self) -> &[RuleSetErrorEntry] {
        &self.entries
    }

    /// The file the problems are in, if the set came from a file.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl fmt::Display for RuleSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.unread, &self.path) {
            (None, _) => f.write_str("invalid rule set")?,
            (Some(_), Some(path)) => write!(f, "no rules read from {}", path.display())?,
            (Some(_), None) => f.write_str("no rules read")?,
        }
        if let (None, Some(path)) = (self.unread, &self.path) {
            write!(f, " in {}", path.display())?;
        }
        match self.entries.as_slice() {
            [one] => write!(f, ": {one}"),
            many => {
                write!(f, " ({} problems):", many.len())?;
                for entry in many {
                    write!(f, "\n  {entry}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RuleSetError {}

#[cfg(test)]
mod tests {
    use super::*;
    const FLOW: &str = "flow";
    const CIRCUIT_BREAKER: &str = "circuit_breaker";
    use crate::rules::{CircuitBreakerRule, FlowRule, MAX_BREAKERS_PER_RESOURCE};
    use std::time::Duration;

    #[test]
    fn problems_list_every_bad_rule_and_the_first_breaker_over_the_cap() {
        let ok = |r: CircuitBreakerRule| r.recovery(Duration::from_secs(1));
        let mut breakers: Vec<CircuitBreakerRule> = (0..=MAX_BREAKERS_PER_RESOURCE as u32)
            .map(|n| ok(CircuitBreakerRule::error_count("many", n + 1)))
            .collect();
        breakers.insert(2, CircuitBreakerRule::error_count("no-recovery", 1));
        let flow = vec![FlowRule::qps("a", 1.0), FlowRule::qps("b", -1.0)];
        let set = RuleSet {
            flow,
            circuit_breaker: breakers,
            ..RuleSet::default()
        };
        let found: Vec<(&str, usize, &str, String)> = problems(&set)
            .into_iter()
            .map(|(k, i, e)| (k, i, e.field(), e.resource().to_owned()))
            .collect();
        assert_eq!(
            found,
            vec![
                (FLOW, 1, "threshold", "b".to_owned()),
                (CIRCUIT_BREAKER, 2, "recovery", "no-recovery".to_owned()),
                (
                    CIRCUIT_BREAKER,
                    MAX_BREAKERS_PER_RESOURCE + 1,
                    "resource",
                    "many".to_owned()
                ),
            ]
        );
    }

    #[cfg(feature = "rule-files")]
    #[test]
    fn error_text_names_file_line_rule_and_field() {
        let entry = RuleSetErrorEntry::from_rule_error(
            FLOW,
            3,
            &RuleError::new("orders", "threshold", "must be >= 0, got -2"),
        )
        .at(Some((12, 5)));
        let err = RuleSetError::new(vec![entry]).in_file(Path::new("rules.yaml"));
        assert_eq!(
            err.to_string(),
            "invalid rule set in rules.yaml: line 12, column 5: flow[3] (resource `orders`): \
             field `threshold` must be >= 0, got -2"
        );
        fn assert_traits<T: Clone + Send + Sync + std::error::Error + 'static>() {}
        assert_traits::<RuleSetError>();
    }
}
