//! Code generation: a `static` node, an entry guard around the body, the fallback on a block.
//!
//! `attribute` is the entry (parse, validate, expand); `guard` puts the parts together, each
//! reading the context in `cx`: `node` (the static node and its default rules), `entry`
//! (the admission, with the hotspot parameters), `body` (the user's body under the entry,
//! sync or async), `fallback` (what a blocked call returns, with `fn_pointer`, the fallback's
//! expected signature); `spans` names and places the tokens rustc reports.

mod attribute;
mod body;
mod cx;
mod entry;
mod fallback;
mod fn_pointer;
mod guard;
mod node;
mod spans;

pub(crate) use attribute::sentinel;
