//! The dashboard bounds itself inside someone else's process: at most so many connections, a
//! header timeout (a request's head must arrive within it of its first byte), and an idle
//! timeout (a connection that sends nothing between requests is closed). Without them, idle
//! sockets to the dashboard used up the process's file descriptors, and the service itself
//! stopped answering.
//!
//! Past the cap, a connection that is not in a request is closed to make room, in this order:
//! first those that never carried a request with the token, a half-sent request before a
//! silent one, each the longest waiting first; then the token's own. A slot a stranger can
//! hold is a lockout: with half-sent requests kept (one byte each, reopened when closed), 70
//! tokenless connections once held all 64 slots and the user with the token got no answer.
//! The new connection is refused only when every one is in a request or an event stream.
//!
//! The listener hands axum connections wrapped in [`Guarded`], which enforces the deadlines in
//! its reads and writes; the request handler marks the connection busy while it runs (through
//! [`Tag`], the connection's "address"), and an event stream keeps it busy while it lives
//! (event streams have their own cap instead).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// The limits, from the settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
}

/// One connection's state, shared by its reads and writes and the requests it carries.
pub(crate) struct Conn {
    limits: Limits,
    /// Requests being handled (and event streams open) on this connection.
    busy: AtomicUsize,
    /// Told to close (it was the oldest idle one past the cap, or the dashboard stopped).
    evict: AtomicBool,
    /// A request on it carried the token.
    trusted: AtomicBool,
    times: Mutex<Times>,
    waker: Mutex<Option<Waker>>,
}

#[derive(Clone, Copy)]
struct Times {
    /// Since when the connection has waited for a request (accepted, or the last one done).
    idle_since: Instant,
    /// The first byte of the next request, once it has come.
    head_since: Option<Instant>,
}

impl Conn {
    fn new(limits: Limits) -> Conn {
        Conn {
            limits,
            busy: AtomicUsize::new(0),
            evict: AtomicBool::new(false),
            trusted: AtomicBool::new(false),
            times: Mutex::new(Times {
                idle_since: Instant::now(),
                head_since: None,
            }),
            waker: Mutex::new(None),
        }
    }

    fn times(&self) -> std::sync::MutexGuard<'_, Times> {
        self.times.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection busy until the guard is dropped (a request being handled, an
    /// event stream open): no deadline applies meanwhile, and it is never evicted.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.times().head_since = None;
        Busy(Arc::clone(self))
    }

    /// When the connection is closed if nothing changes: `None` while busy.
    fn deadline(&self) -> Option<Instant> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let t = *self.times();
        Some(match t.head_since {
            Some(head) => head + self.limits.header_timeout,
            None => t.idle_since + self.limits.idle_timeout,
        })
    }

    /// A request on this connection carried the token: it is closed to make room only after
    /// every connection of strangers.
    pub(crate) fn trust(&self) {
        self.trusted.store(true, Ordering::Release);
    }

    /// Not in a request (waiting for one, or part of one sent): may be closed to make room.
    /// The lower the key, the sooner: strangers' connections first, then a half-sent request
    /// before a silent connection, then the one waiting longest.
    fn eviction_key(&self) -> Option<(bool, bool, Instant)> {
        if self.busy.load(Ordering::Acquire) > 0 || self.evict.load(Ordering::Acquire) {
            return None;
        }
        let t = *self.times();
        let trusted = self.trusted.load(Ordering::Acquire);
        Some(match t.head_since {
            Some(head) => (trusted, false, head),
            None => (trusted, true, t.idle_since),
        })
    }

    fn read_some(&self) {
        if self.busy.load(Ordering::Acquire) == 0 {
            let mut t = self.times();
            if t.head_since.is_none() {
                t.head_since = Some(Instant::now());
            }
        }
    }

    /// Closes the connection at its next read or write (and wakes it to do so).
    fn close(&self) {
        self.evict.store(true, Ordering::Release);
        if let Some(w) = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            w.wake();
        }
    }
}

/// A request or an event stream in progress on a connection (see [`Conn::busy`]).
pub(crate) struct Busy(Arc<Conn>);

impl Busy {
    /// Another mark on the same connection (an event stream outlives its request).
    pub(crate) fn again(&self) -> Busy {
        self.0.busy()
    }

