//! How one kind's rules are read from a file ([`Reader`]): with our names, or Sentinel's.

use super::value::{Value, ValueError};

/// How one kind's rules are read: the test for Sentinel's names, a reader for each naming, and
/// how each naming spells a field the rule's validation names (by our name, flat).
pub(crate) struct Reader<R> {
    /// The first field only Sentinel's rules of the kind have, if the rule has one: it is then
    /// read with Sentinel's names.
    pub(crate) is_sentinel: fn(&Value) -> Option<&'static str>,
    pub(crate) ours: fn(Value) -> Result<R, ValueError>,
    pub(crate) sentinel: fn(Value) -> Result<R, ValueError>,
    pub(crate) our_field: fn(&str) -> &str,
    pub(crate) sentinel_field: for<'a> fn(&R, &'a str) -> &'a str,
}

/// The first of `fields` that `node` has.
pub(crate) fn first_of(node: &Value, fields: &[&'static str]) -> Option<&'static str> {
    node.keys()
        .find_map(|k| fields.iter().find(|f| **f == k).copied())
}
