//! [`FileSource`] and [`watch_file`]: a rule file as a [`RuleSource`], its directories watched
//! (with the links on the way to it), read every second when they cannot be.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::document::{Document, DocumentFormat};
use super::rule_source::{Changes, Read, RuleSource};
use super::watcher::RuleWatcher;
use crate::manager::set::{self, RuleSetError};
use crate::rules::files::file::format_of;
use crate::rules::files::report::content_version;
use crate::rules::files::watch::{Seen, Watches};

/// How often the file is read when its directories cannot be watched.
const POLL: Duration = Duration::from_secs(1);

/// A rule file as a [`RuleSource`]: what [`watch_file`] watches. Its format comes from its
/// extension, its version is a 64-bit FNV-1a hash of its bytes, and it cannot be
/// [`put`](RuleSource::put) (edit the file, or save it through the dashboard).
///
/// ```no_run
/// use sentinel_runtime::rules::{self, source::FileSource};
///
/// let watcher = rules::watch_source(FileSource::new("/etc/myapp/rules.yaml")?)?;
/// # Ok::<(), rules::RuleSetError>(())
/// ```
pub struct FileSource {
    /// The file's path, absolute.
    path: PathBuf,
    /// The file's own directory.
    dir: PathBuf,
    /// Read every second, watching nothing (tests).
    poll: bool,
    watches: Option<Watches>,
    /// Set when the watch of the file's directory is gone for good (from the notifier).
    lost: Arc<AtomicBool>,
    /// Whether the first read was made (its error says less).
    started: bool,
}

impl fmt::Debug for FileSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSource")
            .field("path", &self.path)
            .field("polling", &self.polling())
            .finish_non_exhaustive()
    }
}

impl FileSource {
    /// The rule file at `path` (made absolute now). Errors if the path cannot be resolved or
    /// names no file in a directory; its extension is checked when it is watched.
    pub fn new(path: impl AsRef<Path>) -> Result<FileSource, RuleSetError> {
        let path = path.as_ref();
        let cannot = |what: String| RuleSetError::whole(what).in_file(path);
        let path = std::path::absolute(path)
            .map_err(|e| cannot(format!("cannot resolve the file's path: {e}")))?;
        let dir = match path.parent() {
            Some(dir) => dir.to_owned(),
            None => return Err(cannot("the path names no file in a directory".into())),
        };
        Ok(FileSource {
            path,
            dir,
            poll: false,
            watches: None,
            lost: Arc::default(),
            started: false,
        })
    }

    /// The same source, read every second instead of watched.
    #[cfg(test)]
    pub(crate) fn polled(mut self) -> FileSource {
        self.poll = true;
        self
    }

    fn blind(&self) -> bool {
        self.watches.as_ref().is_none_or(Watches::blind)
    }
}

impl RuleSource for FileSource {
    fn origin(&self) -> PathBuf {
        self.path.clone()
    }

    fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError> {
        format_of(&self.path)?;
        let lost = Arc::clone(&self.lost);
        let seen = move |seen: Seen| {
            if seen == Seen::Lost {
                lost.store(true, Ordering::Relaxed);
            }
            changes.changed();
        };
        let mut watches = Watches::new(&self.dir, seen, self.poll);
        watches.refresh(&self.path);
        self.watches = Some(watches);
        Ok(())
    }

    fn read(&mut self, _seen: Option<u64>) -> Result<Read, RuleSetError> {
        if let Some(watches) = self.watches.as_mut() {
            if self.lost.swap(false, Ordering::Relaxed) {
                watches.stop();
            }
            // Links may point elsewhere now: watch where they lead, then read.
            watches.refresh(&self.path);
        }
        let format = DocumentFormat::from_file(format_of(&self.path)?);
        let first = !std::mem::replace(&mut self.started, true);
        let bytes = fs::read(&self.path).map_err(|e| {
            let message = if first {
                // Nothing is in force from this file yet.
                format!("cannot read the file: {e}")
            } else if e.kind() == std::io::ErrorKind::NotFound {
                "the file is missing; the last good rules stay in force".to_owned()
            } else {
                format!("cannot read the file: {e}; the last good rules stay in force")
            };
            RuleSetError::whole(message).in_file(&self.path)
        })?;
        let version = content_version(&bytes);
        Ok(Read::Document(Document::new(bytes, version, format)))
    }

    fn poll_interval(&self) -> Option<Duration> {
        self.blind().then_some(POLL)
    }

    fn polling(&self) -> bool {
        self.blind()
    }
}

