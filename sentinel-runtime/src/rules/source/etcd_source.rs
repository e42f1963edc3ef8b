//! [`EtcdSource`]: the rule document kept at one key in etcd for every instance of a service:
//! its version the key's mod revision, written by compare-and-swap on it, each change
//! followed with etcd's watch API, and read at a slow poll besides.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::document::{parse_text, Document, DocumentFormat, MAX_DOCUMENT_BYTES};
use super::error::SourceError;
use super::etcd_api::{self, Found, Written};
use super::etcd_http::Endpoint;
use super::etcd_watch;
use super::listener::Listener;
use super::rule_source::{Changes, Read, RuleSource};
use crate::manager::set::RuleSetError;

/// The shortest poll interval accepted.
const MIN_POLL: Duration = Duration::from_millis(10);
/// How long connecting, sending and each read of an answer may take.
const TIMEOUT: Duration = Duration::from_secs(2);
/// The largest answer read: a document of [`MAX_DOCUMENT_BYTES`] in base64 and JSON, with room
/// (etcd's own limit on a request is 1.5 MiB by default).
const MAX_ANSWER: usize = 4 * MAX_DOCUMENT_BYTES;

/// The rule document kept in etcd (v3) for every instance of a service: the value of one key,
/// in the [rule-file format](crate::rules::files) (JSON or YAML, told apart by its first
/// character: see [`DocumentFormat::sniff`]).
///
/// * Its version is the key's **mod revision** (etcd's revision of the key's last change):
///   every change has a higher one, also across restarts of etcd on its data. The dashboard
///   shows it as the `ETag` `"v<mod_revision>"`.
/// * [`watch_source`](super::watch_source) loads it and every new version: a watch of the key
///   (etcd's watch API) tells every instance of each change at once, whoever made it
///   (`etcdctl put`, [`put`](RuleSource::put), another tool), and the key is read every
///   [`poll_every`](Self::poll_every) (5 s by default) whatever the watch said. While etcd
///   cannot be reached each instance keeps its rules, its watcher's status says why, and the
///   watch is made again (at most a second apart) until etcd answers.
/// * [`put`](RuleSource::put) writes by compare-and-swap on the mod revision (an etcd
///   transaction): a stale `if_version` is a [`SourceError::Conflict`], and nothing is written.
///   The text is checked first (at most [`MAX_DOCUMENT_BYTES`], parsed, every rule valid), so
///   a bad document is never written through it.
/// * It speaks etcd's JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/watch`, served on the
///   client port by default) over plain HTTP/1.1: `http://host:port` endpoints only, no TLS and
///   no etcd user (keep the client port on loopback or a private network). Calls block the
///   calling thread (connecting, sending and each read of the answer at most 2 s); given
///   several endpoints of one cluster, each call tries them in turn.
///
/// Cloning is cheap; each clone opens its own connections (a watcher its own watch, each call
/// one connection).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use sentinel_runtime::rules::{self, source::EtcdSource};
///
/// let source = EtcdSource::new(&["http://127.0.0.1:2379"], "/sentinel/shop/rules")?;
/// let watcher = rules::watch_source(source.clone())?;
/// let version = source.put("{\"flow\": [{\"resource\": \"checkout\", \"threshold\": 100}]}", Some(0))?;
/// # let _ = (watcher, version);
/// # Ok(()) }
/// ```
pub struct EtcdSource {
    shared: Arc<Shared>,
    poll: Duration,
    watch: Option<Listener>,
}

/// What every clone shares.
struct Shared {
    endpoints: Vec<Endpoint>,
    /// The endpoint that answered last: calls start there.
    preferred: AtomicUsize,
    key: String,
    origin: String,
}

impl Clone for EtcdSource {
    fn clone(&self) -> EtcdSource {
        EtcdSource {
            shared: Arc::clone(&self.shared),
            poll: self.poll,
            watch: None,
        }
    }
}

impl fmt::Debug for EtcdSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdSource")
            .field("origin", &self.shared.origin)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

/// Why a call to etcd failed.
enum CallError {
    /// No endpoint answered.
    Unreachable(String),
    /// etcd answered, but not as asked.
    Refused(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Unreachable(why) => write!(f, "etcd is unreachable ({why})"),
            CallError::Refused(why) => write!(f, "etcd refused the call ({why})"),
        }
    }
}

impl EtcdSource {
    /// How often a watcher reads the document whatever the watch said, by default.
    pub const DEFAULT_POLL: Duration = Duration::from_secs(5);

    /// The document at `key` in the etcd cluster at `endpoints` (`http://host:port`, one or
    /// more of one cluster's client URLs). Nothing is connected yet; a bad endpoint
    /// ([`SourceError::Config`] with field `url`) or key (field `key`) is refused now.
    pub fn new<I, S>(endpoints: I, key: &str) -> Result<EtcdSource, SourceError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let endpoints = endpoints
            .into_iter()
            .map(|url| Endpoint::parse(url.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|message| SourceError::Config {
                field: "url",
                message,
            })?;
        let Some(first) = endpoints.first() else {
            return Err(SourceError::Config {
                field: "url",
                message: "etcd needs at least one endpoint (http://host:port)".into(),
            });
        };
        if key.trim().is_empty() {
            return Err(SourceError::Config {
                field: "key",
                message: "the key must not be blank".into(),
            });
        }
        let origin = format!("etcd {} (key {key})", first.url);
        Ok(EtcdSource {
            shared: Arc::new(Shared {
                endpoints,
                preferred: AtomicUsize::new(0),
                key: key.to_owned(),
                origin,
            }),
            poll: Self::DEFAULT_POLL,
            watch: None,
        })
    }

