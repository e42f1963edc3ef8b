//! [`RuleSet`]: every kind of rule in one value (its methods and loading are in `set`). Its
//! fields are the table of kinds' (`kinds::table`): one per kind, of that kind's rules.

use crate::kinds::table::kinds_table;

/// Defines [`RuleSet`] with a field per kind of the table.
macro_rules! define_rule_set {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty {
        rule: $rule:ty, load: $load:ident, read: $read:ident,
    }, )*) => {
        /// Every kind of rule at once: what a rule file holds, what
        /// [`load`](crate::rules::load) puts in force (replacing every kind together) and what
        /// [`current`](crate::rules::current) returns.
        ///
        /// Build one in code (the struct is `#[non_exhaustive]`, so start from
        /// `RuleSet::default()`), or read one from a file with the default feature `rule-files`:
        /// `RuleSet::from_json`, `from_yaml`, `from_toml`, `from_path`, and `rules::watch_file`
        /// to reload it on change. The file format (with a complete example in each format, and
        /// Sentinel's JSON names) is described in the `rules::files` module.
        ///
        /// ```
        /// use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, RuleSet};
        /// use std::time::Duration;
        ///
        /// let mut set = RuleSet::default();
        /// set.flow.push(FlowRule::qps("doc-set-api", 100.0));
        /// set.circuit_breaker.push(
        ///     CircuitBreakerRule::error_ratio("doc-set-db", 0.5).recovery(Duration::from_secs(5)),
        /// );
        /// rules::load(set.clone())?;
        /// assert_eq!(rules::current(), set);
        ///
        /// // One bad rule refuses the whole set; the rules in force stay.
        /// let mut bad = set.clone();
        /// bad.flow.push(FlowRule::qps("doc-set-other", -1.0));
        /// let err = rules::load(bad).unwrap_err();
        /// assert_eq!(err.entries().len(), 1);
        /// assert_eq!(err.entries()[0].index, Some(1));
        /// assert_eq!(err.entries()[0].field.as_deref(), Some("threshold"));
        /// assert_eq!(rules::current(), set);
        /// # rules::load(RuleSet::default())?;
        /// # Ok::<(), rules::RuleSetError>(())
        /// ```
        #[derive(Clone, Debug, Default, PartialEq)]
        #[cfg_attr(feature = "rule-files", derive(serde::Serialize))]
        #[non_exhaustive]
        pub struct RuleSet {
            $(
                $(#[$doc])*
                pub $name: Vec<$rule>,
            )*
        }
    };
}

kinds_table!(define_rule_set);
