//! [`RuleSource`]: a place rule documents come from, and [`Changes`], how a source tells its
//! watcher that the document may have changed.

use std::path::{Path, PathBuf};
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
/// change it was not told of). The dashboard's rule editor (`Dashboard::rules_source`, feature
/// `dashboard`) calls `read(None)` and [`put`](RuleSource::put). Three sources come with the
/// crate: [`FileSource`](super::FileSource) (what [`watch_file`](super::watch_file) watches),
/// `RedisSource` (feature `redis`) and `EtcdSource` (feature `etcd`). A source for another
/// store (Consul, Nacos, ZooKeeper, a database) needs only this trait.
///
/// # The contract
///
/// What the watcher and the dashboard rely on. What they do themselves is not the source's
/// work: parsing, validating and loading the document, keeping the last good rules, debouncing
/// changes, and reporting refusals in the status, the metrics and events.
///
/// * **Versions.** A document's version is a `u64` that changes whenever its content does, and
///   never comes back for other content: the watcher loads a version once, and does not try a
///   version it refused again. `0` means "no document": never give it to a document. A store's
///   own counter is best (etcd's mod revision, a Consul `ModifyIndex`, a ZooKeeper node's
///   `mzxid`); a hash of the bytes also works (a file's version is one).
/// * **`watch`** is called once, before the first `read`, so no change after that read is
///   missed. Start what tells of changes there (a thread, a callback) and keep it in the source:
///   the watcher drops the source when it stops, and that must stop it. Call
///   [`Changes::changed`] for every change, and also whenever the channel that tells of
///   changes (re)connects, since one may have been missed while it was down; stop once it
///   returns `false`. A source with no way to be told of changes does nothing here and relies
///   on its poll.
/// * **`read(seen)`** returns the document now ([`Read::Document`]), [`Read::Missing`] when
///   the store holds none, or [`Read::Unchanged`] if its version is still `seen` (only then;
///   with `seen` `None`, always the document). An `Err` means the store could not be read
///   (unreachable, an answer that makes no sense): the rules in force stay and the error is
///   reported; make it with [`RuleSetError::unreadable`], which names the source. The rules
///   need no checking here: the watcher parses the bytes in their
///   [`format`](super::Document::format) and refuses a bad document with each problem's field
///   and line.
/// * **Calls block, within bounds.** The first `read` runs on the thread that called
///   `watch_source` (perhaps inside an async runtime: never enter, start or drop a runtime in
///   the source's calls), later ones on the watcher's own thread; the dashboard calls `read`
///   and `put` on a blocking thread, one call at a time. Give every network call a timeout (a
///   second or two), so a store that hangs is reported instead of stalling the watcher, and
///   bound what is read ([`MAX_DOCUMENT_BYTES`](super::MAX_DOCUMENT_BYTES) is what the crate's
///   sources accept).
/// * **`poll_interval`** is how long the watcher waits for a change before reading anyway:
///   `None` only for a source whose [`Changes`] never miss one. **`polling`** says whether
///   changes cannot be reported now (the status shows it).
/// * **`put(text, if_version)`**, for a store that can be written: check the text first
///   ([`RuleSet::from_json`](crate::rules::RuleSet::from_json) or `from_yaml`, by the format
///   the source will read it in) and refuse a bad one with [`SourceError::Invalid`]; then
///   write only if the version is still `if_version` (`Some(0)`: no document yet; `None`:
///   whatever it is), atomically in the store (a compare-and-set, a transaction, a
///   conditional write), returning the new version, or [`SourceError::Conflict`] with the
///   version now, writing nothing. The store tells every watcher (a `watch` of another
///   process sees the write as any other change). The default refuses: [`SourceError::ReadOnly`].
/// * The source is [`Send`] and `'static`: the watcher moves it to its own thread. Clones (the
///   crate's sources are [`Clone`]) are independent: one for each watcher, one for the
///   dashboard.
///
/// # A minimal source
///
/// A document kept in memory and shared by clones, as a store would keep it: writes by
/// compare-and-set, and tells every watcher of each write.
///
/// ```
/// use std::path::PathBuf;
/// use std::sync::{Arc, Mutex};
/// use std::time::{Duration, Instant};
/// use sentinel_runtime::rules::{self, FlowRule, RuleSet, RuleSetError};
/// use sentinel_runtime::rules::source::{
///     Changes, Document, DocumentFormat, Read, RuleSource, SourceError,
/// };
///
/// /// The store: the document (`None`: there is none), its version, who to tell of writes.
/// #[derive(Default)]
/// struct Store {
///     text: Option<String>,
///     version: u64,
///     watchers: Vec<Changes>,
/// }
///
/// #[derive(Clone, Default)]
/// struct MemorySource(Arc<Mutex<Store>>);
///
/// impl MemorySource {
///     fn store(&self) -> std::sync::MutexGuard<'_, Store> {
///         self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
///     }
/// }
///
/// impl RuleSource for MemorySource {
///     fn origin(&self) -> PathBuf {
///         PathBuf::from("memory://rules")
///     }
///
///     fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError> {
///         self.store().watchers.push(changes);
///         Ok(())
///     }
///
///     fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
///         let store = self.store();
///         Ok(match &store.text {
///             None => Read::Missing,
///             Some(_) if seen == Some(store.version) => Read::Unchanged,
///             Some(text) => Read::Document(Document::new(
///                 text.clone().into_bytes(),
///                 store.version,
///                 DocumentFormat::sniff(text.as_bytes()),
///             )),
///         })
///     }
///
///     fn poll_interval(&self) -> Option<Duration> {
///         None // every write is told
///     }
///
///     fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
///         let checked = match DocumentFormat::sniff(text.as_bytes()) {
///             DocumentFormat::Json => RuleSet::from_json(text),
///             _ => RuleSet::from_yaml(text),
///         };
///         checked.map_err(SourceError::Invalid)?;
///         let mut store = self.store();
///         let current = if store.text.is_some() { store.version } else { 0 };
///         if if_version.is_some_and(|expected| expected != current) {
///             return Err(SourceError::Conflict { expected: if_version.unwrap_or(0), current });
///         }
///         store.version += 1;
///         store.text = Some(text.to_owned());
///         // Tell every watcher still running (`changed` is false once one has stopped).
///         store.watchers.retain(|changes| changes.changed());
///         Ok(store.version)
///     }
/// }
///
/// let source = MemorySource::default();
/// // No document yet: the watcher starts and loads nothing.
/// let watcher = rules::watch_source(source.clone())?;
/// assert_eq!(watcher.status().loads, 0);
///
/// let first = source.put("flow:\n  - resource: doc-memory\n    threshold: 5\n", Some(0)).unwrap();
/// let start = Instant::now();
/// while watcher.status().version != first {
///     assert!(start.elapsed() < Duration::from_secs(5), "not applied");
///     std::thread::sleep(Duration::from_millis(10));
/// }
/// assert_eq!(rules::flow_rules(), vec![FlowRule::qps("doc-memory", 5.0)]);
///
/// // A write on top of an old version, or a bad document, changes nothing.
/// let stale = source.put("{\"flow\": []}", Some(0));
/// assert_eq!(stale, Err(SourceError::Conflict { expected: 0, current: first }));
/// let bad = source.put("flow:\n  - resource: doc-memory\n    threshold: -1\n", Some(first));
/// assert!(matches!(bad, Err(SourceError::Invalid(e)) if e.to_string().contains("threshold")));
/// # drop(watcher);
/// # rules::load(RuleSet::new())?;
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

impl RuleSetError {
    /// The error a [`RuleSource`] returns from [`read`](RuleSource::read) or
    /// [`watch`](RuleSource::watch) when its store cannot be read: `message` (what failed), about
    /// the source `origin` (its [`RuleSource::origin`]), which [`path`](RuleSetError::path)
    /// then gives.
    ///
    /// ```
    /// use sentinel_runtime::rules::RuleSetError;
    ///
    /// let e = RuleSetError::unreadable("consul://rules", "the agent did not answer in 2 s");
    /// assert_eq!(e.path(), Some(std::path::Path::new("consul://rules")));
    /// assert!(e.to_string().contains("did not answer"));
    /// ```
    pub fn unreadable(origin: impl AsRef<Path>, message: impl Into<String>) -> RuleSetError {
        RuleSetError::whole(message).in_file(origin.as_ref())
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
