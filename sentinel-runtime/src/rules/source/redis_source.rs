//! [`RedisSource`]: the rule document kept in Redis (or Redis Cluster) for every instance of a
//! service: one value with a version, written with compare-and-set, each write announced on
//! a channel, and read at a slow poll besides.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{ConnectionLike, RedisError, Value};

use super::document::{parse_text, Document, DocumentFormat, MAX_DOCUMENT_BYTES};
use super::error::SourceError;
use super::listener::Listener;
use super::redis_scripts::{self, SourceKeys};
use super::rule_source::{Changes, Read, RuleSource};
use super::subscribe;
use crate::manager::set::{RuleSetError, Unread};

/// How often a watcher reads the document whatever the channel said, by default.
pub const DEFAULT_POLL: Duration = Duration::from_secs(5);
/// The shortest poll interval accepted.
const MIN_POLL: Duration = Duration::from_millis(10);
/// How long connecting and each call may take.
const TIMEOUT: Duration = Duration::from_secs(1);

/// The rule document kept in Redis for every instance of a service: one string value in the
/// [rule-file format](crate::rules::files) (JSON or YAML, told apart by its first character:
/// see [`DocumentFormat::sniff`]) at a key of your choice, with a version beside it.
///
/// * [`watch_source`](super::watch_source) loads it and every new version: each
///   [`put`](RuleSource::put) is announced on a channel, so every instance applies it at once
///   (after 150 ms of quiet), and the document is read every [`poll_every`](Self::poll_every)
///   (5 s by default) whatever the channel said, for messages missed while a connection was
///   down. While Redis cannot be reached each instance keeps its rules, and its watcher's
///   status says why; a watcher started while Redis is down starts all the same, says so,
///   and loads the document once Redis answers (it reads at least every second meanwhile).
/// * [`put`](RuleSource::put) writes with compare-and-set (a Lua script): a stale
///   `if_version` is a [`SourceError::Conflict`] and nothing is written. The text is checked
///   first (at most [`MAX_DOCUMENT_BYTES`], parsed, every rule valid), so a bad document is
///   never written.
/// * Keys: the document at `key`, its version at `{key}:version`, the channel
///   `{key}:changed`: one Redis Cluster slot. A key holding a hash tag keeps it
///   (`rules:{shop}` gives `rules:{shop}:version`).
/// * Versions only grow: a write's version is above the last one and at least Redis's clock in
///   milliseconds, so a Redis that restarted empty never reuses a version. A document set by
///   hand (`SET`) without a new version is not seen: write through `put`.
///
/// Cloning is cheap; each clone opens its own connections (a watcher its own, `put` one per
/// call).
///
/// ```no_run
/// # #[cfg(feature = "redis")]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use sentinel_runtime::rules::{self, source::RedisSource};
///
/// let source = RedisSource::new("redis://127.0.0.1:6379", "shop:rules")?
///     .poll_every(Duration::from_secs(2));
/// let watcher = rules::watch_source(source.clone())?;
/// let version = source.put("{\"flow\": [{\"resource\": \"checkout\", \"threshold\": 100}]}", Some(0))?;
/// # let _ = (watcher, version);
/// # Ok(()) }
/// # #[cfg(not(feature = "redis"))] fn main() {}
/// ```
pub struct RedisSource {
    shared: Arc<Shared>,
    poll: Duration,
    /// The watcher's connection (opened on first use, dropped after a failure).
    conn: Option<Conn>,
    subscriber: Option<Listener>,
}

/// What every clone shares.
struct Shared {
    client: Client,
    /// The nodes to subscribe on (any one: a Redis Cluster's nodes pass every message on).
    nodes: Vec<redis::Client>,
    keys: SourceKeys,
    origin: String,
}

enum Client {
    One(redis::Client),
    Many(Box<ClusterClient>),
}

enum Conn {
    One(redis::Connection),
    Many(Box<ClusterConnection>),
}

impl Conn {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::One(c) => c,
            Conn::Many(c) => c.as_mut(),
        }
    }
}

impl Clone for RedisSource {
    fn clone(&self) -> RedisSource {
        RedisSource {
            shared: Arc::clone(&self.shared),
            poll: self.poll,
            conn: None,
            subscriber: None,
        }
    }
}