    /// The request carried the token: see [`Conn::trust`].
    pub(crate) fn trust(&self) {
        self.0.trust();
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        {
            let mut t = self.0.times();
            t.idle_since = Instant::now();
            t.head_since = None;
        }
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The connection a request came on, as axum's `ConnectInfo`.
#[derive(Clone)]
pub(crate) struct Tag(pub(crate) Arc<Conn>);

impl std::fmt::Debug for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dashboard connection")
    }
}

impl Connected<IncomingStream<'_, Bounded>> for Tag {
    fn connect_info(stream: IncomingStream<'_, Bounded>) -> Tag {
        stream.remote_addr().clone()
    }
}

/// The live connections of one dashboard.
#[derive(Default)]
pub(crate) struct Conns {
    live: Mutex<Vec<Weak<Conn>>>,
}

impl Conns {
    /// Admits a new connection under the cap; past it, tells the first connection in the
    /// order of [`Conn::eviction_key`] to close and asks the caller to let it (`Evicting`), or
    /// refuses the new one when every connection is in a request.
    fn admit(&self, limits: Limits) -> Admit {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|c| c.strong_count() > 0);
        if live.len() < limits.max_connections {
            let conn = Arc::new(Conn::new(limits));
            live.push(Arc::downgrade(&conn));
            return Admit::Yes(conn);
        }
        let open: Vec<Arc<Conn>> = live.iter().filter_map(Weak::upgrade).collect();
        if open.iter().any(|c| c.evict.load(Ordering::Acquire)) {
            return Admit::Evicting;
        }
        let oldest = open
            .iter()
            .filter_map(|c| c.eviction_key().map(|k| (k, c)))
            .min_by_key(|(k, _)| *k);
        match oldest {
            Some((_, c)) => {
                c.close();
                Admit::Evicting
            }
            None => Admit::No,
        }
    }

    /// Closes every connection (the dashboard stops).
    pub(crate) fn close_all(&self) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        for c in live.iter().filter_map(Weak::upgrade) {
            c.close();
        }
    }

    /// How many connections are open (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.iter().filter(|c| c.strong_count() > 0).count()
    }
}

/// What to do with a new connection.
enum Admit {
    /// Serve it.
    Yes(Arc<Conn>),
    /// Past the cap: an idle connection is closing to make room; ask again once it has.
    Evicting,
    /// Past the cap and none idle: close it.
    No,
}

/// The dashboard's listener: admits connections within the cap and wraps them in [`Guarded`].
pub(crate) struct Bounded {
    pub(crate) listener: TcpListener,
    pub(crate) conns: Arc<Conns>,
    pub(crate) limits: Limits,
}

impl Listener for Bounded {
    type Io = Guarded;
    type Addr = Tag;

    async fn accept(&mut self) -> (Guarded, Tag) {
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    // Past the cap, the evicted connection's task must run to close it; a
                    // connection evicted just as a request came finishes that request
                    // first, so the wait is bounded, then the new one is refused (closed).
                    for _ in 0..1_000 {
                        match self.conns.admit(self.limits) {
                            Admit::Yes(conn) => {
                                return (Guarded::new(stream, Arc::clone(&conn)), Tag(conn));
                            }
                            Admit::Evicting => tokio::task::yield_now().await,
                            Admit::No => break,
                        }
                    }
                }
                // Out of descriptors (or another passing failure): wait for some to close
                // instead of spinning.
                Err(e) if !is_connection_error(&e) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(_) => {}
            }
        }
    }

    fn local_addr(&self) -> io::Result<Tag> {
        // axum asks only to describe the listener; a detached state serves.
        Ok(Tag(Arc::new(Conn::new(self.limits))))
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A connection whose reads and writes fail once its deadline passes or it is told to close;
/// the failure makes the HTTP server drop it.
pub(crate) struct Guarded {
    io: TcpStream,
    conn: Arc<Conn>,
    timer: Pin<Box<Sleep>>,
}

impl Guarded {
    fn new(io: TcpStream, conn: Arc<Conn>) -> Guarded {
        let _ = io.set_nodelay(true);
        let at = conn.deadline().unwrap_or_else(Instant::now);
        Guarded {
            io,
            conn,
            timer: Box::pin(tokio::time::sleep_until(at)),
        }
    }

    /// Called when the inner read or write is pending: an error if the connection must close
    /// now, else `Pending` with a wake-up at its deadline (or when told to close).
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        *self
            .conn
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        loop {
            if self.conn.evict.load(Ordering::Acquire) {
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "dashboard: connection closed (past the connection cap, or stopping)",
                ));
            }
            let Some(deadline) = self.conn.deadline() else {
                return Poll::Pending;
            };
            if Instant::now() >= deadline {
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "dashboard: header or idle timeout",
                ));
            }
            if self.timer.deadline() != deadline {
                self.timer.as_mut().reset(deadline);
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    fn evicted(&self) -> bool {
        self.conn.evict.load(Ordering::Acquire)
    }
}

