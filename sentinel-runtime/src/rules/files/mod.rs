#![doc = include_str!("FORMAT.md")]

// The file layer, top down: `load_file` (here) and the watcher read a file's text, `text` parses
// it (`format` names it by extension, `locate` finds a bad field's line), `read` reads each
// rule from its parsed `value` with our names (`transfer`, `duration`, `exceptions`) or
// Sentinel's (`sentinel`), and `report` tells the operator.
//
// A new rule kind in files: its file shape in `transfer` (a mirror and a line in `through!`),
// its list in `read::RawFields` with a `read::RuleKind` (name, keys) and a `read::Reader`, a
// line in `read::read_rules` and in `rule_count` below, its reader in `sentinel/` if Sentinel
// has the kind, and its section in FORMAT.md.

mod duration;
mod exceptions;
mod format;
mod locate;
mod read;
pub(crate) mod report;
mod sentinel;
mod text;
mod transfer;
mod value;
pub(crate) mod watch;

use std::fs;
use std::path::Path;

use self::format::Format;
use self::text::parse;
use crate::manager::set::{self, RuleSet, RuleSetError};

/// The format a file's extension names (`.json`, `.yaml` / `.yml`, `.toml`), or an error that
/// says which extensions are known.
pub(crate) fn format_of(path: &Path) -> Result<Format, RuleSetError> {
    Format::of(path).ok_or_else(|| {
        RuleSetError::whole(
            "the file's extension does not say its format: use .json, .yaml, .yml or .toml",
        )
        .in_file(path)
    })
}

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

/// How many rules a set has, of every kind.
pub(crate) fn rule_count(set: &RuleSet) -> usize {
    set.flow.len()
        + set.circuit_breaker.len()
        + set.hotspot.len()
        + set.system.len()
        + set.authority.len()
}

/// A rule file's text and format (from its extension); errors name the file.
fn read_file(path: &Path) -> Result<(String, Format), RuleSetError> {
    let format = format_of(path)?;
    let text = fs::read_to_string(path)
        .map_err(|e| RuleSetError::whole(format!("cannot read the file: {e}")).in_file(path))?;
    Ok((text, format))
}

#[cfg(test)]
mod parse_counts;
#[cfg(test)]
pub(crate) mod tests;
