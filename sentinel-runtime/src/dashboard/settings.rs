//! The dashboard's settings: the builder [`Dashboard`], checked by `start`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::source_api::SharedSource;
use super::DashboardError;
use crate::rules::source::RuleSource;

/// The default address: Sentinel's dashboard port, on loopback.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8719);

/// The dashboard's settings; [`start`](Dashboard::start) serves it.
///
/// ```no_run
/// use sentinel_runtime::dashboard::Dashboard;
/// let dash = Dashboard::new().bind("127.0.0.1:0".parse()?).token("my-own-token").start()?;
/// assert!(dash.url().ends_with("/#token=my-own-token"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Its `Debug` form shows `token: "…"` in place of the token (builders end up in logs and
/// panic messages).
#[derive(Clone)]
pub struct Dashboard {
    pub(super) addr: SocketAddr,
    pub(super) token: Option<String>,
    pub(super) rules_file: Option<PathBuf>,
    pub(super) rules_source: Option<SharedSource>,
    pub(super) allow_remote: bool,
    pub(super) hosts: Vec<String>,
    pub(super) max_connections: usize,
    pub(super) max_event_streams: usize,
    pub(super) header_timeout: Duration,
    pub(super) idle_timeout: Duration,
}

/// The default cap on open connections ([`Dashboard::max_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// The default cap on open event streams ([`Dashboard::max_event_streams`]).
pub const DEFAULT_MAX_EVENT_STREAMS: usize = 16;
/// The default header timeout ([`Dashboard::header_timeout`]).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The default idle timeout ([`Dashboard::idle_timeout`]).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

impl fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dashboard")
            .field("addr", &self.addr)
            .field("token", &Hidden(self.token.is_some()))
            .field("rules_file", &self.rules_file)
            .field("rules_source", &self.rules_source)
            .field("allow_remote", &self.allow_remote)
            .field("hosts", &self.hosts)
            .field("max_connections", &self.max_connections)
            .field("max_event_streams", &self.max_event_streams)
            .field("header_timeout", &self.header_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// A token in a `Debug` form: `"…"` if there is one, else `None`.
struct Hidden(bool);

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0 { "\"…\"" } else { "None" })
    }
}

impl Default for Dashboard {
    fn default() -> Self {
        Dashboard::new()
    }
}

