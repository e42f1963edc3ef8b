//! A rule file's format, named by its extension: what the file readers and the locator of
//! errors (which scans the text per format) both need, with nothing of either.

use std::path::Path;

/// A rule file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
    Toml,
}

impl Format {
    /// The format a file's extension names: `.json`, `.yaml` / `.yml`, `.toml` (any case).
    pub(crate) fn of(path: &Path) -> Option<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("json") => Some(Format::Json),
            Some("yaml" | "yml") => Some(Format::Yaml),
            Some("toml") => Some(Format::Toml),
            _ => None,
        }
    }
}
