//! Rule sources: the places a rule document comes from, watched by
//! [`watch_source`] (or [`watch_file`] for a file).
//!
//! A [`RuleSource`] holds one document in the [rule-file format](crate::rules::files) with a
//! version, says when it may have changed, and may be written with compare-and-set. One comes
//! with the crate: [`FileSource`], a file on disk.

mod document;
mod error;
mod file;
mod rule_source;
mod watcher;

pub use document::{Document, DocumentFormat, MAX_DOCUMENT_BYTES};
pub use error::SourceError;
pub use file::{watch_file, FileSource};
pub use rule_source::{Changes, Read, RuleSource};
pub use watcher::{watch_source, RuleWatcher, WatchStatus};
