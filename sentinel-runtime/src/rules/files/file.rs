//! A rule file on disk: its format, from its extension, and its text.

use std::fs;
use std::path::Path;

use super::format::Format;
use crate::manager::set::RuleSetError;

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

/// A rule file's text and format (from its extension); errors name the file.
pub(crate) fn read_file(path: &Path) -> Result<(String, Format), RuleSetError> {
    let format = format_of(path)?;
    let text = fs::read_to_string(path)
        .map_err(|e| RuleSetError::whole(format!("cannot read the file: {e}")).in_file(path))?;
    Ok((text, format))
}
