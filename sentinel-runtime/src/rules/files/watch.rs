//! [`watch_file`]: load a rule file, then reload it whenever it changes, keeping the last good
//! rules through deletions, empty files and half-written files.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::file::format_of;
use super::format::Format;
use super::load::rule_count;
use super::report::{self, content_version};
use super::text::parse;
use crate::manager::set::{self, RuleSet, RuleSetError};

/// A change is read once the directory has been quiet this long...
const DEBOUNCE: Duration = Duration::from_millis(150);
/// ...or once changes have kept coming for this long.
const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// How often the file is read when the directory cannot be watched.
const POLL: Duration = Duration::from_secs(1);

/// What a [`RuleWatcher`] has done: when it last loaded the file, which content, and what went
/// wrong since.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WatchStatus {
    /// When the rules in force were loaded from the file (wall-clock time).
    pub loaded_at: SystemTime,
    /// The loaded content's version: a 64-bit FNV-1a hash of the file's bytes.
    pub version: u64,
    /// Why the file's latest content is not in force (unreadable, missing, empty, unparseable
    /// or with bad rules), or `None` when the file holds what is in force.
    pub last_error: Option<RuleSetError>,
    /// How many times the file was loaded, the first load included.
    pub loads: u64,
    /// Whether the watcher reads the file every second, the directory's change notifications
    /// being unavailable.
    pub polling: bool,
    /// How many resources the rules in force name that no call has entered since they were
    /// loaded (read when the status is taken; [`unmatched`](crate::rules::unmatched) names
    /// them): usually a typo or a route in another syntax.
    pub unmatched: usize,
}

/// A running rule-file watcher, from [`watch_file`]. Dropping it stops it (and waits for its
/// thread to finish); the rules it loaded stay in force.
#[derive(Debug)]
pub struct RuleWatcher {
    path: PathBuf,
    status: Arc<Mutex<WatchStatus>>,
    wake: Sender<Message>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug)]
enum Message {
    Changed(notify::Result<Event>),
    Stop,
}

/// Loads a rule file, then reloads it whenever it changes, until the returned [`RuleWatcher`]
/// is dropped. Needs the default feature `rule-files`.
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
///   [`WatchStatus::polling`] says so: the watcher never reports a file as followed while blind
///   to it.
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
    RuleWatcher::start(path.as_ref(), set::load_uncounted, false)
}

type Loader = fn(RuleSet) -> Result<(), RuleSetError>;

impl RuleWatcher {
    fn start(path: &Path, loader: Loader, poll: bool) -> Result<RuleWatcher, RuleSetError> {
        let cannot = |what: String| RuleSetError::whole(what).in_file(path);
        let path = std::path::absolute(path)
            .map_err(|e| cannot(format!("cannot resolve the file's path: {e}")))?;
        // The first load's refusals are reported as every later one is.
        let refused = |e: RuleSetError, version| {
            let _ = report::file_load(&path, version, 0, Err(e.clone()));
            e
        };
        let format = format_of(&path).map_err(|e| refused(e, None))?;
        let dir = match path.parent() {
            Some(dir) => dir.to_owned(),
            None => return Err(cannot("the path names no file in a directory".into())),
        };
        let (wake, messages) = mpsc::channel();
        let file = WatchedFile {
            path: path.clone(),
            format,
            loader,
            failed: None,
        };
        // Watch before the first read, so no change after it is missed.
        let mut watches = Watches::new(&dir, wake.clone(), poll);
        watches.refresh(&path);
        let bytes = fs::read(&path)
            .map_err(|e| RuleSetError::whole(format!("cannot read the file: {e}")).in_file(&path))
            .map_err(|e| refused(e, None))?;
        let version = content_version(&bytes);
        let rules = file.load(&bytes).map_err(|e| refused(e, Some(version)))?;
        report::file_load(&path, Some(version), rules, Ok(()))?;
        let status = Arc::new(Mutex::new(WatchStatus {
            loaded_at: SystemTime::now(),
            version,
            last_error: None,
            loads: 1,
            polling: watches.blind(),
            unmatched: 0,
        }));
        let worker = Worker {
            file,
            watches,
            messages,
            status: Arc::clone(&status),
        };
        let thread = thread::Builder::new()
            .name("sentinel-rule-watcher".into())
            .spawn(move || worker.run())
            .map_err(|e| cannot(format!("cannot start the watcher's thread: {e}")))?;
        Ok(RuleWatcher {
            path,
            status,
            wake,
            thread: Some(thread),
        })
    }

