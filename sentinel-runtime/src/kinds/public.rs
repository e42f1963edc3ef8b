//! What the kinds add to the public [`rules`](crate::rules) module: each kind's `public` face
//! (its rule, the rule's types and limits), re-exported here through the table of kinds.

use super::table::kinds_table;

/// Re-exports every kind's `public` face.
macro_rules! define_public {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        $( pub use crate::kinds::$name::public::*; )*
    };
}

kinds_table!(define_public);
