//! Watching a rule file's directories (the file source's notifications): the file's own
//! directory, and when the file is a symlink, the directories of every link on the way and of
//! the real file, found again after every change; what a change means ([`Seen`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// The directories watched for one file: the file's own, and when it is a symlink, those of
/// every link on the way and of the real file (found again after every change).
pub(crate) struct Watches {
    /// The file's own directory (its path as given, made absolute).
    dir: PathBuf,
    notifier: Option<RecommendedWatcher>,
    /// The directories watched now, canonical.
    watched: Vec<PathBuf>,
    /// Whether some directory that matters could not be watched: the file is then polled.
    blind: bool,
    /// The first directory watched now (the file's own, canonical), for the notifier's
    /// callback to tell when it went away.
    first: Arc<Mutex<Option<PathBuf>>>,
}

/// What a change in the watched directories means for the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The file may have new content.
    Changed,
    /// The file may have new content, and the watch of its own directory is gone for good (the
    /// directory was removed or renamed, or the notifier failed): stop watching and poll.
    Lost,
}

impl Watches {
    /// Watches for `dir`'s file; `seen` is called (on the notifier's thread) for every change
    /// that can mean new content. With `poll`, nothing is watched and the file is polled.
    pub(crate) fn new(dir: &Path, seen: impl Fn(Seen) + Send + 'static, poll: bool) -> Watches {
        let first: Arc<Mutex<Option<PathBuf>>> = Arc::default();
        let notifier = if poll {
            None
        } else {
            let (dir, first) = (dir.to_owned(), Arc::clone(&first));
            notify::recommended_watcher(move |event: notify::Result<Event>| match event {
                Ok(event) if !matters(&event) => {}
                Ok(event) => {
                    let first = first.lock().unwrap_or_else(PoisonError::into_inner).clone();
                    seen(if lost_directory(&event, &dir, first.as_deref()) {
                        Seen::Lost
                    } else {
                        Seen::Changed
                    });
                }
                Err(_) => seen(Seen::Lost),
            })
            .ok()
        };
        Watches {
            dir: dir.to_owned(),
            notifier,
            watched: Vec::new(),
            blind: false,
            first,
        }
    }

    /// Whether the file is polled (no notifier, or a directory that matters unwatched).
    pub(crate) fn blind(&self) -> bool {
        self.notifier.is_none() || self.blind
    }

    /// Watches the directories `path` depends on now, and stops watching the others.
    pub(crate) fn refresh(&mut self, path: &Path) {
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
        *self.first.lock().unwrap_or_else(PoisonError::into_inner) = self.watched.first().cloned();
    }

    /// Stops watching for good: the file is polled from now on.
    pub(crate) fn stop(&mut self) {
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
        if let Ok(d) = fs::canonicalize(d)
            && !dirs.contains(&d)
        {
            dirs.push(d);
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

/// Whether an event can mean new content: anything but reads (opening, reading, closing a file
/// not written), which our own reads of the file cause.
fn matters(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Whether `event` says the file's own directory went away (its watch is then gone for good):
/// `dir` as given, or `first`, the canonical directory watched first.
fn lost_directory(event: &Event, dir: &Path, first: Option<&Path>) -> bool {
    matches!(
        event.kind,
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    ) && event
        .paths
        .iter()
        .any(|p| p == dir || first == Some(p.as_path()))
}
