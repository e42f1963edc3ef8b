//! A live dashboard served by the process itself (feature `dashboard`): every resource's
//! traffic, circuit breakers and rules on one page, on loopback, behind a token.
//!
//! ```no_run
//! use sentinel_runtime::dashboard::Dashboard;
//!
//! let dash = Dashboard::new()                 // defaults: 127.0.0.1:8719, a random 256-bit token
//!     .bind("127.0.0.1:0".parse()?)           // any free loopback port
//!     .rules_file("rules.yaml")               // rule edits are saved there (write + rename)
//!     .start()?;
//! println!("dashboard: {}", dash.url());      // http://127.0.0.1:PORT/?token=...
//! // ... the process runs; dropping the handle stops the server.
//! drop(dash);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Dashboard::start`] works inside a tokio runtime (the server is a task of that runtime) or
//! outside one (the server runs on a thread of its own with a current-thread runtime).
//!
//! # The page
//!
//! `GET /` serves one HTML page with its script and [uPlot](https://github.com/leeoniya/uPlot)
//! (MIT, vendored: the npm package's minified build), all embedded in the binary: no CDN, no
//! outbound request of any kind. It lists every resource (the 200 busiest when there are more)
//! with pass/s, block/s, errors/s, average response time, concurrency and its limit, and the
//! circuit breaker's state; a chart of the selected resource's last 5 minutes; system
//! protection (CPU, load, inbound traffic against the system rules); the events as they
//! happen; and an editor of the rules in force.
//!
//! # The HTTP API
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/resources` | JSON array, one object per resource (the 200 busiest): `resource`, `pass_qps`, `block_qps`, `error_qps`, `avg_rt_ms`, `concurrency`, `concurrency_limit`, `breaker` (`"closed"`, `"open"`, `"half_open"` or `null`), `pass_total`, `block_total`, `error_total`, `complete_total`, `block_total_by_rule` |
//! | `GET /api/resources/{name}/history` | the last 300 seconds, one point a second: `second`, `pass`, `block`, `error`, `avg_rt_ms` |
//! | `GET /api/system` | CPU usage, load per core, inbound statistics, the system rules, breaker transitions since start (`breaker_transitions`) and the latest 20 (`last_transitions`), and each hotspot rule's most blocked values in the last minute (`hotspot`: see below) |
//! | `GET /api/rules` | the rules in force in the rule-file JSON format ([`rules::files`](crate::rules::files)), with an `ETag` |
//! | `PUT /api/rules` | a rule set (rule-file JSON; YAML with `Content-Type: application/yaml`) with `If-Match: <ETag>`: `200` applied (and saved to the rules file), `422` refused with each bad field (nothing applied), `409` the ETag is stale, `428` no `If-Match` |
//! | `GET /api/events` | server-sent events: `blocks` (per second, by resource and rule kind), `breaker` (every transition), `rule_load` (loads and refusals, by kind), `rules_saved` / `rules_refused` (edits made here) |
//!
//! History is kept for the 200 busiest resources, 300 points of one second each, in a bounded
//! ring per resource; a resource that leaves the 200 loses its ring (its last minute is still
//! read from its own statistics). Prometheus remains the long-term store.
//!
//! # Access
//!
//! * **Every path needs the token**: `Authorization: Bearer <token>`, an `X-Sentinel-Token`
//!   header, or the page's cookie. Opening `/?token=<token>` sets the cookie (`HttpOnly`,
//!   `SameSite=Strict`) and redirects to `/`, so the token leaves the address bar. Without it:
//!   `401`.
//! * **Changes need the token in a header** (`Authorization` or `X-Sentinel-Token`): a cookie
//!   alone gets `403` (a forged cross-site request carries the cookie, never a header). Only
//!   `PUT` changes anything; a `GET` never does.
//! * **DNS rebinding**: a `Host` header other than the bound address, `localhost`,
//!   `127.0.0.1` or `[::1]` (with the bound port), or a host added with
//!   [`Dashboard::allow_host`] (any port), gets `403`.
//! * Unknown paths `404`, known paths with another method `405`.
//! * Every answer has `Content-Security-Policy: default-src 'self'`, `X-Content-Type-Options:
//!   nosniff`, `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`; the API and the page
//!   have `Cache-Control: no-store`.
//! * It binds loopback only, unless [`Dashboard::allow_remote`] is called: the dashboard speaks
//!   plain HTTP, so put TLS in front of it (a reverse proxy) before exposing it.
//!
//! # Cost
//!
//! A sampler reads every resource's statistics once a second (on the server's runtime, never
//! on the call path): the guarded call costs the same with the dashboard on. Memory is bounded
//! by the number of tracked resources (200 rings of 300 points, about 12 KB each), whatever
//! the number of resources. `benches/dashboard_cost.rs` measures both.
//!
//! # Hotspot rules' most blocked values
//!
//! Each hotspot rule keeps the values it blocked most, in two summaries of at most 16 values
//! (the current clock minute's and the previous one's; space-saving: exact while a minute sees
//! at most 16 distinct blocked values, else an upper bound with its `error`), written only when
//! a call is blocked (never on an admitted call, and never waiting: a block that finds the
//! summary busy is counted in `missed` instead). `GET /api/system`'s `hotspot` lists, per rule,
//! `resource`, `param_index`, `threshold`, `missed` and `top_blocked`: `[{ value, value_hash,
//! blocked, error }]`, most blocked first. The call path keeps only values' hashes, so `value`
//! is the text where it is known: a value the rule lists as an exception with a text, or a value
//! the tower layer supplied (a client's address, a custom parameter's string), whose text the
//! layer hands over when it blocks a request (a bounded table of at most 4 096 texts); otherwise
//! it is null and `value_hash` (16 hex digits) identifies it (values given in code by
//! `EntryBuilder::param` are typed, not text).
//!
//! A hotspot exception is shown with its value's text where the text is known (rule files,
//! [`HotspotRule::exception_str`](crate::rules::HotspotRule::exception_str)); one given in code
//! only by its hash ([`HotspotRule::exception`](crate::rules::HotspotRule::exception)) is shown
//! as `{ "value_hash": "<16 hex digits>", "hash_key": "<8 hex digits>", "threshold": .. }`,
//! which a `PUT` to the same process reads back unchanged; a `hash_key` of another process
//! (the hash key is drawn at random per process) gets a `422` naming `value_hash`.

