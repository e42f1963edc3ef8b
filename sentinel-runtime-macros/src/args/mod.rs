//! Parsing the attribute's arguments: `key = value, ...`, each value checked on its own and kept
//! with its span so later errors point at the user's token.
//!
//! `parse` reads the whole list into [`Args`]; `list` reads the grammar, and every group's list
//! with one reader; `values` checks single values of every kind, kept as a [`WithSpan`]; each group of arguments has its module: `flow` (the flow rule's own
//! values), `breaker`, `hotspot` and `params`; `suggest` words the message for an unknown name.

mod breaker;
mod flow;
mod hotspot;
mod known;
mod list;
mod params;
mod parse;
mod suggest;
mod values;
mod with_span;

pub(crate) use self::breaker::{Breaker, BreakerKind};
pub(crate) use self::hotspot::{Hotspot, HotspotLimit};
pub(crate) use self::parse::Args;
pub(crate) use self::suggest::edit_distance;
pub(crate) use self::with_span::WithSpan;
