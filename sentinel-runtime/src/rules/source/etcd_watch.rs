//! The etcd source's change messages: a thread holding a watch of the document's key (etcd's
//! watch API, a stream of JSON messages) that tells the watcher of each change, and of each
//! new watch (a change may have been missed while there was none). The watcher's poll covers
//! whatever this misses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::etcd_api::{self, WatchEvent, WatchMessage};
use super::etcd_http::Endpoint;
use super::rule_source::Changes;

/// How often a paused thread looks whether it is to stop.
const TICK: Duration = Duration::from_millis(200);
/// The first wait before watching again after a failure; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A running watch; dropping it stops its thread (within [`TICK`]).
#[derive(Debug)]
pub(super) struct KeyWatch {
    stop: Arc<AtomicBool>,
    watching: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl KeyWatch {
    /// Watches `key` on the first of `endpoints` that answers (in turn after a failure),
    /// telling `changes` of every change.
    pub(super) fn start(
        endpoints: Vec<Endpoint>,
        key: Vec<u8>,
        timeout: Duration,
        changes: Changes,
    ) -> std::io::Result<KeyWatch> {
        let stop = Arc::new(AtomicBool::new(false));
        let watching = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            endpoints,
            request: etcd_api::watch_request(&key).to_string().into_bytes(),
            timeout,
            changes,
            stop: Arc::clone(&stop),
            watching: Arc::clone(&watching),
        };
        let thread = thread::Builder::new()
            .name("sentinel-etcd-watch".into())
            .spawn(move || listener.run())?;
        Ok(KeyWatch {
            stop,
            watching,
            thread: Some(thread),
        })
    }

    /// Whether changes can arrive now.
    pub(super) fn watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Listener {
    endpoints: Vec<Endpoint>,
    request: Vec<u8>,
    timeout: Duration,
    changes: Changes,
    stop: Arc<AtomicBool>,
    watching: Arc<AtomicBool>,
}

/// How a watch ended.
enum End {
    /// Told to stop, or the watcher is gone.
    Stopped,
    /// The connection failed or etcd ended the watch.
    Lost,
}

impl Listener {
    fn run(self) {
        let mut backoff = MIN_BACKOFF;
        for endpoint in self.endpoints.iter().cycle() {
            if let End::Stopped = self.listen(endpoint, &mut backoff) {
                return;
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            // Lost: the watcher reads now (and says it polls, or that etcd is away).
            if self.watching.swap(false, Ordering::Relaxed) && !self.changes.changed() {
                return;
            }
            if !self.pause(backoff) {
                return;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Watches on `endpoint` until told to stop or the watch is lost.
    fn listen(&self, endpoint: &Endpoint, backoff: &mut Duration) -> End {
        let stream = endpoint.stream(
            etcd_api::WATCH,
            &self.request,
            self.timeout,
            Arc::clone(&self.stop),
        );
        let body = match stream {
            Ok((200, body)) => body,
            Ok(_) | Err(_) => return End::Lost,
        };
        let messages = serde_json::Deserializer::from_reader(body).into_iter::<WatchMessage>();
        for message in messages {
            if self.stop.load(Ordering::Relaxed) {
                return End::Stopped;
            }
            let Ok(message) = message else {
                return End::Lost;
            };
            let told = match message.event() {
                WatchEvent::Created => {
                    self.watching.store(true, Ordering::Relaxed);
                    *backoff = MIN_BACKOFF;
                    // A change may have been missed while not watching.
                    self.changes.changed()
                }
                WatchEvent::Changed => self.changes.changed(),
                WatchEvent::Quiet => true,
                WatchEvent::Ended(_) => return End::Lost,
            };
            if !told {
                return End::Stopped;
            }
        }
        End::Lost
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