impl fmt::Debug for RedisSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSource")
            .field("origin", &self.shared.origin)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl RedisSource {
    /// The document at `key` on one Redis: `redis://[user:password@]host:port[/db]`. Nothing
    /// is connected yet; a bad URL or key is refused now.
    pub fn new(url: &str, key: &str) -> Result<RedisSource, SourceError> {
        let client = redis::Client::open(url).map_err(|e| url_error(url, &e))?;
        RedisSource::with(Client::One(client.clone()), vec![client], url, key)
    }

    /// The document at `key` on a Redis Cluster, given some of its nodes' URLs (the others are
    /// discovered; MOVED and ASK redirections are followed).
    pub fn cluster<I, S>(urls: I, key: &str) -> Result<RedisSource, SourceError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = urls.into_iter().map(|u| u.as_ref().to_owned()).collect();
        let Some(first) = urls.first() else {
            return Err(SourceError::Config {
                field: "url",
                message: "a Redis Cluster needs at least one node's URL".into(),
            });
        };
        let nodes = urls
            .iter()
            .map(|u| redis::Client::open(u.as_str()).map_err(|e| url_error(u, &e)))
            .collect::<Result<Vec<_>, _>>()?;
        let client = ClusterClient::builder(urls.clone())
            .connection_timeout(TIMEOUT)
            .response_timeout(TIMEOUT)
            .retries(1)
            .build()
            .map_err(|e| url_error(first, &e))?;
        RedisSource::with(Client::Many(Box::new(client)), nodes, first, key)
    }

    fn with(
        client: Client,
        nodes: Vec<redis::Client>,
        url: &str,
        key: &str,
    ) -> Result<RedisSource, SourceError> {
        let bad_key = |message: &str| SourceError::Config {
            field: "key",
            message: message.to_owned(),
        };
        if key.trim().is_empty() {
            return Err(bad_key("the key must not be blank"));
        }
        if key.len() > 512 {
            return Err(bad_key("the key is longer than 512 bytes"));
        }
        let keys = SourceKeys::of(key).ok_or_else(|| {
            bad_key(
                "a key with `{` or `}` must hold a Redis Cluster hash tag (`{tag}`, something \
                 inside), so its version and channel can share its slot",
            )
        })?;
        Ok(RedisSource {
            shared: Arc::new(Shared {
                client,
                nodes,
                origin: format!("{} (key {key})", hide_password(url)),
                keys,
            }),
            poll: DEFAULT_POLL,
            conn: None,
            subscriber: None,
        })
    }

    /// Reads the document every `every` whatever the channel said (default [`DEFAULT_POLL`]; at
    /// least 10 ms): how late a change missed on the channel is applied.
    pub fn poll_every(mut self, every: Duration) -> RedisSource {
        self.poll = every.max(MIN_POLL);
        self
    }

    /// The Redis keys: the document's, its version's, and the channel's name (for tools and
    /// checks; write through [`put`](RuleSource::put)).
    pub fn keys(&self) -> (&str, &str, &str) {
        let keys = &self.shared.keys;
        (&keys.document, &keys.version, &keys.channel)
    }

    /// The document now and its version (`None`: there is none), for an editor that will
    /// [`put`](RuleSource::put) on top of it.
    pub fn get(&self) -> Result<Option<Document>, SourceError> {
        let mut conn = self.connect().map_err(unavailable)?;
        match fetch(&mut conn, &self.shared.keys, None).map_err(unavailable)? {
            Fetched::Missing | Fetched::Unchanged => Ok(None),
            Fetched::TooLarge { version, len } => Err(SourceError::Invalid(
                self.in_source(RuleSetError::whole(too_large(version, len))),
            )),
            Fetched::Document(doc) => Ok(Some(doc)),
        }
    }

    /// Replaces the document with `text` if its version is still `if_version` (`Some(0)`: no
    /// document yet; `None`: whatever it is), and returns the new version; every watcher of
    /// the key is told. The text is checked first (at most [`MAX_DOCUMENT_BYTES`], parsed,
    /// every rule valid): a bad document is [`SourceError::Invalid`] with each problem's field
    /// and line, a stale version [`SourceError::Conflict`], and nothing is written. The same
    /// as [`RuleSource::put`].
    pub fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(SourceError::Invalid(self.in_source(RuleSetError::whole(
                format!(
                    "the document is {} bytes, over the limit of {MAX_DOCUMENT_BYTES}",
                    text.len()
                ),
            ))));
        }
        parse_text(text, DocumentFormat::sniff(text.as_bytes()))
            .map_err(|e| SourceError::Invalid(self.in_source(e)))?;
        let mut conn = self.connect().map_err(unavailable)?;
        let keys = &self.shared.keys;
        let expected = if_version.map_or_else(String::new, |v| v.to_string());
        let answer: Vec<Value> = redis_scripts::put()
            .key(&keys.document)
            .key(&keys.version)
            .arg(text)
            .arg(expected)
            .arg(&keys.channel)
            .invoke(conn.as_dyn())
            .map_err(unavailable)?;
        match answer.as_slice() {
            [Value::Int(1), Value::Int(new)] => Ok(*new as u64),
            [Value::Int(0), Value::Int(current)] => Err(SourceError::Conflict {
                expected: if_version.unwrap_or(0),
                current: *current as u64,
            }),
            other => Err(SourceError::Unavailable {
                message: format!("unexpected answer from the write script: {other:?}"),
            }),
        }
    }

    fn connect(&self) -> Result<Conn, RedisError> {
        match &self.shared.client {
            Client::One(client) => {
                let conn = client.get_connection_with_timeout(TIMEOUT)?;
                conn.set_read_timeout(Some(TIMEOUT))?;
                conn.set_write_timeout(Some(TIMEOUT))?;
                Ok(Conn::One(conn))
            }
            Client::Many(client) => Ok(Conn::Many(Box::new(client.get_connection()?))),
        }
    }

    fn in_source(&self, e: RuleSetError) -> RuleSetError {
        e.in_file(self.shared.origin.as_ref())
    }

    fn fetch(&mut self, seen: Option<u64>) -> Result<Fetched, RedisError> {
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let fetched = fetch(&mut conn, &self.shared.keys, seen)?;
        self.conn = Some(conn);
        Ok(fetched)
    }
}

