//! [`watch_source`] and [`RuleWatcher`]: load a source's rule document, then every new version
//! of it, keeping the last good rules through bad documents and an unreachable source, and
//! reporting every refusal (metric, event, status).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use super::document::Document;
use super::notices;
use super::rule_source::{Changes, Message, Read, RuleSource, PENDING};
use crate::manager::set::{self, RuleSet, RuleSetError, Unread};
use crate::rules::files::load::rule_count;
use crate::rules::files::report;

/// A change is read once the source has been quiet this long...
const DEBOUNCE: Duration = Duration::from_millis(150);
/// ...or once changes have kept coming for this long.
const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// While the source's rules cannot be read (its store unreachable, no document there), it is
/// read again at least this often, whatever its poll interval.
const RETRY: Duration = Duration::from_secs(1);

/// What a [`RuleWatcher`] has done: when it last loaded its source, which version, and what
/// went wrong since.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WatchStatus {
    /// When the rules in force were loaded from the source (wall-clock time); when the watcher
    /// started, if it has loaded nothing yet.
    pub loaded_at: SystemTime,
    /// The version of the document in force: for a file, a 64-bit FNV-1a hash of its bytes;
    /// for a Redis source, the document's version there. 0 if nothing was loaded yet.
    pub version: u64,
    /// Why the source's latest document is not in force (unreadable, missing, empty,
    /// unparseable or with bad rules, the source unreachable), or `None` when the source holds
    /// what is in force. A source that holds no document, or cannot be reached, is an error
    /// too, also before anything was loaded from it (its words start `no rules read from`,
    /// with the source's name: for Redis its URL and key); a refused document's start
    /// `invalid rule set`.
    pub last_error: Option<RuleSetError>,
    /// How many times a document was loaded, the first load included.
    pub loads: u64,
    /// Whether the watcher sees changes only by polling: a file's directory cannot be watched
    /// (it is read every second), or a Redis source's change messages are not arriving (it is
    /// read at its poll interval).
    pub polling: bool,
    /// How many resources the rules in force name that no call has entered since they were
    /// loaded (read when the status is taken; [`unmatched`](crate::rules::unmatched) names
    /// them): usually a typo or a route in another syntax.
    pub unmatched: usize,
}

/// A running rule watcher, from [`watch_file`](super::watch_file) or [`watch_source`].
/// Dropping it stops it (and waits for its thread to finish); the rules it loaded stay in
/// force.
#[derive(Debug)]
pub struct RuleWatcher {
    path: PathBuf,
    status: Arc<Mutex<WatchStatus>>,
    wake: mpsc::SyncSender<Message>,
    thread: Option<JoinHandle<()>>,
}

/// Loads the rule document of `source`, then every new version of it, until the returned
/// [`RuleWatcher`] is dropped: [`watch_file`](super::watch_file) for any [`RuleSource`], such as a
/// `RedisSource` (feature `redis`) that every instance of a service watches.
///
/// * The document in the source at start is loaded before this returns. A bad document at
///   start is returned as an error and nothing is watched.
/// * A source that holds no document, or cannot be reached (a Redis that is down), is never
///   silent: `watch_source` returns the watcher, which loads nothing yet
///   ([`WatchStatus::loads`] stays 0), says why in [`WatchStatus::last_error`] (naming the
///   source: for Redis its URL and key) and in an event, and reads the source again at
///   least every second until its document is loaded.
/// * A document without a rule written over one with rules is loaded (it is how every rule
///   is removed on purpose), and an event warns that every rule was removed.
/// * Each load goes through [`load`](crate::rules::load): **the document's rules replace every
///   kind of rule in force**, all at once.
/// * A change is read once the source has been quiet for 150 ms (at most 1 s after the first
///   change), and at the source's poll interval whatever it said; a version already loaded is
///   not loaded again.
/// * A bad document (not UTF-8, unparseable, a bad rule; for a Redis source also over
///   [`MAX_DOCUMENT_BYTES`](super::MAX_DOCUMENT_BYTES)), a source that cannot be read and a
///   document that is gone **keep the last good rules** in force, and are reported as file
///   refusals are: [`RuleWatcher::status`]'s `last_error`,
///   [`metrics::rule_loads`](crate::metrics::rule_loads) (kind `rule_set`),
///   [`metrics::rule_files`](crate::metrics::rule_files) (under the source's
///   [`origin`](RuleSource::origin)) and, with the `tracing` feature, an event with the first
///   problem's line and field. Each refused version is reported once; an unreachable source
///   once until it answers again.
///
/// ```no_run
/// # #[cfg(feature = "redis")]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use sentinel_runtime::rules::{self, source::RedisSource};
///
/// let source = RedisSource::new("redis://127.0.0.1:6379", "shop:rules")?;
/// let watcher = rules::watch_source(source.clone())?;
/// // Any instance may write; every instance watching the key applies it.
/// let version = watcher.status().version;
/// source.put("flow:\n  - resource: checkout\n    threshold: 100\n", Some(version))?;
/// # Ok(()) }
/// # #[cfg(not(feature = "redis"))] fn main() {}
/// ```
pub fn watch_source(source: impl RuleSource) -> Result<RuleWatcher, RuleSetError> {
    RuleWatcher::start(source, set::load_uncounted)
}

