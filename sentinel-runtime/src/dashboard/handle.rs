//! A running dashboard: its address, its token, and stopping it on drop.

use std::fmt;
use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::sync::watch;

/// A running dashboard; dropping it stops the server (and ends its event streams).
#[must_use = "the dashboard stops when its handle is dropped"]
pub struct DashboardHandle {
    pub(super) addr: SocketAddr,
    pub(super) token: String,
    pub(super) stop: Option<Stop>,
}

impl DashboardHandle {
    /// The link to open, with the token in its fragment: `http://127.0.0.1:PORT/#token=...`.
    /// No server sees a fragment; the page moves the token to `sessionStorage` (scoped to
    /// its origin, so to this port), removes it from the address bar, and sends it in a
    /// header. No cookie is set.
    pub fn url(&self) -> String {
        format!("http://{}/#token={}", self.addr, self.token)
    }

    /// The address the server listens on (with the port chosen when binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token every request must carry.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl fmt::Debug for DashboardHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token stays out of logs.
        f.debug_struct("DashboardHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for DashboardHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.stop();
        }
    }
}

/// Stops a running server: ends its listener, its sampler and its event streams; the server's
/// own thread (outside a runtime) is joined.
pub(crate) struct Stop {
    tx: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Stop {
    /// Stops by `tx`; joins `thread` (the server's own, outside a runtime), if any.
    pub(crate) fn new(tx: watch::Sender<bool>, thread: Option<JoinHandle<()>>) -> Stop {
        Stop { tx, thread }
    }

    pub(crate) fn stop(mut self) {
        let _ = self.tx.send(true);
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}