    /// The watched file (as an absolute path).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When the rules were last loaded from the file, which content, and the latest error.
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

fn lock(status: &Mutex<WatchStatus>) -> MutexGuard<'_, WatchStatus> {
    status.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The directories watched for one file: the file's own, and when it is a symlink, those of
/// every link on the way and of the real file (found again after every change).
struct Watches {
    /// The file's own directory (its path as given, made absolute).
    dir: PathBuf,
    notifier: Option<RecommendedWatcher>,
    /// The directories watched now, canonical.
    watched: Vec<PathBuf>,
    /// Whether some directory that matters could not be watched: the file is then polled.
    blind: bool,
}

impl Watches {
    fn new(dir: &Path, wake: Sender<Message>, poll: bool) -> Watches {
        let notifier = if poll {
            None
        } else {
            notify::recommended_watcher(move |event| {
                let _ = wake.send(Message::Changed(event));
            })
            .ok()
        };
        Watches {
            dir: dir.to_owned(),
            notifier,
            watched: Vec::new(),
            blind: false,
        }
    }

    /// Whether the file is polled (no notifier, or a directory that matters unwatched).
    fn blind(&self) -> bool {
        self.notifier.is_none() || self.blind
    }

    /// Watches the directories `path` depends on now, and stops watching the others.
    fn refresh(&mut self, path: &Path) {
        let Some(notifier) = self.notifier.as_mut() else {
            return;
        };
        let (wanted, complete) = directories_of(path, &self.dir);
        for old in std::mem::take(&mut self.watched) {
            if wanted.contains(&old) {
                self.watched.push(old);
            } else {
                let _ = notifier.unwatch(&old);
            }
        }
        let mut blind = !complete;
        for dir in wanted {
            if self.watched.contains(&dir) {
                continue;
            }
            match notifier.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => self.watched.push(dir),
                Err(_) => blind = true,
            }
        }
        self.blind = blind;
    }

    /// Whether the file's own directory went away (its watch is then gone for good).
    fn lost_directory(&self, event: &Event) -> bool {
        matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        ) && event
            .paths
            .iter()
            .any(|p| p == &self.dir || self.watched.first() == Some(p))
    }

    fn stop(&mut self) {
        self.notifier = None;
        self.watched.clear();
    }
}

/// The most links followed from the file to the real file.
const MAX_LINKS: usize = 40;

/// The directories (canonical) whose changes can change what `path` reads: its own `dir`
/// first, then the directory of each link on the way (a link may name a path through other
/// links, such as a ConfigMap's `..data`), and the real file's. `false` with them if a link
/// could not be followed to the end (a missing target is fine: its directory is watched).
fn directories_of(path: &Path, dir: &Path) -> (Vec<PathBuf>, bool) {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut add = |d: &Path| {
        if let Ok(d) = fs::canonicalize(d) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    };
    add(dir);
    let mut at = path.to_owned();
    let mut complete = false;
    for _ in 0..MAX_LINKS {
        let Ok(meta) = fs::symlink_metadata(&at) else {
            // Missing: the directory it would be in is watched, for when it comes.
            complete = true;
            break;
        };
        if !meta.file_type().is_symlink() {
            complete = true;
            break;
        }
        let Ok(target) = fs::read_link(&at) else {
            break;
        };
        let next = match at.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
        if let Some(parent) = next.parent() {
            add(parent);
            // A link to a directory on the way (a ConfigMap's `..data`): its own directory too.
            let linked = fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink());
            if let Some(grandparent) = parent.parent().filter(|_| linked) {
                add(grandparent);
            }
        }
        at = next;
    }
    if let Some(real_dir) = fs::canonicalize(path)
        .ok()
        .as_deref()
        .and_then(Path::parent)
    {
        add(real_dir);
    }
    (dirs, complete)
}

/// The file and how to load it.
struct WatchedFile {
    path: PathBuf,
    format: Format,
    loader: Loader,
    /// The latest refusal, not to report it again until something changes.
    failed: Option<Failure>,
}

/// Why the file's latest look was refused.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Content of this version.
    Content(u64),
    /// The file could not be read.
    Unreadable(std::io::ErrorKind),
}

