#![doc = include_str!("FORMAT.md")]

// The file layer, top down: `load_file` (`load`) and the file source (`rules::source`, with
// `watch` for its directories) read a file's text, `text` parses
// it (`format` names it by extension, `locate` finds a bad field's line), `read` reads each
// rule from its parsed `value` with our names (`transfer`, `duration`, `exceptions`) or
// Sentinel's (`sentinel`), and `report` tells the operator.
//
// A new rule kind in files: its file shape in `transfer` (a mirror and a line in `through!`),
// its list in `read::RawFields` with a `read::RuleKind` (name, keys) and a `read::Reader`, a
// line in `read::read_rules` and in `load::rule_count`, its reader in `sentinel/` if Sentinel
// has the kind, and its section in FORMAT.md.

mod duration;
mod exceptions;
pub(crate) mod file;
pub(crate) mod format;
pub(crate) mod load;
mod locate;
mod read;
pub(crate) mod report;
mod sentinel;
pub(crate) mod text;
mod transfer;
mod value;
pub(crate) mod watch;

pub use load::load_file;

#[cfg(test)]
mod parse_counts;
#[cfg(test)]
pub(crate) mod tests;
