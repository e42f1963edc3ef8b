//! [`load_file`]: read, check and load a rule file once, and count what it holds.

use std::path::Path;

use super::file::read_file;
use super::report;
use super::text::parse;
use crate::kinds::table::kinds_table;
use crate::manager::set::{self, RuleSet, RuleSetError};

/// Reads, checks and loads a rule file: [`RuleSet::from_path`], then
/// [`load`](crate::rules::load). On any error nothing changes.
///
/// Every load is counted in [`metrics::rule_loads`](crate::metrics::rule_loads) (kind
/// `rule_set`) and sets the file's result in [`metrics::rule_files`](crate::metrics::rule_files);
/// with the `tracing` feature it gives an event on target `sentinel`: `rules loaded` (with the
/// `file`, its content's `version` and the number of `rules`) or `rules refused, the previous
/// stay in force` (with the `file`, the first problem's `line`, `column` and `field`, the
/// number of `problems` and the whole `error`), whatever refused it: the file unreadable, its
/// syntax, a bad rule or a budget.
pub fn load_file(path: impl AsRef<Path>) -> Result<(), RuleSetError> {
    let path = path.as_ref();
    let (result, version, rules) = match read_file(path) {
        Err(e) => (Err(e), None, 0),
        Ok((text, format)) => {
            let version = report::content_version(text.as_bytes());
            match parse(&text, format) {
                Err(e) => (Err(e.in_file(path)), Some(version), 0),
                Ok(set) => {
                    let rules = rule_count(&set);
                    let result = set::load_uncounted(set).map_err(|e| e.in_file(path));
                    (result, Some(version), rules)
                }
            }
        }
    };
    report::file_load(path, version, rules, result)
}

/// Defines [`rule_count`] from the table of kinds: every kind's rules are counted.
macro_rules! define_rule_count {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// How many rules a set has, of every kind.
        pub(crate) fn rule_count(set: &RuleSet) -> usize {
            // Every field by name: a kind left out does not compile.
            let RuleSet { $( $name, )* } = set;
            0 $( + $name.len() )*
        }
    };
}

kinds_table!(define_rule_count);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::files::format::Format;
    use crate::rules::files::text::parse;

    /// One rule of every kind of the table: each is counted (outlier rules were not).
    #[test]
    fn every_kind_of_rule_is_counted() {
        let text = "\
flow:
  - { resource: count-a, threshold: 1 }
circuit_breaker:
  - { resource: count-b, strategy: { type: error_count, threshold: 5 }, recovery: 1s }
hotspot:
  - { resource: count-c, param_index: 0, threshold: 3 }
system:
  - { qps: 100 }
authority:
  - { resource: count-d, strategy: allow, origins: [ops] }
outlier:
  - { resource: count-e, strategy: { type: consecutive_errors, threshold: 5 }, recovery: 10s }
";
        let set = parse(text, Format::Yaml).expect("a set of every kind");
        let by_kind = [
            set.flow.len(),
            set.circuit_breaker.len(),
            set.hotspot.len(),
            set.system.len(),
            set.authority.len(),
            set.outlier.len(),
        ];
        assert_eq!(by_kind, [1; 6], "{set:?}");
        assert_eq!(rule_count(&set), 6);
        assert_eq!(rule_count(&RuleSet::default()), 0);
    }
}
