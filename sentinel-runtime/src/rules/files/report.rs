//! What an operator sees of rule-file loads ([`load_file`](super::load_file) and the watcher):
//! every load, loaded or refused (unreadable, unparseable, a bad rule, over a budget), is
//! counted in the rule loads (kind `rule_set`), gives a `tracing` event on target `sentinel`
//! (feature `tracing`) naming the file, and sets the file's last-reload result
//! ([`metrics::rule_files`](crate::metrics::rule_files), Prometheus
//! `sentinel_rule_file_last_reload_success`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::manager::set::RuleSetError;

/// At most this many files have a last-reload result (one series each); a file beyond it is
/// still counted and reported in events, without a result of its own.
pub const MAX_REPORTED_FILES: usize = 64;

/// Each rule file's last load: `true` if it put the file's content in force.
static FILES: Mutex<BTreeMap<PathBuf, bool>> = Mutex::new(BTreeMap::new());

/// The file's key: its absolute path (as the watcher names it), else the path as given. A
/// source that is no file names itself with a URL (`redis://host:port/key`), kept as it is.
fn key(path: &Path) -> PathBuf {
    if path.to_str().is_some_and(|p| p.contains("://")) {
        return path.to_owned();
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Sets `path`'s last-reload result, if it has one or there is room for one more.
pub(crate) fn set_file_result(path: &Path, loaded: bool) {
    let mut files = FILES.lock().unwrap_or_else(PoisonError::into_inner);
    let key = key(path);
    if let Some(result) = files.get_mut(&key) {
        *result = loaded;
    } else if files.len() < MAX_REPORTED_FILES {
        files.insert(key, loaded);
    }
}

/// Every rule file's last-reload result, by absolute path (sorted).
pub(crate) fn file_results() -> Vec<(PathBuf, bool)> {
    let files = FILES.lock().unwrap_or_else(PoisonError::into_inner);
    files.iter().map(|(p, &ok)| (p.clone(), ok)).collect()
}

/// Reports a load of the file at `path` (content `version`, if it was read; `rules` in it, if
/// loaded): counted, an event, the file's result. Returns `result`.
pub(crate) fn file_load(
    path: &Path,
    version: Option<u64>,
    rules: usize,
    result: Result<(), RuleSetError>,
) -> Result<(), RuleSetError> {
    crate::manager::count_load("rule_set", result.is_ok());
    set_file_result(path, result.is_ok());
    #[cfg(feature = "tracing")]
    match &result {
        Ok(()) => tracing::info!(
            target: "sentinel",
            kind = "rule_set",
            file = %path.display(),
            version,
            rules,
            "rules loaded"
        ),
        Err(error) => {
            let first = error.entries().first();
            tracing::warn!(
                target: "sentinel",
                kind = "rule_set",
                file = %path.display(),
                version,
                line = first.and_then(|e| e.line),
                column = first.and_then(|e| e.column),
                field = first.and_then(|e| e.field.as_deref()),
                problems = error.entries().len(),
                %error,
                "rules refused, the previous stay in force"
            )
        }
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (version, rules);
    result
}

/// A 64-bit FNV-1a hash of a file's bytes, its content's version: stable across runs and Rust
/// versions, so a version can be compared with one computed elsewhere.
pub(crate) fn content_version(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_results_are_bounded() {
        let dir = std::env::temp_dir().join("sentinel-report-unit-bounded");
        for n in 0..MAX_REPORTED_FILES + 10 {
            set_file_result(&dir.join(format!("{n}.yaml")), n % 2 == 0);
        }
        let results = file_results();
        assert!(results.len() <= MAX_REPORTED_FILES, "{}", results.len());
        // A file already reported is updated, even at the cap.
        if let Some((path, ok)) = results.first().cloned() {
            set_file_result(&path, !ok);
            let now = file_results().into_iter().find(|(p, _)| *p == path);
            assert_eq!(now, Some((path, !ok)));
        }
    }

    #[test]
    fn versions_are_fnv1a() {
        assert_eq!(content_version(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(content_version(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
