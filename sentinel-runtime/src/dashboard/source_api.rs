//! Rule edits through a rule source ([`Dashboard::rules_source`](super::Dashboard::rules_source)):
//! `GET /api/rules` reads the source's document, its version the `ETag` (`"v<version>"`);
//! `PUT` writes through the source's compare-and-set, so an edit made on any instance's page
//! reaches every instance watching the source, and a stale one is a conflict. The source is
//! called on a blocking thread, never on the server's runtime.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::rules_api::{self, Format, Put};
use crate::manager::set;
use crate::rules::source::{parse_text, DocumentFormat, Read, RuleSource, SourceError};

/// A rule source the server's handlers share (one call at a time).
#[derive(Clone)]
pub(crate) struct SharedSource(Arc<Mutex<Box<dyn RuleSource>>>);

impl fmt::Debug for SharedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_tuple("SharedSource")
            .field(&source.origin())
            .finish()
    }
}

/// The `ETag` of a source's version (0: no document yet).
fn tag(version: u64) -> String {
    format!("\"v{version}\"")
}

/// The version an `If-Match` names, if it is one of [`tag`]'s.
fn version_of(if_match: &str) -> Option<u64> {
    let tag = if_match.trim().trim_start_matches("W/");
    tag.strip_prefix("\"v")?.strip_suffix('"')?.parse().ok()
}

impl SharedSource {
    pub(crate) fn new(source: impl RuleSource) -> SharedSource {
        SharedSource(Arc::new(Mutex::new(Box::new(source))))
    }

    /// `GET /api/rules`: the source's document as rule-file JSON with its version; with no
    /// document yet (or one that cannot be read into rules), the rules in force, with a version
    /// a `PUT` may name to replace it. `503` if the source cannot be read.
    pub(crate) async fn get(&self) -> (u16, Value, String) {
        let source = self.clone();
        tokio::task::spawn_blocking(move || source.get_blocking())
            .await
            .unwrap_or_else(|e| (500, json!({ "error": e.to_string() }), String::new()))
    }

    fn get_blocking(&self) -> (u16, Value, String) {
        let mut source = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (set, version) = match source.read(None) {
            Ok(Read::Document(doc)) => match doc.parse() {
                Ok(set) => (set, doc.version),
                Err(_) => (set::current(), doc.version),
            },
            Ok(Read::Missing | Read::Unchanged) => (set::current(), 0),
            Err(e) => return (503, json!({ "error": e.to_string() }), String::new()),
        };
        match serde_json::to_value(&set) {
            Ok(value) => (200, value, tag(version)),
            Err(e) => (
                500,
                json!({ "error": format!("the rules cannot be written as a rule file: {e}") }),
                tag(version),
            ),
        }
    }

    /// `GET /api/rules` asking for the document (`Accept: application/yaml`): the source's
    /// document byte for byte, its format and its version; with no document yet, the rules in
    /// force (JSON if `json_too`, else YAML) and `"v0"`. `Err`: the source cannot be read.
    pub(crate) async fn document(
        &self,
        json_too: bool,
    ) -> Result<(Vec<u8>, Format, String), String> {
        let source = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut source = source.0.lock().unwrap_or_else(PoisonError::into_inner);
            match source.read(None) {
                Ok(Read::Document(doc)) => {
                    Ok((doc.bytes, Format::of_document(doc.format), tag(doc.version)))
                }
                Ok(Read::Missing | Read::Unchanged) => {
                    rules_api::in_force(json_too).map(|(bytes, format)| (bytes, format, tag(0)))
                }
                Err(e) => Err(e.to_string()),
            }
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
    }

    /// `PUT /api/rules`: checks that `if_match` names the source's version, then checks `body`
    /// (in `format`), then writes it through the source if its version is still that one;
    /// then waits (at most [`IN_FORCE_WAIT`](super::rules_api::IN_FORCE_WAIT)) for its rules
    /// to be in force in this process.
    pub(crate) async fn put(&self, if_match: Option<String>, body: String, format: Format) -> Put {
        let source = self.clone();
        tokio::task::spawn_blocking(move || source.put_blocking(if_match.as_deref(), &body, format))
            .await
            .unwrap_or_else(|e| Put::Unavailable(e.to_string()))
    }

    fn put_blocking(&self, if_match: Option<&str>, body: &str, format: Format) -> Put {
        let Some(if_match) = rules_api::version_named(if_match) else {
            return Put::NoVersion;
        };
        // The version first: a stale edit costs a read of the version, never a parse. (The
        // write below is a compare-and-set: a write between this read and it is a conflict.)
        let read = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .read(version_of(if_match));
        let current = match read {
            Ok(Read::Unchanged) => version_of(if_match).unwrap_or(0),
            Ok(Read::Document(doc)) => doc.version,
            Ok(Read::Missing) => 0,
            Err(e) => return Put::Unavailable(e.to_string()),
        };
        // A tag that is no version of this source (from before it was set) is stale.
        let Some(expected) = version_of(if_match).filter(|v| *v == current) else {
            return Put::Stale(tag(current));
        };
        let set = match parse_text(body, format.document()) {
            Ok(set) => set,
            Err(e) => return Put::Refused(e),
        };
        // The source tells JSON from YAML by the first character: a body it would misread is
        // written as the set's JSON.
        let text = if DocumentFormat::sniff(body.as_bytes()) == format.document() {
            Cow::Borrowed(body)
        } else {
            match set.to_json() {
                Ok(json) => Cow::Owned(json),
                Err(e) => return Put::Refused(e),
            }
        };
        let source = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let written = match source.put(&text, Some(expected)) {
            Ok(version) => tag(version),
            Err(SourceError::Conflict { current, .. }) => return Put::Stale(tag(current)),
            Err(SourceError::Invalid(e)) => return Put::Refused(e),
            Err(SourceError::ReadOnly) => {
                return Put::CannotSave("the dashboard's rule source cannot be written".into())
            }
            Err(e) => return Put::Unavailable(e.to_string()),
        };
        drop(source);
        // Written: every instance watching the source applies it. Applied here only once this
        // process has it in force (it watches the source, and has read the new version).
        if rules_api::in_force_within(&set, rules_api::IN_FORCE_WAIT) {
            Put::Applied(written, true)
        } else {
            Put::Written(written)
        }
    }
}

/// The answer to a `PUT` the source could not take: `503`, nothing written.
pub(crate) fn unavailable_json(why: &str) -> Value {
    json!({ "error": format!("the rule source cannot be reached; nothing was written: {why}"),
            "applied": false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip_through_etags() {
        assert_eq!(version_of(&tag(42)), Some(42));
        assert_eq!(version_of("W/\"v7\""), Some(7));
        assert_eq!(version_of("\"0123456789abcdef\""), None);
        assert_eq!(version_of("v7"), None);
    }
}