/// How a watcher puts a rule set in force (tests give their own).
pub(crate) type Loader = fn(RuleSet) -> Result<(), RuleSetError>;

impl RuleWatcher {
    pub(crate) fn start<S: RuleSource>(
        mut source: S,
        loader: Loader,
    ) -> Result<RuleWatcher, RuleSetError> {
        let origin = source.origin();
        let (wake, messages) = mpsc::sync_channel(PENDING);
        let mut state = State {
            origin: origin.clone(),
            loader,
            in_force: None,
            refused: None,
            failed: None,
            unread: false,
        };
        let status = Arc::new(Mutex::new(WatchStatus {
            loaded_at: SystemTime::now(),
            version: 0,
            last_error: None,
            loads: 0,
            polling: false,
            unmatched: 0,
        }));
        // For the fleet's summary (the cluster's, with `redis`): the version in force here.
        #[cfg(feature = "redis")]
        super::in_force::register(Arc::downgrade(&status) as _);
        // Watch before the first read, so no change after it is missed. The first load's
        // refusals are reported as every later one is.
        let refused = |e: RuleSetError, version| {
            let _ = report::file_load(&origin, version, 0, Err(e.clone()));
            e
        };
        source
            .watch(Changes::new(wake.clone()))
            .map_err(|e| refused(e, None))?;
        match source.read(None) {
            // Not read at all: said, and read again soon.
            Err(e) if e.unread_why().is_some() => {
                state.refuse(&status, Failure::Unreadable(e.to_string()), e);
            }
            Err(e) => return Err(refused(e, None)),
            Ok(Read::Unchanged) => {}
            Ok(Read::Missing) => {
                let e = state.no_document();
                state.refuse(&status, Failure::Unreadable(e.to_string()), e);
            }
            Ok(Read::Document(doc)) => {
                let rules = state
                    .load(&doc)
                    .map_err(|e| refused(e, Some(doc.version)))?;
                report::file_load(&origin, Some(doc.version), rules, Ok(()))?;
                state.in_force = Some(doc.version);
                let mut status = lock(&status);
                status.version = doc.version;
                status.loads = 1;
            }
        }
        lock(&status).polling = source.polling();
        let worker = Worker {
            source,
            state,
            messages,
            status: Arc::clone(&status),
        };
        let thread = thread::Builder::new()
            .name("sentinel-rule-watcher".into())
            .spawn(move || worker.run())
            .map_err(|e| {
                RuleSetError::whole(format!("cannot start the watcher's thread: {e}"))
                    .in_file(&origin)
            })?;
        Ok(RuleWatcher {
            path: origin,
            status,
            wake,
            thread: Some(thread),
        })
    }

    /// The watched file (as an absolute path), or the name of another source
    /// ([`RuleSource::origin`]: for Redis, its URL and key).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When the rules were last loaded from the source, which version, and the latest error.
    pub fn status(&self) -> WatchStatus {
        let mut status = lock(&self.status).clone();
        status.unmatched = crate::manager::unmatched().len();
        status
    }
}