impl Dashboard {
    /// A dashboard on [`DEFAULT_ADDR`] (`127.0.0.1:8719`) with a random 256-bit token.
    pub fn new() -> Dashboard {
        Dashboard {
            addr: DEFAULT_ADDR,
            token: None,
            rules_file: None,
            rules_source: None,
            allow_remote: false,
            hosts: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_event_streams: DEFAULT_MAX_EVENT_STREAMS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// The address to listen on (port 0: any free port, see [`DashboardHandle::local_addr`](crate::dashboard::DashboardHandle::local_addr)).
    /// It must be a loopback address unless [`allow_remote`](Self::allow_remote) is called.
    pub fn bind(mut self, addr: SocketAddr) -> Dashboard {
        self.addr = addr;
        self
    }

    /// The token instead of a random one: 16 to 256 characters among `A-Z a-z 0-9 - . _ ~`
    /// (it travels in a URL's fragment and a header). [`start`](Self::start) refuses others.
    pub fn token(mut self, token: impl Into<String>) -> Dashboard {
        self.token = Some(token.into());
        self
    }

    /// Where rule edits made on the page are saved, in the format its extension names
    /// (`.yaml`/`.yml`, `.toml`, else JSON), so that they survive a restart: [`start`]
    /// loads the file when it is there (an invalid one fails `start`, naming the file and
    /// the fields, and nothing is loaded; a missing one leaves the rules in force until the
    /// first save). A save writes a new file under an unpredictable name (`O_CREAT |
    /// O_EXCL`) in the directory of the file the path resolves to, syncs it and renames it
    /// over that file: a symlinked rules file stays a link. Without it, edits apply to the
    /// running process only.
    ///
    /// [`start`]: Self::start
    pub fn rules_file(mut self, path: impl Into<PathBuf>) -> Dashboard {
        self.rules_file = Some(path.into());
        self
    }

    /// Where rule edits made on the page go instead: a [`RuleSource`] such as a
    /// [`RedisSource`](crate::rules::source) that every instance of the service watches
    /// ([`rules::watch_source`](crate::rules::watch_source)), so an edit on any instance's page
    /// reaches them all. `GET /api/rules` shows the source's document with its version as the
    /// `ETag`; a `PUT` writes through the source's compare-and-set (a stale `If-Match` is
    /// `409`, and nothing is written); while the source holds no document yet, `GET` shows
    /// the rules in force with the `ETag` `"v0"`, and the first edit creates the document. The
    /// dashboard does not watch the source itself: watch it with `watch_source`. A `PUT`
    /// answers `"applied": true` only once the rules written are in force in this process
    /// (it waits up to 2 s for its watcher); else `"applied": false, "written": true`. Not with
    /// [`rules_file`](Self::rules_file) ([`start`](Self::start) refuses both).
    ///
    /// ```no_run
    /// # #[cfg(feature = "redis")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use sentinel_runtime::dashboard::Dashboard;
    /// use sentinel_runtime::rules::{self, source::RedisSource};
    ///
    /// let source = RedisSource::new("redis://127.0.0.1:6379", "shop:rules")?;
    /// let _watcher = rules::watch_source(source.clone())?;
    /// let dash = Dashboard::new().rules_source(source).start()?;
    /// # Ok(()) }
    /// # #[cfg(not(feature = "redis"))] fn main() {}
    /// ```
    pub fn rules_source(mut self, source: impl RuleSource) -> Dashboard {
        self.rules_source = Some(SharedSource::new(source));
        self
    }

    /// Allows binding an address that is not loopback. The dashboard speaks plain HTTP: put
    /// TLS in front of it (a reverse proxy) and keep the token secret. The `Host` check still
    /// applies: add the names clients use with [`allow_host`](Self::allow_host).
    pub fn allow_remote(mut self) -> Dashboard {
        self.allow_remote = true;
        self
    }

    /// Accepts requests whose `Host` header names `host` (with or without a port), besides the
    /// bound address, `localhost`, `127.0.0.1` and `[::1]`.
    pub fn allow_host(mut self, host: impl Into<String>) -> Dashboard {
        self.hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// The most connections open at once (default [`DEFAULT_MAX_CONNECTIONS`], 64): the
    /// dashboard runs inside the service's process and must not use up its file descriptors.
    /// Past the cap, a connection not in a request is closed to make room: first those that
    /// never sent a request with the token (a half-sent request before a silent connection,
    /// the longest waiting first), then the token's own; when every one is in a request or an
    /// event stream, the new connection is closed.
    /// At least 2, and more than [`max_event_streams`](Self::max_event_streams).
    pub fn max_connections(mut self, n: usize) -> Dashboard {
        self.max_connections = n;
        self
    }

    /// The most event streams (`GET /api/events`) open at once (default
    /// [`DEFAULT_MAX_EVENT_STREAMS`], 16); one more gets `503`. Event streams are exempt from
    /// the timeouts (they are busy for as long as they are open) and are never closed to make
    /// room, so they have this cap of their own, below
    /// [`max_connections`](Self::max_connections). At least 1.
    pub fn max_event_streams(mut self, n: usize) -> Dashboard {
        self.max_event_streams = n;
        self
    }

    /// How long a request may take to arrive, from its first byte to the end of its headers,
    /// and a `PUT`'s body after them (default [`DEFAULT_HEADER_TIMEOUT`], 5 s); a connection
    /// past it is closed. Between 1 ms and 10 minutes. A half-sent request is also the first
    /// kind of connection closed to make room past [`max_connections`](Self::max_connections).
    pub fn header_timeout(mut self, timeout: Duration) -> Dashboard {
        self.header_timeout = timeout;
        self
    }

    /// How long a connection may stay open sending nothing, before its first request and
    /// between requests (default [`DEFAULT_IDLE_TIMEOUT`], 20 s); it is closed then. The page
    /// asks every second, so its connections never idle that long. Between 1 ms and 10
    /// minutes.
    pub fn idle_timeout(mut self, timeout: Duration) -> Dashboard {
        self.idle_timeout = timeout;
        self
    }

    /// Checks the limits, naming the setting at fault.
    pub(super) fn check_limits(&self) -> Result<(), DashboardError> {
        let bad = |field, why| Err(DashboardError::Setting { field, why });
        let timeouts = Duration::from_millis(1)..=Duration::from_secs(600);
        if self.rules_file.is_some() && self.rules_source.is_some() {
            return bad(
                "rules_source",
                "cannot be set with rules_file: edits go to one place (a file is a source too)",
            );
        }
        if self.max_event_streams == 0 {
            return bad("max_event_streams", "must be at least 1");
        }
        if self.max_connections < 2 {
            return bad("max_connections", "must be at least 2");
        }
        if self.max_event_streams >= self.max_connections {
            return bad(
                "max_event_streams",
                "must be below max_connections (streams are never closed to make room)",
            );
        }
        if !timeouts.contains(&self.header_timeout) {
            return bad("header_timeout", "must be between 1 ms and 10 minutes");
        }
        if !timeouts.contains(&self.idle_timeout) {
            return bad("idle_timeout", "must be between 1 ms and 10 minutes");
        }
        Ok(())
    }
}