    /// Reads the document every `every` whatever the watch said (default
    /// [`DEFAULT_POLL`](Self::DEFAULT_POLL); at least 10 ms): how late a change the watch
    /// missed is applied.
    pub fn poll_every(mut self, every: Duration) -> EtcdSource {
        self.poll = every.max(MIN_POLL);
        self
    }

    /// The key the document is kept at.
    pub fn key(&self) -> &str {
        &self.shared.key
    }

    /// The document now and its version (its key's mod revision; `None`: there is none), for
    /// an editor that will [`put`](RuleSource::put) on top of it.
    pub fn get(&self) -> Result<Option<Document>, SourceError> {
        match self.fetch(None).map_err(unavailable)? {
            Found::Missing | Found::Unchanged => Ok(None),
            Found::Kv(kv) => document(kv)
                .map(Some)
                .map_err(|e| SourceError::Invalid(self.in_source(RuleSetError::whole(e)))),
        }
    }

    /// Replaces the document with `text` if its version (the key's mod revision) is still
    /// `if_version` (`Some(0)`: no document yet; `None`: whatever it is), and returns the new
    /// version; every watcher of the key is told. The text is checked first (at most
    /// [`MAX_DOCUMENT_BYTES`], parsed, every rule valid): a bad document is
    /// [`SourceError::Invalid`] with each problem's field and line, a stale version
    /// [`SourceError::Conflict`], and nothing is written. The same as [`RuleSource::put`].
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
        let body = etcd_api::put_request(self.shared.key.as_bytes(), text.as_bytes(), if_version);
        let answer = self.call(etcd_api::TXN, &body).map_err(unavailable)?;
        match etcd_api::put_answer(&answer).map_err(|e| unavailable(CallError::Refused(e)))? {
            Written::Done(version) => Ok(version),
            Written::Stale(current) => Err(SourceError::Conflict {
                expected: if_version.unwrap_or(0),
                current,
            }),
        }
    }

    fn in_source(&self, e: RuleSetError) -> RuleSetError {
        e.in_file(self.shared.origin.as_ref())
    }

    fn fetch(&self, seen: Option<u64>) -> Result<Found, CallError> {
        let (path, body) = etcd_api::read_request(self.shared.key.as_bytes(), seen);
        let answer = self.call(path, &body)?;
        etcd_api::read_answer(seen, &answer).map_err(CallError::Refused)
    }

    /// `POST path` with `body` to each endpoint in turn, from the one that answered last,
    /// until one answers: its answer's body.
    fn call(&self, path: &str, body: &Value) -> Result<Vec<u8>, CallError> {
        let body = body.to_string().into_bytes();
        let endpoints = &self.shared.endpoints;
        let first = self.shared.preferred.load(Ordering::Relaxed);
        let mut failures = Vec::new();
        for i in (0..endpoints.len()).map(|i| (first + i) % endpoints.len()) {
            let endpoint = &endpoints[i];
            match endpoint.post(path, &body, TIMEOUT, MAX_ANSWER) {
                Ok((200, answer)) => {
                    self.shared.preferred.store(i, Ordering::Relaxed);
                    return Ok(answer);
                }
                Ok((status, answer)) => {
                    return Err(CallError::Refused(format!(
                        "{}: {}",
                        endpoint.url,
                        etcd_api::refusal(status, &answer)
                    )))
                }
                Err(e) => failures.push(format!("{}: {e}", endpoint.url)),
            }
        }
        Err(CallError::Unreachable(failures.join("; ")))
    }
}

impl RuleSource for EtcdSource {
    fn origin(&self) -> PathBuf {
        PathBuf::from(&self.shared.origin)
    }

    fn watch(&mut self, changes: Changes) -> Result<(), RuleSetError> {
        let watch = etcd_watch::start(
            self.shared.endpoints.clone(),
            self.shared.key.clone().into_bytes(),
            TIMEOUT,
            changes,
        )
        .map_err(|e| {
            self.in_source(RuleSetError::whole(format!(
                "cannot start the thread that watches for changes: {e}"
            )))
        })?;
        self.watch = Some(watch);
        Ok(())
    }

    fn read(&mut self, seen: Option<u64>) -> Result<Read, RuleSetError> {
        match self.fetch(seen) {
            Ok(Found::Missing) => Ok(Read::Missing),
            Ok(Found::Unchanged) => Ok(Read::Unchanged),
            Ok(Found::Kv(kv)) => match document(kv) {
                Ok(doc) => Ok(Read::Document(doc)),
                Err(e) => Err(self.in_source(RuleSetError::whole(format!(
                    "{e}; the last good rules stay in force"
                )))),
            },
            Err(e) => Err(self.in_source(RuleSetError::whole(format!(
                "{e}; the last good rules stay in force"
            )))),
        }
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(self.poll)
    }

    fn polling(&self) -> bool {
        !self.watch.as_ref().is_some_and(Listener::live)
    }

    fn put(&self, text: &str, if_version: Option<u64>) -> Result<u64, SourceError> {
        EtcdSource::put(self, text, if_version)
    }
}

/// A key's value as a document: refused if it is over [`MAX_DOCUMENT_BYTES`].
fn document(kv: etcd_api::Kv) -> Result<Document, String> {
    if kv.value.len() > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "the document (version {}) is {} bytes, over the limit of {MAX_DOCUMENT_BYTES}",
            kv.mod_revision,
            kv.value.len()
        ));
    }
    let format = DocumentFormat::sniff(&kv.value);
    Ok(Document::new(kv.value, kv.mod_revision, format))
}

fn unavailable(e: CallError) -> SourceError {
    SourceError::Unavailable {
        message: e.to_string(),
    }
}
