//! [`Cluster`] and [`ClusterBuilder`]: starting and stopping the background work that keeps
//! the leases of cluster rules, against Redis or Redis Cluster.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::background;
use super::config::Config;
use super::connect;
use super::error::ClusterError;
use super::fleet_task;
use super::keys::Keys;
use std::sync::atomic::Ordering::Relaxed;

use super::status::{ClusterDegraded, ClusterRefusals, ClusterState, ClusterStatus};
use crate::slot::cluster::health;
use crate::slot::cluster::shared::{self, MODE_CONNECTED, MODE_NONE};

/// The cluster started in this process, described (one at a time).
static RUNNING: Mutex<Option<String>> = Mutex::new(None);

/// The settings of a [`Cluster`] to start: from [`Cluster::redis`] or [`Cluster::redis_cluster`].
#[derive(Clone, Debug)]
#[must_use = "a cluster does nothing until `start` is called"]
pub struct ClusterBuilder {
    urls: Vec<String>,
    cluster_mode: bool,
    namespace: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    lease_wait: Duration,
    instance_name: Option<String>,
}

/// Limits shared by every instance of a service through Redis (see the [module docs](super)).
/// One per process at a time; dropping it stops the background work, and cluster rules are
/// local rules again.
#[derive(Debug)]
pub struct Cluster {
    stop: Arc<tokio::sync::Notify>,
    thread: Option<JoinHandle<()>>,
    namespace: String,
    instance_id: String,
}

impl Cluster {
    /// A cluster on one Redis (or a Redis behind a proxy): `redis://[user:password@]host:port[/db]`.
    pub fn redis(url: impl Into<String>) -> ClusterBuilder {
        ClusterBuilder::new(vec![url.into()], false)
    }

    /// A cluster on a Redis Cluster, given some of its nodes' URLs (the others are discovered;
    /// MOVED and ASK redirections are followed).
    pub fn redis_cluster<I, S>(urls: I) -> ClusterBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClusterBuilder::new(urls.into_iter().map(Into::into).collect(), true)
    }

    /// The cluster's state now: connected or limiting locally, the instances live, the last
    /// error.
    pub fn status(&self) -> ClusterStatus {
        ClusterStatus {
            state: if shared::mode() == MODE_CONNECTED {
                ClusterState::Connected
            } else {
                ClusterState::Fallback
            },
            instances: shared::instances() as usize,
            last_error: shared::last_error(),
            namespace: self.namespace.clone(),
            instance_id: self.instance_id.clone(),
            degraded: degraded(),
            eviction_policy: health::policy(),
            held_back: health::HELD_BACK.load(Relaxed) as usize,
            refusals: ClusterRefusals::so_far(),
        }
    }
}

