//! The rules in force as rule-file text with a version (`ETag`), and edits: checked whole,
//! applied whole, saved atomically to the rules file, refused on a stale version.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::save::Staged;
use crate::rules::source::DocumentFormat;
use crate::rules::{self, RuleSet, RuleSetError};

/// The format of a rule document the API reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
    Toml,
}

impl Format {
    /// The format a `Content-Type` names: YAML or TOML if it says so, else JSON.
    pub(crate) fn of_content_type(content_type: Option<&str>) -> Format {
        let t = content_type.unwrap_or("").to_ascii_lowercase();
        if t.contains("yaml") {
            Format::Yaml
        } else if t.contains("toml") {
            Format::Toml
        } else {
            Format::Json
        }
    }

    /// The format a file's extension names (`.yaml`/`.yml`, `.toml`, else JSON).
    pub(crate) fn of_file(file: &Path) -> Format {
        use crate::rules::files::format::Format as FileFormat;
        match FileFormat::of(file) {
            Some(FileFormat::Yaml) => Format::Yaml,
            Some(FileFormat::Toml) => Format::Toml,
            Some(FileFormat::Json) | None => Format::Json,
        }
    }

    pub(crate) fn document(self) -> DocumentFormat {
        match self {
            Format::Json => DocumentFormat::Json,
            Format::Yaml => DocumentFormat::Yaml,
            Format::Toml => DocumentFormat::Toml,
        }
    }

    pub(crate) fn of_document(format: DocumentFormat) -> Format {
        match format {
            DocumentFormat::Yaml => Format::Yaml,
            DocumentFormat::Toml => Format::Toml,
            _ => Format::Json,
        }
    }

    /// Its media type, as a `Content-Type`.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
            Format::Toml => "application/toml",
        }
    }

    /// Reads and checks `text` in this format.
    pub(crate) fn parse(self, text: &str) -> Result<RuleSet, RuleSetError> {
        match self {
            Format::Json => RuleSet::from_json(text),
            Format::Yaml => RuleSet::from_yaml(text),
            Format::Toml => RuleSet::from_toml(text),
        }
    }

    /// `set` written in this format.
    pub(crate) fn write(self, set: &RuleSet) -> Result<String, RuleSetError> {
        match self {
            Format::Json => set.to_json(),
            Format::Yaml => set.to_yaml(),
            Format::Toml => set.to_toml(),
        }
    }
}

/// The version an `If-Match` names: `None` when there is none, it is empty, or it is `*`
/// ("whatever is there", which would skip the check that keeps two editors from overwriting
/// each other).
pub(crate) fn version_named(if_match: Option<&str>) -> Option<&str> {
    if_match
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "*")
}

/// How long a `PUT` through a rule source waits for its rules to be in force in this process
/// before it answers `"applied": false` (written; every watching instance applies it).
pub(crate) const IN_FORCE_WAIT: Duration = Duration::from_secs(2);

/// Whether `set`'s rules are in force in this process (the same rules of every kind, in any
/// order), waiting at most `wait` for them.
pub(crate) fn in_force_within(set: &RuleSet, wait: Duration) -> bool {
    let Some(want) = comparable(set) else {
        return false;
    };
    let start = Instant::now();
    loop {
        if comparable(&rules::current()).as_ref() == Some(&want) {
            return true;
        }
        if start.elapsed() >= wait {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A set as its rule-file JSON with each kind's rules sorted, to compare sets in any order.
fn comparable(set: &RuleSet) -> Option<Value> {
    let mut value = serde_json::to_value(set).ok()?;
    if let Value::Object(kinds) = &mut value {
        for rules in kinds.values_mut() {
            if let Value::Array(list) = rules {
                list.sort_by_cached_key(Value::to_string);
            }
        }
    }
    Some(value)
}

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

/// The answer to `GET /api/rules` asking for the document (`Accept: application/yaml`): the
/// rules file's text when it holds the rules in force, else the rules in force (as JSON if
/// `json_too`, the request accepting it as well, else as YAML); its format and the version.
pub(crate) fn document(
    editor: &Editor,
    json_too: bool,
) -> Result<(Vec<u8>, Format, String), String> {
    let tag = etag(&rules::current());
    let (bytes, format) = match editor.document() {
        Some((text, format)) => (text.into_bytes(), format),
        None => in_force(json_too)?,
    };
    Ok((bytes, format, tag))
}

/// The rules in force written as a document: JSON if `json`, else YAML.
pub(crate) fn in_force(json: bool) -> Result<(Vec<u8>, Format), String> {
    let format = if json { Format::Json } else { Format::Yaml };
    format
        .write(&rules::current())
        .map(|text| (text.into_bytes(), format))
        .map_err(|e| format!("the rules in force cannot be written as a rule file: {e}"))
}

/// The outcome of a `PUT /api/rules`.
pub(crate) enum Put {
    /// Applied: in force in this process (the new version), and whether it was written (to
    /// the rules file or the rule source).
    Applied(String, bool),
    /// Written to the rule source (the new version), not in force in this process: it does
    /// not watch the source, or has not read the new version yet.
    Written(String),
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

    /// Checks `if_match` against the rules in force, parses `body` (in `format`), checks
    /// every rule, writes the rules file's temporary copy, loads the set, and renames the copy
    /// over the file. The copy is `body` itself when it is in the file's format (its comments
    /// and layout kept), else the set written in the file's format.
    pub(crate) fn put(&self, if_match: Option<&str>, body: &str, format: Format) -> Put {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(if_match) = version_named(if_match) else {
            return Put::NoVersion;
        };
        let current = etag(&rules::current());
        if if_match != current {
            return Put::Stale(current);
        }
        let set = match format
            .parse(body)
            .and_then(|set| set.validate().map(|()| set))
        {
            Ok(set) => set,
            Err(e) => return Put::Refused(e),
        };
        let staged = match &self.file {
            Some(file) => match stage(file, &set, body, format) {
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
        let written = staged.is_some();
        if let Some(staged) = staged
            && let Err(e) = staged.commit()
        {
            return Put::NotSaved(tag, format!("applied, but {e}"));
        }
        Put::Applied(tag, written)
    }

    /// The rules file's text and format, if there is a file and it holds the rules in force
    /// (its rules are those in force: it was loaded at start or saved here since).
    pub(crate) fn document(&self) -> Option<(String, Format)> {
        let file = self.file.as_ref()?;
        let format = Format::of_file(file);
        let text = crate::rules::files::file::read_file(file).ok()?.0;
        let set = format.parse(&text).ok()?;
        let same = comparable(&set).is_some() && comparable(&set) == comparable(&rules::current());
        same.then_some((text, format))
    }
}

/// Writes `set` in `file`'s format (`body` itself when it is in that format) to a new
/// temporary file beside the file it resolves to (same directory: the rename is atomic),
/// synced.
fn stage(file: &Path, set: &RuleSet, body: &str, format: Format) -> Result<Staged, String> {
    let in_file = Format::of_file(file);
    if in_file == format {
        return Staged::write(file, body);
    }
    let text = in_file
        .write(set)
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
