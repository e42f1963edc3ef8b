//! The rules in force as rule-file text with a version (`ETag`), and edits: checked whole,
//! applied whole, saved atomically to the rules file, refused on a stale version.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::{json, Value};

use super::save::Staged;
use crate::rules::{self, RuleSet, RuleSetError};

/// The version of a rule set: a hash of everything in it, quoted as an `ETag` is.
pub(crate) fn etag(set: &RuleSet) -> String {
    // Debug covers every field of every rule (exceptions' hashes and texts included).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{set:?}").hash(&mut h);
    format!("\"{:016x}\"", h.finish())
}

/// The answer to `GET /api/rules`: the status, the body and the version. Hotspot exceptions
/// known only by their hash are written as `{ value_hash, hash_key, threshold }` (see the
/// rule-file format), which a `PUT` to this process reads back.
pub(crate) fn get() -> (u16, Value, String) {
    let set = rules::current();
    let tag = etag(&set);
    match serde_json::to_value(&set) {
        Ok(value) => (200, value, tag),
        Err(e) => (
            500,
            json!({ "error": format!("the rules in force cannot be written as a rule file: {e}") }),
            tag,
        ),
    }
}

/// The outcome of a `PUT /api/rules`.
pub(crate) enum Put {
    /// Applied (and saved, with a rules file): the new version.
    Applied(String),
    /// No `If-Match`.
    NoVersion,
    /// `If-Match` names another version than the one in force: the current one.
    Stale(String),
    /// The set was refused; nothing changed.
    Refused(RuleSetError),
    /// Not applied: the rules file's new copy could not be written (the reason).
    CannotSave(String),
    /// Applied, but the rules file could not be written (the reason).
    NotSaved(String, String),
    /// Not written: the rule source could not be reached (the reason).
    Unavailable(String),
}

/// Edits, one at a time (the version check and the load are one step).
pub(crate) struct Editor {
    file: Option<PathBuf>,
    lock: Mutex<()>,
}

impl Editor {
    /// An editor saving to `file`, if any.
    pub(crate) fn new(file: Option<PathBuf>) -> Editor {
        Editor {
            file,
            lock: Mutex::new(()),
        }
    }

    /// Checks `if_match` against the rules in force, parses `body` (YAML if `yaml`, else
    /// JSON), checks every rule, writes the rules file's temporary copy, loads the set, and
    /// renames the copy over the file.
    pub(crate) fn put(&self, if_match: Option<&str>, body: &str, yaml: bool) -> Put {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // `*` ("whatever is there") would skip the check that keeps two editors from
        // overwriting each other: a version is required.
        let Some(if_match) = if_match.map(str::trim).filter(|v| *v != "*") else {
            return Put::NoVersion;
        };
        let current = etag(&rules::current());
        if if_match != current {
            return Put::Stale(current);
        }
        let parsed = if yaml {
            RuleSet::from_yaml(body)
        } else {
            RuleSet::from_json(body)
        };
        let set = match parsed.and_then(|set| set.validate().map(|()| set)) {
            Ok(set) => set,
            Err(e) => return Put::Refused(e),
        };
        let staged = match &self.file {
            Some(file) => match stage(file, &set) {
                Ok(staged) => Some(staged),
                Err(e) => return Put::CannotSave(e),
            },
            None => None,
        };
        // A refused load drops the staged copy, which removes it.
        if let Err(e) = rules::load(set.clone()) {
            return Put::Refused(e);
        }
        let tag = etag(&rules::current());
        if let Some(staged) = staged
            && let Err(e) = staged.commit()
        {
            return Put::NotSaved(tag, format!("applied, but {e}"));
        }
        Put::Applied(tag)
    }
}

/// Writes `set` in `file`'s format to a new temporary file beside the file it resolves to
/// (same directory: the rename is atomic), synced.
fn stage(file: &Path, set: &RuleSet) -> Result<Staged, String> {
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let text = match ext.as_deref() {
        Some("yaml" | "yml") => set.to_yaml(),
        Some("toml") => set.to_toml(),
        _ => set.to_json(),
    }
    .map_err(|e| format!("cannot write the rules file: {e}"))?;
    Staged::write(file, &text)
}

/// Loads the rules file `file` at start, if it is there (else the rules in force stay until
/// the first save), after removing the temporary copies an interrupted save left beside it.
pub(crate) fn load_at_start(file: &Path) -> Result<(), RuleSetError> {
    super::save::remove_stale(file);
    if !file.exists() {
        return Ok(());
    }
    rules::load(RuleSet::from_path(file)?)
}

/// A refused set as the API writes it: a message and each problem with its field.
pub(crate) fn refused_json(e: &RuleSetError) -> Value {
    let problems: Vec<Value> = e
        .entries()
        .iter()
        .map(|p| {
            json!({
                "kind": p.kind,
                "index": p.index,
                "resource": p.resource,
                "field": p.field,
                "line": p.line,
                "column": p.column,
                "message": p.message,
            })
        })
        .collect();
    json!({ "error": e.to_string(), "problems": problems })
}
