//! The built-in checks' order numbers, Sentinel's: custom slots run between them by theirs.
//! One per kind of rule, from the list of block kinds (`block_kinds.rs`).

pub use crate::block_kinds::slot_orders::*;