impl Drop for RuleWatcher {
    fn drop(&mut self) {
        let _ = self.wake.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(feature = "redis")]
impl super::in_force::InForce for Mutex<WatchStatus> {
    fn in_force(&self) -> Option<u64> {
        let status = lock(self);
        (status.loads > 0).then_some(status.version)
    }
}

fn lock(status: &Mutex<WatchStatus>) -> MutexGuard<'_, WatchStatus> {
    status.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why the source's latest look was refused.
#[derive(Clone, PartialEq, Eq)]
enum Failure {
    /// The document of this version.
    Content(u64),
    /// The source could not be read (or held no document): this error, as text.
    Unreadable(String),
}

/// What the watcher knows of its source, and how it loads.
struct State {
    origin: PathBuf,
    loader: Loader,
    /// The version in force, if one was loaded.
    in_force: Option<u64>,
    /// The latest version refused, newer than the one in force, with why.
    refused: Option<(u64, RuleSetError)>,
    /// The latest refusal, not to report it again until something changes.
    failed: Option<Failure>,
    /// Whether the latest read could not read the source's rules at all (its store
    /// unreachable, no document there): it is read again within [`RETRY`].
    unread: bool,
}

impl State {
    /// Parses and loads a document: how many rules it has. A document without a rule that
    /// replaces rules in force is loaded, with a warning.
    fn load(&self, doc: &Document) -> Result<usize, RuleSetError> {
        let set = doc.parse().map_err(|e| e.in_file(&self.origin))?;
        let rules = rule_count(&set);
        let before = if rules == 0 {
            rule_count(&set::current())
        } else {
            0
        };
        (self.loader)(set).map_err(|e| e.in_file(&self.origin))?;
        if before > 0 {
            notices::warn(
                &self.origin,
                format!(
                    "the document (version {}) holds no rules: every rule was removed ({before} \
                     were in force)",
                    doc.version
                ),
            );
        }
        Ok(rules)
    }

    /// The error of a source that holds no document.
    fn no_document(&self) -> RuleSetError {
        let message = if self.in_force.is_some() {
            "the source holds no document; the last good rules stay in force"
        } else {
            "the source holds no rule document: no rules are loaded from it until one is written"
        };
        RuleSetError::unread(Unread::NoDocument, message).in_file(&self.origin)
    }

    /// Records a refusal in the status, and reports it if it is new.
    fn refuse(&mut self, status: &Mutex<WatchStatus>, why: Failure, e: RuleSetError) {
        self.unread = e.unread_why().is_some();
        lock(status).last_error = Some(e.clone());
        if self.failed.as_ref() != Some(&why) {
            let version = match why {
                Failure::Content(version) => Some(version),
                Failure::Unreadable(_) => None,
            };
            self.failed = Some(why);
            notices::keep(&self.origin, e.to_string());
            let _ = report::file_load(&self.origin, version, 0, Err(e));
        }
    }

    /// The source holds what is in force (again): no error.
    fn in_force_again(&mut self, status: &Mutex<WatchStatus>) {
        self.unread = false;
        if self.failed.take().is_some() {
            report::set_file_result(&self.origin, true);
        }
        self.refused = None;
        lock(status).last_error = None;
    }

    /// Reads the source and loads its document if it is new; the last good rules stay
    /// otherwise.
    fn check<S: RuleSource>(&mut self, source: &mut S, status: &Mutex<WatchStatus>) {
        let seen = self.refused.as_ref().map(|(v, _)| *v).or(self.in_force);
        let doc = match source.read(seen) {
            Err(e) => return self.refuse(status, Failure::Unreadable(e.to_string()), e),
            Ok(Read::Missing) => {
                let e = self.no_document();
                return self.refuse(status, Failure::Unreadable(e.to_string()), e);
            }
            Ok(Read::Unchanged) => match self.refused.clone() {
                Some((version, e)) if seen == Some(version) => {
                    return self.refuse(status, Failure::Content(version), e)
                }
                _ => return self.in_force_again(status),
            },
            Ok(Read::Document(doc)) => doc,
        };
        if Some(doc.version) == self.in_force {
            // Back to (or still) what is in force.
            return self.in_force_again(status);
        }
        if self.failed == Some(Failure::Content(doc.version)) {
            return;
        }
        match self.load(&doc) {
            Ok(rules) => {
                self.unread = false;
                self.failed = None;
                self.refused = None;
                self.in_force = Some(doc.version);
                let _ = report::file_load(&self.origin, Some(doc.version), rules, Ok(()));
                let mut status = lock(status);
                status.loaded_at = SystemTime::now();
                status.version = doc.version;
                status.loads += 1;
                status.last_error = None;
            }
            Err(e) => {
                self.refused = Some((doc.version, e.clone()));
                self.refuse(status, Failure::Content(doc.version), e);
            }
        }
    }
}

/// The watcher's thread.
struct Worker<S> {
    source: S,
    state: State,
    messages: Receiver<Message>,
    status: Arc<Mutex<WatchStatus>>,
}

impl<S: RuleSource> Worker<S> {
    fn run(mut self) {
        loop {
            let every = match self.source.poll_interval() {
                Some(every) if self.state.unread => Some(every.min(RETRY)),
                Some(every) => Some(every),
                None => self.state.unread.then_some(RETRY),
            };
            let message = match every {
                Some(every) => self.messages.recv_timeout(every),
                None => self
                    .messages
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
            };
            match message {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                // Polling: read whatever the source said.
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Message::Changed) => {
                    if !self.settle() {
                        return;
                    }
                }
            }
            self.state.check(&mut self.source, &self.status);
            lock(&self.status).polling = self.source.polling();
        }
    }