/// Loads a rule file, then reloads it whenever it changes, until the returned [`RuleWatcher`]
/// is dropped: [`watch_source`](super::watch_source) of a [`FileSource`]. Needs the default
/// feature `rule-files`.
///
/// The format comes from the file's extension (`.json`, `.yaml`, `.yml`, `.toml`; see
/// [`files`](crate::rules::files) for the schema). Each load goes through
/// [`load`](crate::rules::load): **the file's rules replace every kind of rule in force**, all
/// at once, so a call sees either the old rules or the new ones, never a mix.
///
/// * The file's **directory** is watched, not the file, so what editors and Kubernetes do
///   works: an atomic rename over the file, and a ConfigMap's `..data` symlink flip (the file
///   being a symlink through `..data`). If the file is a **symlink**, the directories of every
///   link on the way to the real file and the real file's own directory are watched too (so an
///   edit of the target in another directory is seen), and they are found again after every
///   change (a link swapped to another target is followed). If any of these directories cannot
///   be watched (or stops being watchable), the file is read every second instead, and
///   [`WatchStatus::polling`](super::WatchStatus::polling) says so: the watcher never reports a
///   file as followed while blind to it.
/// * Changes are read once the directory has been quiet for 150 ms (at most 1 s after the first
///   change), and content equal to what is loaded is not loaded again.
/// * A deleted, empty, unreadable or unparseable file, or one with a bad rule, **keeps the last
///   good rules** in force and is reported in [`RuleWatcher::status`]; only an explicitly
///   empty set (`{}`, `flow: []`, `flow = []`) clears them. A JSON file cut short never parses;
///   a YAML or TOML file cut at the end of a rule can, so replace such files atomically (write
///   a temporary file, then rename it over the old one), as editors and ConfigMaps do.
///
/// The first load happens before this returns: its error (a missing file, a bad rule with its
/// line) is returned and nothing is watched.
///
/// Every load and every refusal (each new content refused once; a file that cannot be read,
/// once until it can) is counted and reported as [`load_file`](crate::rules::load_file)'s are:
/// [`metrics::rule_loads`](crate::metrics::rule_loads) (kind `rule_set`),
/// [`metrics::rule_files`](crate::metrics::rule_files) and, with the `tracing` feature, an event
/// naming the file (and for a refusal the first problem's line and field).
///
/// ```no_run
/// use sentinel_runtime::rules;
///
/// let watcher = rules::watch_file("/etc/myapp/rules.yaml")?;
/// // ... later, e.g. in a health check:
/// if let Some(err) = watcher.status().last_error {
///     eprintln!("rule file not applied, the last good rules stay: {err}");
/// }
/// # Ok::<(), rules::RuleSetError>(())
/// ```
pub fn watch_file(path: impl AsRef<Path>) -> Result<RuleWatcher, RuleSetError> {
    RuleWatcher::start(FileSource::new(path)?, set::load_uncounted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::set::RuleSet;
    use crate::rules::source::WatchStatus;
    use crate::rules::FlowRule;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Mutex, PoisonError};
    use std::thread;
    use std::time::{Instant, SystemTime};

    /// What the test loader was given (the global rules are not touched: other unit tests run
    /// in parallel).
    static LOADED: Mutex<Vec<RuleSet>> = Mutex::new(Vec::new());

    fn record(set: RuleSet) -> Result<(), RuleSetError> {
        set.validate()?;
        LOADED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(set);
        Ok(())
    }

    fn temp_dir() -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sentinel-watch-unit-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        fs::create_dir_all(&dir).expect("a temp dir");
        dir
    }

    fn wait_until(what: &str, watcher: &RuleWatcher, done: impl Fn(&WatchStatus) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = watcher.status();
            if done(&status) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out: {what}; {status:?}");
            thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn polling_reloads_changes_and_keeps_the_last_good_set() {
        let dir = temp_dir();
        let path = dir.join("rules.toml");
        let rules = |n: f64| format!("[[flow]]\nresource = \"poll-unit\"\nthreshold = {n}\n");
        fs::write(&path, rules(1.0)).unwrap();
        let source = FileSource::new(&path).unwrap().polled();
        let watcher = RuleWatcher::start(source, record).unwrap();
        assert!(watcher.status().polling);
        let first = watcher.status().version;

        fs::write(&path, "[[flow]]\nresource = \"poll-unit\"\n").unwrap();
        wait_until("the bad file is reported", &watcher, |s| {
            s.last_error.is_some()
        });
        let err = watcher.status().last_error.unwrap();
        assert_eq!(err.entries()[0].field.as_deref(), Some("threshold"));
        assert_eq!(err.path(), Some(watcher.path()));
        assert_eq!(watcher.status().version, first);

        fs::write(&path, rules(2.0)).unwrap();
        wait_until("the good file is loaded", &watcher, |s| {
            s.version != first && s.last_error.is_none()
        });
        assert_eq!(watcher.status().loads, 2);
        assert!(LOADED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|s| s.flow == vec![FlowRule::qps("poll-unit", 2.0)]));
        drop(watcher);
        let _ = fs::remove_dir_all(&dir);
    }
}
