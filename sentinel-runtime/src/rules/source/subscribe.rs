//! The Redis source's change messages: a thread subscribed to the document's channel that
//! tells the watcher of each message, and of each new subscription (a change may have been
//! missed while it was down). The watcher's poll covers whatever this misses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::rule_source::Changes;

/// How often the subscribed thread looks whether it is to stop (its read timeout).
const TICK: Duration = Duration::from_millis(200);
/// The first wait before subscribing again after a failure; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A running subscription; dropping it stops its thread (within [`TICK`]).
#[derive(Debug)]
pub(super) struct Subscriber {
    stop: Arc<AtomicBool>,
    subscribed: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Subscriber {
    /// Subscribes to `channel` on the first of `nodes` that answers (in turn after a failure),
    /// telling `changes` of every message.
    pub(super) fn start(
        nodes: Vec<redis::Client>,
        channel: String,
        timeout: Duration,
        changes: Changes,
    ) -> std::io::Result<Subscriber> {
        let stop = Arc::new(AtomicBool::new(false));
        let subscribed = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            nodes,
            channel,
            timeout,
            changes,
            stop: Arc::clone(&stop),
            subscribed: Arc::clone(&subscribed),
        };
        let thread = thread::Builder::new()
            .name("sentinel-rule-subscriber".into())
            .spawn(move || listener.run())?;
        Ok(Subscriber {
            stop,
            subscribed,
            thread: Some(thread),
        })
    }

    /// Whether messages can arrive now.
    pub(super) fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Listener {
    nodes: Vec<redis::Client>,
    channel: String,
    timeout: Duration,
    changes: Changes,
    stop: Arc<AtomicBool>,
    subscribed: Arc<AtomicBool>,
}

impl Listener {
    fn run(self) {
        let mut backoff = MIN_BACKOFF;
        for node in self.nodes.iter().cycle() {
            match self.listen(node, &mut backoff) {
                // Stopped, or the watcher is gone.
                Ok(()) => return,
                Err(_) => {
                    // Lost: the watcher reads now (and says it polls, or that Redis is away).
                    if self.subscribed.swap(false, Ordering::Relaxed) && !self.changes.changed() {
                        return;
                    }
                    if !self.pause(backoff) {
                        return;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Listens on `node` until told to stop (`Ok`) or the connection fails.
    fn listen(&self, node: &redis::Client, backoff: &mut Duration) -> redis::RedisResult<()> {
        let mut conn = node.get_connection_with_timeout(self.timeout)?;
        conn.set_write_timeout(Some(self.timeout))?;
        let mut pubsub = conn.as_pubsub();
        pubsub.set_read_timeout(Some(self.timeout))?;
        pubsub.subscribe(&self.channel)?;
        pubsub.set_read_timeout(Some(TICK))?;
        self.subscribed.store(true, Ordering::Relaxed);
        *backoff = MIN_BACKOFF;
        // A change may have been missed while not subscribed.
        if !self.changes.changed() {
            return Ok(());
        }
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            match pubsub.get_message() {
                Ok(_) => {
                    if !self.changes.changed() {
                        return Ok(());
                    }
                }
                Err(e) if e.is_timeout() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits `how_long` unless told to stop: `false` if told.
    fn pause(&self, how_long: Duration) -> bool {
        let until = Instant::now() + how_long;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            thread::sleep(left.min(TICK));
        }
    }
}