/// What degrades the shared limits now.
fn degraded() -> Vec<ClusterDegraded> {
    let mut found = Vec::new();
    if health::is_state_lost() {
        found.push(ClusterDegraded::StateLost);
    }
    if health::KEYS_EVICTABLE.load(Relaxed) {
        found.push(ClusterDegraded::KeysEvictable);
    }
    if health::VALUE_KEY_SPLIT.load(Relaxed) {
        found.push(ClusterDegraded::ValueKeySplit);
    }
    if health::do_rules_disagree() {
        found.push(ClusterDegraded::RulesDisagree);
    }
    found
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        shared::set_mode(MODE_NONE);
        shared::set_instances(1);
        shared::set_sharing(1, 1);
        health::reset();
        background::announce_stop(&self.namespace);
        *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl ClusterBuilder {
    fn new(urls: Vec<String>, cluster_mode: bool) -> ClusterBuilder {
        ClusterBuilder {
            urls,
            cluster_mode,
            namespace: "sentinel".to_owned(),
            command_timeout: Duration::from_millis(20),
            connect_timeout: Duration::from_secs(1),
            lease_wait: Duration::from_millis(2),
            instance_name: None,
        }
    }

    /// The prefix of this cluster's Redis keys (default `sentinel`): instances share limits only
    /// within one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> ClusterBuilder {
        self.namespace = namespace.into();
        self
    }

    /// How long a Redis command may take before Redis counts as failed (default 20 ms).
    pub fn command_timeout(mut self, timeout: Duration) -> ClusterBuilder {
        self.command_timeout = timeout;
        self
    }

    /// How long connecting may take (default 1 s): `start` returns an error after at most about
    /// this long when Redis is not there.
    pub fn connect_timeout(mut self, timeout: Duration) -> ClusterBuilder {
        self.connect_timeout = timeout;
        self
    }

    /// Kept for compatibility (at most 1 s, default 2 ms): calls no longer wait for the
    /// network. A key without a lease yet (a new hotspot value, a rule just connected) is
    /// admitted against its local share until its lease arrives; a dry lease blocks at once,
    /// and its refill is on its way.
    pub fn lease_wait(mut self, wait: Duration) -> ClusterBuilder {
        self.lease_wait = wait;
        self
    }

    /// The name this instance has in the fleet's view ([`fleet`](super::fleet) and the
    /// dashboard's fleet panel), such as `checkout-a`: at most
    /// [`MAX_TEXT_BYTES`](super::MAX_TEXT_BYTES) bytes, no control characters (bidi controls
    /// included). By default
    /// `<host>-<pid>`, the host from the environment's `HOSTNAME` (Kubernetes sets it to the
    /// pod's name), else the kernel's host name.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), sentinel_runtime::cluster::ClusterError> {
    /// use sentinel_runtime::cluster::Cluster;
    ///
    /// let cluster = Cluster::redis("redis://127.0.0.1:6379")
    ///     .namespace("shop")
    ///     .instance_name("checkout-a")
    ///     .start()?;
    /// # Ok(()) }
    /// ```
    pub fn instance_name(mut self, name: impl Into<String>) -> ClusterBuilder {
        self.instance_name = Some(name.into());
        self
    }

    fn check(&self) -> Result<(), ClusterError> {
        let setting = |field, message: &str| {
            Err(ClusterError::Setting {
                field,
                message: message.to_owned(),
            })
        };
        if self.urls.is_empty() {
            return setting("urls", "must name at least one Redis");
        }
        if self.namespace.is_empty() || self.namespace.contains(['{', '}']) {
            return setting("namespace", "must be non-empty, without `{` or `}`");
        }
        if self.command_timeout.is_zero() || self.command_timeout > Duration::from_secs(10) {
            return setting("command_timeout", "must be more than 0 and at most 10 s");
        }
        if self.connect_timeout.is_zero() || self.connect_timeout > Duration::from_secs(60) {
            return setting("connect_timeout", "must be more than 0 and at most 60 s");
        }
        if self.lease_wait > Duration::from_secs(1) {
            return setting("lease_wait", "must be at most 1 s");
        }
        if let Some(name) = &self.instance_name
            && (name.is_empty()
                || name.len() > super::MAX_TEXT_BYTES
                || name.chars().any(|c| {
                    // Control characters, and the bidi controls that reorder text.
                    c.is_control()
                        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}')
                        || ('\u{202A}'..='\u{202E}').contains(&c)
                        || ('\u{2066}'..='\u{2069}').contains(&c)
                }))
        {
            return setting(
                "instance_name",
                "must be non-empty, at most 200 bytes, without control or bidi control characters",
            );
        }
        Ok(())
    }

    /// Connects, checks that Redis runs scripts, registers this instance and starts the
    /// background work on a thread of its own (with its own tokio runtime: works inside or
    /// outside a runtime). Returns within about the connect timeout. On an error no cluster is
    /// started and cluster rules limit locally.
    pub fn start(self) -> Result<Cluster, ClusterError> {
        self.check()?;
        let described = format!(
            "{} (namespace `{}`)",
            connect::hide_passwords(&self.urls),
            self.namespace
        );
        {
            let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(first) = running.as_ref() {
                return Err(ClusterError::AlreadyStarted {
                    first: first.clone(),
                });
            }
            *running = Some(described);
        }
        let result = self.spawn();
        if result.is_err() {
            *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
        result
    }

    fn spawn(self) -> Result<Cluster, ClusterError> {
        let config = Arc::new(Config {
            urls: self.urls,
            cluster_mode: self.cluster_mode,
            namespace: self.namespace.clone(),
            instance_id: connect::instance_id(),
            instance_name: self
                .instance_name
                .unwrap_or_else(|| format!("{}-{}", fleet_task::host(), std::process::id())),
            command_timeout: self.command_timeout,
            connect_timeout: self.connect_timeout,
            keys: Keys::new(&self.namespace, self.cluster_mode),
            epochs: Config::no_epochs(),
        });
        let stop = Arc::new(tokio::sync::Notify::new());
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let thread = {
            let config = Arc::clone(&config);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("sentinel-cluster".into())
                .spawn(move || background::thread_main(config, stop, started_tx))
                .map_err(|e| ClusterError::Thread {
                    message: e.to_string(),
                })?
        };
        // The thread answers within the connect timeout plus a script load and a heartbeat.
        let limit = self.connect_timeout + self.command_timeout * 4 + Duration::from_millis(500);
        let started = started_rx.recv_timeout(limit);
        let failed = |error, thread: JoinHandle<()>| {
            stop.notify_one();
            let _ = thread.join();
            Err(error)
        };
        match started {
            Ok(Ok(())) => Ok(Cluster {
                stop,
                thread: Some(thread),
                namespace: config.namespace.clone(),
                instance_id: config.instance_id.clone(),
            }),
            Ok(Err(error)) => failed(error, thread),
            Err(_) => failed(
                ClusterError::Connect {
                    url: connect::hide_passwords(&config.urls),
                    message: format!("no answer within {limit:?}"),
                },
                thread,
            ),
        }
    }
}