fn aborted() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "dashboard: connection closed",
    )
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.evicted() && self.conn.busy.load(Ordering::Acquire) == 0 {
            return Poll::Ready(Err(aborted()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.conn.read_some();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.wait(cx).map(Err),
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.wait(cx).map(Err),
            done => done,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.wait(cx).map(Err),
            done => done,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.wait(cx).map(Err),
            done => done,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> Limits {
        Limits {
            max_connections: max,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(20),
        }
    }

    fn admitted(conns: &Conns) -> Arc<Conn> {
        match conns.admit(limits(2)) {
            Admit::Yes(c) => c,
            _ => panic!("not admitted"),
        }
    }

    #[test]
    fn past_the_cap_the_oldest_idle_goes_and_busy_ones_stay() {
        let conns = Conns::default();
        let a = admitted(&conns);
        let b = admitted(&conns);
        let _a_busy = a.busy();
        assert!(matches!(conns.admit(limits(2)), Admit::Evicting));
        assert!(
            !a.evict.load(Ordering::Acquire),
            "a busy connection is never evicted"
        );
        assert!(b.evict.load(Ordering::Acquire), "the idle one goes");
        assert!(
            matches!(conns.admit(limits(2)), Admit::Evicting),
            "until it has gone"
        );
        drop(b);
        let c = admitted(&conns);
        assert_eq!(conns.len(), 2);
        let _c_busy = c.busy();
        assert!(
            matches!(conns.admit(limits(2)), Admit::No),
            "none idle: refused"
        );
    }

    #[test]
    fn strangers_half_sent_requests_go_first_then_their_silent_ones_then_the_tokens() {
        let conns = Conns::default();
        let admit = || match conns.admit(limits(4)) {
            Admit::Yes(c) => c,
            _ => panic!("not admitted"),
        };
        let trusted = admit();
        trusted.trust();
        let silent = admit();
        let half_old = admit();
        half_old.read_some();
        let half_new = admit();
        half_new.read_some();
        let evicted = |c: &Arc<Conn>| c.evict.load(Ordering::Acquire);
        let (mut order, mut newcomers) = (Vec::new(), Vec::new());
        for (name, conn) in [
            ("half-sent, older", half_old),
            ("half-sent, newer", half_new),
            ("silent", silent),
            ("the token's", trusted),
        ] {
            assert!(matches!(conns.admit(limits(4)), Admit::Evicting));
            assert!(
                evicted(&conn),
                "{name} was not the one closed (closed so far: {order:?})"
            );
            order.push(name);
            drop(conn);
            // The newcomer takes the place, busy (in its request), so it is never chosen.
            let newcomer = admit();
            newcomers.push((newcomer.busy(), newcomer));
        }
        assert!(
            matches!(conns.admit(limits(4)), Admit::No),
            "all busy: refused"
        );
    }

    #[test]
    fn a_head_started_is_due_by_the_header_timeout_and_busy_has_no_deadline() {
        let conn = Arc::new(Conn::new(limits(2)));
        let idle = conn.deadline().unwrap();
        conn.read_some();
        let head = conn.deadline().unwrap();
        assert!(head < idle, "the header timeout is the shorter");
        assert!(
            conn.eviction_key().is_some_and(|(_, silent, _)| !silent),
            "a head in progress is half-sent"
        );
        let busy = conn.busy();
        assert_eq!(conn.deadline(), None);
        drop(busy);
        assert!(conn.deadline().unwrap() >= idle);
    }
}
