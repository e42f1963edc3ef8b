#![doc = include_str!("FORMAT.md")]

// The file layer, top down: `load_file` (`load`) and the file source (`rules::source`, with
// `watch` for its directories) read a file's text, `text` parses
// it (`format` names it by extension, `locate` finds a bad field's line), `read` reads each
// kind's list through the table of kinds (each kind's `file` and `sentinel` modules, in its
// folder under `kinds/`, read its rules with our names or Sentinel's), and `report` tells the
// operator. A new kind needs nothing here: its folder, its line in the table, and its section
// in FORMAT.md.

pub(crate) mod file;
pub(crate) mod format;
pub(crate) mod load;
mod locate;
mod read;
pub(crate) mod report;
pub(crate) mod text;
pub(crate) mod watch;

pub use crate::rule_data::file::value::MAX_EXPANDED_BYTES;
pub use load::load_file;

#[cfg(test)]
mod parse_counts;
#[cfg(test)]
mod sentinel_tests;
#[cfg(test)]
pub(crate) mod tests;