    /// Waits until no change has come for [`DEBOUNCE`] (at most [`MAX_DEBOUNCE`]); `false` if
    /// the watcher is to stop.
    fn settle(&self) -> bool {
        let start = Instant::now();
        loop {
            let left = MAX_DEBOUNCE.saturating_sub(start.elapsed());
            if left.is_zero() {
                return true;
            }
            match self.messages.recv_timeout(DEBOUNCE.min(left)) {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => return true,
                Ok(Message::Changed) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::source::DocumentFormat;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A store that can be down, and holds a document or none; polled every 5 s, it never
    /// tells of a change.
    struct Store {
        up: Arc<AtomicBool>,
        doc: Arc<Mutex<Option<Document>>>,
    }

    impl RuleSource for Store {
        fn origin(&self) -> PathBuf {
            PathBuf::from("store://unit (key retry)")
        }
        fn watch(&mut self, _changes: Changes) -> Result<(), RuleSetError> {
            Ok(())
        }
        fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
            if !self.up.load(Ordering::Relaxed) {
                let e = RuleSetError::unread(Unread::Unreachable, "the store is unreachable");
                return Err(e.in_file(&self.origin()));
            }
            let doc = self
                .doc
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            Ok(match doc {
                None => Read::Missing,
                Some(doc) if seen == Some(doc.version) => Read::Unchanged,
                Some(doc) => Read::Document(doc),
            })
        }
        fn poll_interval(&self) -> Option<Duration> {
            Some(Duration::from_secs(5))
        }
    }

    /// Checks a set without loading it (other unit tests run beside this one).
    fn checked(set: RuleSet) -> Result<(), RuleSetError> {
        set.validate()
    }

    fn wait(watcher: &RuleWatcher, what: &str, done: impl Fn(&WatchStatus) -> bool) -> Duration {
        let start = Instant::now();
        loop {
            let status = watcher.status();
            if done(&status) {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "{what}: {status:?}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_store_down_or_empty_at_start_is_said_and_read_again_every_second() {
        let (up, doc) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let store = Store {
            up: Arc::clone(&up),
            doc: Arc::clone(&doc),
        };
        let watcher = RuleWatcher::start(store, checked).expect("it starts with the store down");
        let status = watcher.status();
        let err = status.last_error.expect("said at start").to_string();
        assert_eq!(
            err,
            "no rules read from store://unit (key retry): the store is unreachable"
        );
        assert_eq!(status.loads, 0);

        // Up, without a document: said within a second and a bit, not at the 5 s poll.
        up.store(true, Ordering::Relaxed);
        let took = wait(&watcher, "no document", |s| {
            s.last_error
                .as_ref()
                .is_some_and(|e| e.to_string().contains("holds no rule document"))
        });
        assert!(took < Duration::from_secs(2), "{took:?}");

        // A document: loaded at the next second's read.
        let text = b"flow:\n  - resource: retry-unit\n    threshold: 3\n".to_vec();
        *doc.lock().unwrap() = Some(Document::new(text, 7, DocumentFormat::Yaml));
        let took = wait(&watcher, "the document", |s| {
            s.version == 7 && s.loads == 1 && s.last_error.is_none()
        });
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn watchers_can_be_kept_anywhere() {
        fn assert_traits<T: Send + Sync + 'static>() {}
        assert_traits::<RuleWatcher>();
        assert_traits::<WatchStatus>();
    }
}
