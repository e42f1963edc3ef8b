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

use super::files::{self, Format};
use super::set::{self, RuleSet, RuleSetError};

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
///   being a symlink through `..data`). If the directory cannot be watched (or stops being
///   watchable), the file is read every second instead.
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
    RuleWatcher::start(path.as_ref(), set::load, false)
}

type Loader = fn(RuleSet) -> Result<(), RuleSetError>;

impl RuleWatcher {
    fn start(path: &Path, loader: Loader, poll: bool) -> Result<RuleWatcher, RuleSetError> {
        let cannot = |what: String| RuleSetError::whole(what).in_file(path);
        let path = std::path::absolute(path)
            .map_err(|e| cannot(format!("cannot resolve the file's path: {e}")))?;
        let format = Format::of(&path)?;
        let dir = match path.parent() {
            Some(dir) => dir.to_owned(),
            None => return Err(cannot("the path names no file in a directory".into())),
        };
        let (wake, messages) = mpsc::channel();
        // Watch before the first read, so no change after it is missed.
        let notifier = if poll {
            None
        } else {
            watch_directory(&dir, wake.clone())
        };
        let file = WatchedFile {
            path: path.clone(),
            format,
            loader,
            failed_version: None,
        };
        let bytes = fs::read(&path).map_err(|e| {
            RuleSetError::whole(format!("cannot read the file: {e}")).in_file(&path)
        })?;
        file.load(&bytes)?;
        let status = Arc::new(Mutex::new(WatchStatus {
            loaded_at: SystemTime::now(),
            version: content_version(&bytes),
            last_error: None,
            loads: 1,
            polling: notifier.is_none(),
        }));
        let worker = Worker {
            file,
            dir,
            notifier,
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
        lock(&self.status).clone()
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

/// A 64-bit FNV-1a hash: stable across runs and Rust versions, so a version can be compared
/// with one computed elsewhere.
fn content_version(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Starts watching `dir` (its entries, not below), sending every event to `wake`.
fn watch_directory(dir: &Path, wake: Sender<Message>) -> Option<RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = wake.send(Message::Changed(event));
    })
    .ok()?;
    watcher.watch(dir, RecursiveMode::NonRecursive).ok()?;
    Some(watcher)
}

/// The file and how to load it.
struct WatchedFile {
    path: PathBuf,
    format: Format,
    loader: Loader,
    /// The version of the latest content refused, not to report it again until it changes.
    failed_version: Option<u64>,
}

impl WatchedFile {
    fn load(&self, bytes: &[u8]) -> Result<(), RuleSetError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| RuleSetError::whole(format!("the file is not UTF-8: {e}")))
            .map_err(|e| e.in_file(&self.path))?;
        let set = files::parse(text, self.format).map_err(|e| e.in_file(&self.path))?;
        (self.loader)(set).map_err(|e| e.in_file(&self.path))
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
                self.failed_version = None;
                lock(status).last_error = Some(
                    RuleSetError::whole(format!("{why}; the last good rules stay in force"))
                        .in_file(&self.path),
                );
                return;
            }
        };
        let version = content_version(&bytes);
        if version == lock(status).version {
            // Back to (or still) what is in force.
            self.failed_version = None;
            lock(status).last_error = None;
            return;
        }
        if self.failed_version == Some(version) {
            return;
        }
        match self.load(&bytes) {
            Ok(()) => {
                self.failed_version = None;
                let mut status = lock(status);
                status.loaded_at = SystemTime::now();
                status.version = version;
                status.loads += 1;
                status.last_error = None;
            }
            Err(e) => {
                self.failed_version = Some(version);
                lock(status).last_error = Some(e);
            }
        }
    }
}

/// The watcher's thread.
struct Worker {
    file: WatchedFile,
    dir: PathBuf,
    notifier: Option<RecommendedWatcher>,
    messages: Receiver<Message>,
    status: Arc<Mutex<WatchStatus>>,
}

/// What came while waiting for the directory to settle.
enum Settled {
    Quiet { watch_failed: bool },
    Stop,
}

impl Worker {
    fn run(mut self) {
        loop {
            let message = if self.notifier.is_some() {
                self.messages
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                self.messages.recv_timeout(POLL)
            };
            match message {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => self.file.check(&self.status),
                Ok(Message::Changed(event)) => {
                    let watch_failed = match &event {
                        Ok(event) if !matters(event) => continue,
                        Ok(event) => self.lost_directory(event),
                        Err(_) => true,
                    };
                    match self.settle() {
                        Settled::Stop => return,
                        Settled::Quiet { watch_failed: more } => {
                            if watch_failed || more {
                                self.poll_instead();
                            }
                        }
                    }
                    self.file.check(&self.status);
                }
            }
        }
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
                    watch_failed |= self.lost_directory(&event);
                }
                Ok(Message::Changed(Err(_))) => watch_failed = true,
            }
        }
    }

    /// Whether the watched directory itself went away (its watch is then gone).
    fn lost_directory(&self, event: &Event) -> bool {
        matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        ) && event.paths.iter().any(|p| p == &self.dir)
    }

    fn poll_instead(&mut self) {
        self.notifier = None;
        lock(&self.status).polling = true;
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
    fn versions_are_fnv1a() {
        assert_eq!(content_version(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(content_version(b"a"), 0xaf63_dc4c_8601_ec8c);
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