impl WatchedFile {
    /// Parses and loads the content: how many rules it has.
    fn load(&self, bytes: &[u8]) -> Result<usize, RuleSetError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| RuleSetError::whole(format!("the file is not UTF-8: {e}")))
            .map_err(|e| e.in_file(&self.path))?;
        let set = parse(text, self.format).map_err(|e| e.in_file(&self.path))?;
        let rules = rule_count(&set);
        (self.loader)(set).map_err(|e| e.in_file(&self.path))?;
        Ok(rules)
    }

    /// Records a refusal in the status, and reports it if it is new.
    fn refused(&mut self, status: &Mutex<WatchStatus>, why: Failure, e: RuleSetError) {
        lock(status).last_error = Some(e.clone());
        if self.failed != Some(why) {
            self.failed = Some(why);
            let version = match why {
                Failure::Content(version) => Some(version),
                Failure::Unreadable(_) => None,
            };
            let _ = report::file_load(&self.path, version, 0, Err(e));
        }
    }

    /// Reads the file and loads it if its content changed; the last good rules stay otherwise.
    fn check(&mut self, status: &Mutex<WatchStatus>) {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) => {
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    "the file is missing".to_owned()
                } else {
                    format!("cannot read the file: {e}")
                };
                let error =
                    RuleSetError::whole(format!("{why}; the last good rules stay in force"))
                        .in_file(&self.path);
                self.refused(status, Failure::Unreadable(e.kind()), error);
                return;
            }
        };
        let version = content_version(&bytes);
        if version == lock(status).version {
            // Back to (or still) what is in force.
            if self.failed.take().is_some() {
                report::set_file_result(&self.path, true);
            }
            lock(status).last_error = None;
            return;
        }
        if self.failed == Some(Failure::Content(version)) {
            return;
        }
        match self.load(&bytes) {
            Ok(rules) => {
                self.failed = None;
                let _ = report::file_load(&self.path, Some(version), rules, Ok(()));
                let mut status = lock(status);
                status.loaded_at = SystemTime::now();
                status.version = version;
                status.loads += 1;
                status.last_error = None;
            }
            Err(e) => self.refused(status, Failure::Content(version), e),
        }
    }
}

/// The watcher's thread.
struct Worker {
    file: WatchedFile,
    watches: Watches,
    messages: Receiver<Message>,
    status: Arc<Mutex<WatchStatus>>,
}

/// What came while waiting for the directories to settle.
enum Settled {
    Quiet { watch_failed: bool },
    Stop,
}

impl Worker {
    fn run(mut self) {
        loop {
            let message = if self.watches.blind() {
                self.messages.recv_timeout(POLL)
            } else {
                self.messages
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected)
            };
            match message {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    // Polling: a directory may have become watchable again.
                    self.watches.refresh(&self.file.path);
                    self.set_polling();
                    self.file.check(&self.status);
                }
                Ok(Message::Changed(event)) => {
                    let watch_failed = match &event {
                        Ok(event) if !matters(event) => continue,
                        Ok(event) => self.watches.lost_directory(event),
                        Err(_) => true,
                    };
                    match self.settle() {
                        Settled::Stop => return,
                        Settled::Quiet { watch_failed: more } => {
                            if watch_failed || more {
                                self.watches.stop();
                            }
                        }
                    }
                    // Links may point elsewhere now: watch where they lead, then read.
                    self.watches.refresh(&self.file.path);
                    self.set_polling();
                    self.file.check(&self.status);
                }
            }
        }
    }

    fn set_polling(&self) {
        lock(&self.status).polling = self.watches.blind();
    }

    /// Waits until no change has come for [`DEBOUNCE`] (at most [`MAX_DEBOUNCE`]).
    fn settle(&self) -> Settled {
        let start = Instant::now();
        let mut watch_failed = false;
        loop {
            let left = MAX_DEBOUNCE.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Settled::Quiet { watch_failed };
            }
            match self.messages.recv_timeout(DEBOUNCE.min(left)) {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return Settled::Stop,
                Err(RecvTimeoutError::Timeout) => return Settled::Quiet { watch_failed },
                Ok(Message::Changed(Ok(event))) => {
                    if !matters(&event) {
                        // Reads (ours included) do not delay the reload.
                        continue;
                    }
                    watch_failed |= self.watches.lost_directory(&event);
                }
                Ok(Message::Changed(Err(_))) => watch_failed = true,
            }
        }
    }
}

/// Whether an event can mean new content: anything but reads (opening, reading, closing a file
/// not written), which our own reads of the file cause.
fn matters(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::FlowRule;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
    fn watchers_can_be_kept_anywhere() {
        fn assert_traits<T: Send + Sync + 'static>() {}
        assert_traits::<RuleWatcher>();
        assert_traits::<WatchStatus>();
    }

    #[test]
    fn polling_reloads_changes_and_keeps_the_last_good_set() {
        let dir = temp_dir();
        let path = dir.join("rules.toml");
        let rules = |n: f64| format!("[[flow]]\nresource = \"poll-unit\"\nthreshold = {n}\n");
        fs::write(&path, rules(1.0)).unwrap();
        let watcher = RuleWatcher::start(&path, record, true).unwrap();
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