mod api;
mod auth;
mod events;
mod history;
mod page;
mod rules_api;
mod server;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// The default address: Sentinel's dashboard port, on loopback.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8719);

/// The dashboard's settings; [`start`](Dashboard::start) serves it.
///
/// ```no_run
/// use sentinel_runtime::dashboard::Dashboard;
/// let dash = Dashboard::new().bind("127.0.0.1:0".parse()?).token("my-own-token").start()?;
/// assert!(dash.url().ends_with("/?token=my-own-token"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Dashboard {
    addr: SocketAddr,
    token: Option<String>,
    rules_file: Option<PathBuf>,
    allow_remote: bool,
    hosts: Vec<String>,
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
            allow_remote: false,
            hosts: Vec::new(),
        }
    }

    /// The address to listen on (port 0: any free port, see [`DashboardHandle::local_addr`]).
    /// It must be a loopback address unless [`allow_remote`](Self::allow_remote) is called.
    pub fn bind(mut self, addr: SocketAddr) -> Dashboard {
        self.addr = addr;
        self
    }

    /// The token instead of a random one: 16 to 256 characters among `A-Z a-z 0-9 - . _ ~`
    /// (it travels in a URL, a cookie and a header). [`start`](Self::start) refuses others.
    pub fn token(mut self, token: impl Into<String>) -> Dashboard {
        self.token = Some(token.into());
        self
    }

    /// Where rule edits made on the page are saved (atomically: a temporary file in the same
    /// directory, then a rename), in the format its extension names (`.yaml`/`.yml`, `.toml`,
    /// else JSON), so that they survive a restart. Without it, edits apply to the running
    /// process only.
    pub fn rules_file(mut self, path: impl Into<PathBuf>) -> Dashboard {
        self.rules_file = Some(path.into());
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

    /// Binds the address and starts serving: on the current tokio runtime if called inside
    /// one, else on a thread of its own. Fails if the address is not loopback (without
    /// [`allow_remote`](Self::allow_remote)), cannot be bound, or the token is unfit.
    pub fn start(self) -> Result<DashboardHandle, DashboardError> {
        server::start(self)
    }
}

/// A running dashboard; dropping it stops the server (and ends its event streams).
#[must_use = "the dashboard stops when its handle is dropped"]
pub struct DashboardHandle {
    addr: SocketAddr,
    token: String,
    stop: Option<server::Stop>,
}

impl DashboardHandle {
    /// The address to open, with the token: `http://127.0.0.1:PORT/?token=...`. Opening it
    /// sets the page's cookie and redirects to `/`.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
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

/// Why a dashboard could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum DashboardError {
    /// The address is not loopback and [`Dashboard::allow_remote`] was not called.
    NotLoopback(SocketAddr),
    /// The token given to [`Dashboard::token`] is unfit (the reason).
    Token(&'static str),
    /// No random token could be made (no `/dev/urandom`): give one with [`Dashboard::token`].
    Random(std::io::Error),
    /// The address could not be bound.
    Bind(SocketAddr, std::io::Error),
    /// The server's thread or runtime could not be started.
    Runtime(std::io::Error),
}

impl fmt::Display for DashboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DashboardError::NotLoopback(addr) => write!(
                f,
                "dashboard: {addr} is not a loopback address; call allow_remote() to bind it \
                 (and put TLS in front)"
            ),
            DashboardError::Token(why) => write!(f, "dashboard: bad token: {why}"),
            DashboardError::Random(e) => {
                write!(
                    f,
                    "dashboard: no random source for a token ({e}); set token()"
                )
            }
            DashboardError::Bind(addr, e) => write!(f, "dashboard: cannot bind {addr}: {e}"),
            DashboardError::Runtime(e) => write!(f, "dashboard: cannot start the server: {e}"),
        }
    }
}

impl std::error::Error for DashboardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DashboardError::Random(e) | DashboardError::Bind(_, e) | DashboardError::Runtime(e) => {
                Some(e)
            }
            _ => None,
        }
    }
}
