//! [`RuleSource`]: a place rule documents come from, and [`Changes`], how a source tells its
//! watcher that the document may have changed.

use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::Duration;

use super::document::Document;
use super::error::SourceError;
use crate::manager::set::RuleSetError;

/// A place rules come from: a rule document with a version, read when it may have changed,
/// and, for a source that can be written, replaced with compare-and-set.
///
/// [`watch_source`](super::watch_source) runs one: it calls [`watch`](RuleSource::watch) once,
/// then [`read`](RuleSource::read) at start, after each change the source reports through
/// [`Changes`], and every [`poll_interval`](RuleSource::poll_interval) (the safety net for a
/// change it was not told of). Two sources come with the crate: [`FileSource`](super::FileSource)
/// (what [`watch_file`](super::watch_file) watches) and, with the feature `redis`,
/// `RedisSource` (feature `redis`).
///
/// ```
/// use std::path::PathBuf;
/// use std::time::Duration;
/// use sentinel_runtime::rules::RuleSetError;
/// use sentinel_runtime::rules::source::{Changes, Document, DocumentFormat, Read, RuleSource};
///
/// /// One fixed document (a real source would read a store).
/// struct Fixed(&'static str);
///
/// impl RuleSource for Fixed {
///     fn origin(&self) -> PathBuf {
///         PathBuf::from("fixed://rules")
///     }
///     fn watch(&mut self, _changes: Changes) -> Result<(), RuleSetError> {
///         Ok(()) // never changes
///     }
///     fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
///         if seen == Some(1) {
///             return Ok(Read::Unchanged);
///         }
///         let bytes = self.0.as_bytes().to_vec();
///         Ok(Read::Document(Document::new(bytes, 1, DocumentFormat::Yaml)))
///     }
///     fn poll_interval(&self) -> Option<Duration> {
///         None
///     }
/// }
///
/// let watcher = sentinel_runtime::rules::watch_source(Fixed("flow:\n  - resource: doc-fixed\n    threshold: 5\n"))?;
/// assert_eq!(watcher.status().version, 1);
/// # drop(watcher);
/// # sentinel_runtime::rules::load(sentinel_runtime::rules::RuleSet::new())?;
/// # Ok::<(), RuleSetError>(())
/// ```
pub trait RuleSource: Send + 'static {
    /// The name errors, events and metrics give the source: a file's absolute path; for a
    /// Redis source its URL (without password) and key.
    fn origin(&self) -> PathBuf;

    /// Starts telling `changes` whenever the document may have changed. Called once, before
    /// the first [`read`](RuleSource::read), so no change after that read is missed. An error
    /// stops the watcher from starting.
    fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError>;

    /// The document now. `seen` is the version the watcher last read (in force or refused):
    /// a source may answer [`Read::Unchanged`] when its version is still `seen`, without
    /// reading the document. An error (the source unreachable, the document unreadable) keeps
    /// the rules in force and is reported.
    fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError>;

    /// How long the watcher waits for a change before reading anyway: `None` to read only when
    /// told of a change. Asked again after every read.
    fn poll_interval(&self) -> Option<Duration>;

    /// Whether the source cannot report changes now, so the watcher sees them only by polling
    /// ([`WatchStatus::polling`](super::WatchStatus::polling)). Asked after every read.
    fn polling(&self) -> bool {
        false
    }

    /// Replaces the document with `text`, if the source's version is still `if_version`
    /// (`Some(0)`: there is no document yet; `None`: whatever it is), and returns the new
    /// version. The text is checked first: a bad document is refused with each problem's
    /// field and line, and nothing is written. By default a source cannot be written
    /// ([`SourceError::ReadOnly`]).
    fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
        let _ = (text, if_version);
        Err(SourceError::ReadOnly)
    }
}

/// What a [`RuleSource::read`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Read {
    /// The document's version is still the one the watcher gave as `seen`.
    Unchanged,
    /// The source holds no document (nothing is loaded; once rules were loaded from it, they
    /// stay in force and the absence is reported).
    Missing,
    /// The document.
    Document(Document),
}

/// What a watcher's thread is told.
#[derive(Debug)]
pub(crate) enum Message {
    /// The document may have changed.
    Changed,
    /// The watcher is dropped.
    Stop,
}

/// How a [`RuleSource`] tells its watcher that the document may have changed: cheap to clone,
/// callable from any thread. The watcher reads once things have been quiet for 150 ms (at
/// most 1 s after the first change).
#[derive(Clone, Debug)]
pub struct Changes {
    wake: SyncSender<Message>,
}

/// How many messages wait for a watcher's thread at most: a change already waiting stands for
/// any more, so a flood of changes takes no memory.
pub(crate) const PENDING: usize = 4;

impl Changes {
    pub(crate) fn new(wake: SyncSender<Message>) -> Changes {
        Changes { wake }
    }

    /// The document may have changed. Never blocks. `false` once the watcher has stopped (the
    /// source may stop watching then).
    pub fn changed(&self) -> bool {
        match self.wake.try_send(Message::Changed) {
            // Full: changes are waiting to be read, which covers this one.
            Ok(()) | Err(TrySendError::Full(_)) => true,
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}
