//! A rule source in memory for the dashboard's tests: one document with a version that its
//! writes advance (compare-and-set), telling its watcher of every write, and counting its
//! reads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sentinel_runtime::rules::source::{
    Changes, Document, DocumentFormat, Read, RuleSource, SourceError,
};
use sentinel_runtime::rules::RuleSetError;

#[derive(Default)]
struct State {
    doc: Option<(String, u64)>,
    changes: Vec<Changes>,
}

/// Clones share the document.
#[derive(Clone, Default)]
pub struct MemorySource(Arc<Mutex<State>>);

impl MemorySource {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The document and its version, if any.
    pub fn document(&self) -> Option<(String, u64)> {
        self.state().doc.clone()
    }

    /// Stores `text` at `version`, unchecked (another writer's document).
    pub fn set(&self, text: &str, version: u64) {
        let mut state = self.state();
        state.doc = Some((text.to_owned(), version));
        state.changes.retain(Changes::changed);
    }
}

impl RuleSource for MemorySource {
    fn origin(&self) -> PathBuf {
        PathBuf::from("memory://rules")
    }

    fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError> {
        self.state().changes.push(changes);
        Ok(())
    }

    fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
        Ok(match &self.state().doc {
            None => Read::Missing,
            Some((_, version)) if Some(*version) == seen => Read::Unchanged,
            Some((text, version)) => Read::Document(Document::new(
                text.clone().into_bytes(),
                *version,
                DocumentFormat::sniff(text.as_bytes()),
            )),
        })
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }

    fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
        let mut state = self.state();
        let current = state.doc.as_ref().map_or(0, |(_, v)| *v);
        if let Some(expected) = if_version.filter(|v| *v != current) {
            return Err(SourceError::Conflict { expected, current });
        }
        state.doc = Some((text.to_owned(), current + 1));
        state.changes.retain(Changes::changed);
        Ok(current + 1)
    }
}