impl RuleSource for RedisSource {
    fn origin(&self) -> PathBuf {
        PathBuf::from(&self.shared.origin)
    }

    fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError> {
        let subscriber = subscribe::start(
            self.shared.nodes.clone(),
            self.shared.keys.channel.clone(),
            TIMEOUT,
            changes,
        )
        .map_err(|e| {
            self.in_source(RuleSetError::whole(format!(
                "cannot start the thread that listens for changes: {e}"
            )))
        })?;
        self.subscriber = Some(subscriber);
        Ok(())
    }

    fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
        match self.fetch(seen) {
            Ok(Fetched::Missing) => Ok(Read::Missing),
            Ok(Fetched::Unchanged) => Ok(Read::Unchanged),
            Ok(Fetched::Document(doc)) => Ok(Read::Document(doc)),
            Ok(Fetched::TooLarge { version, len }) => {
                Err(self.in_source(RuleSetError::whole(format!(
                    "{}; the last good rules stay in force",
                    too_large(version, len)
                ))))
            }
            Err(e) => {
                // Said apart from a bad document: the store is away, the rules were not read.
                let then = if seen.is_some() {
                    "the last good rules stay in force"
                } else {
                    "no rules are loaded from it until it answers"
                };
                // An answer that is an error (Redis still loading its data, a cluster
                // without a master, a key of another type) is as passing: read again.
                let what = if e.is_io_error()
                    || e.is_connection_refusal()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                {
                    "Redis is unreachable"
                } else {
                    "Redis refused the read"
                };
                Err(self.in_source(RuleSetError::unread(
                    Unread::Unreachable,
                    format!("{what} ({e}); {then}"),
                )))
            }
        }
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(self.poll)
    }

    fn polling(&self) -> bool {
        !self.subscriber.as_ref().is_some_and(Listener::live)
    }

    fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
        RedisSource::put(self, text, if_version)
    }
}

/// What the read script found.
enum Fetched {
    Missing,
    Unchanged,
    TooLarge { version: u64, len: u64 },
    Document(Document),
}

fn fetch(conn: &mut Conn, keys: &SourceKeys, seen: Option<u64>) -> Result<Fetched, RedisError> {
    let known = seen.map_or_else(String::new, |v| v.to_string());
    let answer: Vec<Value> = redis_scripts::read()
        .key(&keys.document)
        .key(&keys.version)
        .arg(known)
        .arg(MAX_DOCUMENT_BYTES)
        .invoke(conn.as_dyn())?;
    let int = |v: &Value| match v {
        Value::Int(n) => Some(*n as u64),
        _ => None,
    };
    Ok(match answer.as_slice() {
        [Value::Int(0)] => Fetched::Missing,
        [Value::Int(1), _] => Fetched::Unchanged,
        [Value::Int(2), v, n] => Fetched::TooLarge {
            version: int(v).unwrap_or(0),
            len: int(n).unwrap_or(0),
        },
        [Value::Int(3), v, Value::BulkString(bytes)] => {
            let format = DocumentFormat::sniff(bytes);
            Fetched::Document(Document::new(bytes.clone(), int(v).unwrap_or(0), format))
        }
        other => {
            return Err(RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "unexpected answer from the read script",
                format!("{other:?}"),
            )))
        }
    })
}

fn too_large(version: u64, len: u64) -> String {
    format!(
        "the document (version {version}) is {len} bytes, over the limit of {MAX_DOCUMENT_BYTES}"
    )
}

fn unavailable(e: RedisError) -> SourceError {
    SourceError::Unavailable {
        message: format!("Redis: {e}"),
    }
}

fn url_error(url: &str, e: &RedisError) -> SourceError {
    SourceError::Config {
        field: "url",
        message: format!("{}: {e}", hide_password(url)),
    }
}

/// `url` with its password (if any) replaced by `***`.
fn hide_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}
