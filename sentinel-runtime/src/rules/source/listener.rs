//! A store's change messages, heard by a thread of their own: it listens on the first of the
//! store's endpoints that answers (the next in turn after a failure, after a wait that doubles
//! from [`MIN_BACKOFF`] to [`MAX_BACKOFF`]), tells the watcher of each change and of each new
//! listening (a change may have been missed while there was none), and says whether it listens
//! now. The watcher's poll covers whatever it misses. What listening means is the store's
//! ([`Listen`]: a Redis subscription, an etcd watch).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::rule_source::Changes;

/// How often a listening or paused thread looks whether it is to stop.
pub(super) const TICK: Duration = Duration::from_millis(200);
/// The first wait before listening again after a failure; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How one listening ended.
pub(super) enum End {
    /// Told to stop, or the watcher is gone.
    Stopped,
    /// The connection failed, or the store ended the listening.
    Lost,
}

/// One store's way of listening for changes of its document.
pub(super) trait Listen: Send + 'static {
    /// Where it listens: one of the store's nodes or endpoints.
    type Endpoint: Send + 'static;

    /// Listens on `endpoint` until the listening is lost or [`Turn::stopping`]: calls
    /// [`Turn::listening`] once changes can arrive, and [`Turn::changed`] for each.
    fn listen(&self, endpoint: &Self::Endpoint, turn: &mut Turn<'_>) -> End;
}

/// What one listening may say to the thread and the watcher.
pub(super) struct Turn<'a> {
    stop: &'a Arc<AtomicBool>,
    live: &'a AtomicBool,
    changes: &'a Changes,
    backoff: &'a mut Duration,
}

impl Turn<'_> {
    /// Whether the thread is to stop.
    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The flag [`stopping`](Self::stopping) reads, for a reader that must look at it while
    /// it blocks.
    #[cfg(feature = "etcd")]
    pub(super) fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(self.stop)
    }

    /// Changes can arrive now: says so, and tells the watcher (a change may have been missed
    /// while not listening). `false`: the watcher is gone.
    pub(super) fn listening(&mut self) -> bool {
        self.live.store(true, Ordering::Relaxed);
        *self.backoff = MIN_BACKOFF;
        self.changes.changed()
    }

    /// Tells the watcher of a change. `false`: the watcher is gone.
    pub(super) fn changed(&self) -> bool {
        self.changes.changed()
    }
}

/// A running listener; dropping it stops its thread (within [`TICK`]) and waits for it.
#[derive(Debug)]
pub(super) struct Listener {
    stop: Arc<AtomicBool>,
    live: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Starts the thread `name`, listening with `listen` on `endpoints` in turn and telling
    /// `changes`.
    pub(super) fn start<L: Listen>(
        name: &str,
        listen: L,
        endpoints: Vec<L::Endpoint>,
        changes: Changes,
    ) -> std::io::Result<Listener> {
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicBool::new(false));
        let (thread_stop, thread_live) = (Arc::clone(&stop), Arc::clone(&live));
        let thread = thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&listen, &endpoints, &changes, &thread_stop, &thread_live))?;
        Ok(Listener {
            stop,
            live,
            thread: Some(thread),
        })
    }

    /// Whether changes can arrive now.
    pub(super) fn live(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread: listens on each endpoint in turn until told to stop or the watcher is gone.
fn run<L: Listen>(
    listen: &L,
    endpoints: &[L::Endpoint],
    changes: &Changes,
    stop: &Arc<AtomicBool>,
    live: &AtomicBool,
) {
    let mut backoff = MIN_BACKOFF;
    for endpoint in endpoints.iter().cycle() {
        let mut turn = Turn {
            stop,
            live,
            changes,
            backoff: &mut backoff,
        };
        if let End::Stopped = listen.listen(endpoint, &mut turn) {
            return;
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Lost: the watcher reads now (and says it polls, or that the store is away).
        if live.swap(false, Ordering::Relaxed) && !changes.changed() {
            return;
        }
        if !pause(stop, backoff) {
            return;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Waits `how_long` unless told to stop: `false` if told.
fn pause(stop: &AtomicBool, how_long: Duration) -> bool {
    let until = Instant::now() + how_long;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        thread::sleep(left.min(TICK));
    }
}
