//! The public per-kind load and read functions (re-exported by [`rules`](crate::rules)): each
//! is the manager's generic load or read of one kind of the table, named by its line there; a
//! load function's doc (with its example) is its kind folder's `load.md`.

use crate::error::RuleError;
use crate::kinds::table::kinds_table;

use super::load::{load_kind, loaded_rules};

/// Defines `load_<kind>_rules` and `<kind>_rules` for every kind of the table.
macro_rules! define_by_kind {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty {
        rule: $rule:ty, load: $load:ident, read: $read:ident,
    }, )*) => {
        $(
            #[doc = include_str!(concat!("../kinds/", stringify!($name), "/load.md"))]
            pub fn $load(rules: impl IntoIterator<Item = $rule>) -> Result<(), RuleError> {
                load_kind::<$kind>(rules)
            }

            #[doc = concat!(
                "The rules of kind `", stringify!($name), "` loaded now (not the resources' ",
                "defaults), by resource name, in load order per resource: what [`",
                stringify!($load), "`] or [`load`](super::set::load) put in force last."
            )]
            pub fn $read() -> Vec<$rule> {
                loaded_rules(|l| &l.$name)
            }
        )*
    };
}

kinds_table!(define_by_kind);
