//! The cluster's background work, on its own thread and current-thread tokio runtime:
//! connecting, heartbeats, lease refills, falling back and reconnecting with backoff.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, FromRedisValue, RedisError, RedisResult, ServerErrorKind};
use tokio::task::JoinSet;
use tokio::time::{timeout, Instant};

use super::error::ClusterError;
use super::keys::Keys;
use super::scripts::Scripts;
use crate::clock;
use crate::rules::ClusterThreshold;
use crate::slot::cluster::shared::{self, RuleLeases, MODE_CONNECTED, MODE_FALLBACK};

/// How often an instance says it is live.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(30);
/// An instance not heard from for this long is no longer counted.
const INSTANCE_TTL_MS: u64 = 1_000;
/// How often asks that could not be served at once are looked at again.
const TICK: Duration = Duration::from_millis(5);
/// The lease size follows this much of the instance's own traffic.
const LEASE_HORIZON_NANOS: u64 = 50_000_000;
/// Reconnection backoff: from this, doubling...
const MIN_BACKOFF: Duration = Duration::from_millis(20);
/// ...up to this.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// What the background work was started with.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) urls: Vec<String>,
    pub(crate) cluster_mode: bool,
    pub(crate) namespace: String,
    pub(crate) instance_id: String,
    pub(crate) command_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) keys: Keys,
}

/// A connection to one Redis or to a Redis Cluster (both cheap to clone: multiplexed).
#[derive(Clone)]
enum Conn {
    One(MultiplexedConnection),
    Many(ClusterConnection),
}

/// Why a call to the store failed.
#[derive(Debug)]
enum Failure {
    Timeout,
    Redis(RedisError),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("timed out"),
            Failure::Redis(e) => write!(f, "{e}"),
        }
    }
}

/// Runs `invocation` on `conn` within the command timeout, counting the call.
async fn call<T: FromRedisValue>(
    conn: &mut Conn,
    invocation: redis::ScriptInvocation<'_>,
    limit: Duration,
) -> Result<T, Failure> {
    let result = timeout(limit, async {
        match conn {
            Conn::One(c) => invocation.invoke_async(c).await,
            Conn::Many(c) => invocation.invoke_async(c).await,
        }
    })
    .await;
    count(result)
}

fn count<T>(result: Result<RedisResult<T>, tokio::time::error::Elapsed>) -> Result<T, Failure> {
    match result {
        Ok(Ok(v)) => {
            shared::CALLS_OK.fetch_add(1, Relaxed);
            Ok(v)
        }
        Ok(Err(e)) => {
            shared::CALLS_ERROR.fetch_add(1, Relaxed);
            if e.kind() == ErrorKind::Server(ServerErrorKind::CrossSlot) {
                shared::CROSSSLOT.fetch_add(1, Relaxed);
            }
            Err(Failure::Redis(e))
        }
        Err(_) => {
            shared::CALLS_TIMEOUT.fetch_add(1, Relaxed);
            Err(Failure::Timeout)
        }
    }
}

/// The URLs with their passwords replaced by `***`.
pub(crate) fn hide_passwords(urls: &[String]) -> String {
    urls.iter()
        .map(|url| match (url.find("://"), url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}://***{}", &url[..scheme], &url[at..])
            }
            _ => url.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// This instance's id in the set of instances: the process id and a random part.
pub(crate) fn instance_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(clock::precise_nanos());
    format!("{}-{:08x}", std::process::id(), h.finish() as u32)
}

/// The error `start` reports for a failure to reach or use the store.
fn classify(config: &Config, failure: Failure) -> ClusterError {
    let e = match failure {
        Failure::Timeout => {
            return ClusterError::Connect {
                url: hide_passwords(&config.urls),
                message: format!("no answer within {:?}", config.command_timeout),
            }
        }
        Failure::Redis(e) => e,
    };
    let message = e.to_string();
    let upper = message.to_ascii_uppercase();
    if e.kind() == ErrorKind::AuthenticationFailed
        || upper.contains("NOAUTH")
        || upper.contains("WRONGPASS")
        || upper.contains("INVALID PASSWORD")
        || upper.contains("INVALID USERNAME-PASSWORD")
    {
        ClusterError::Auth { message }
    } else if upper.contains("UNKNOWN COMMAND") || upper.contains("NOSCRIPT") {
        ClusterError::ScriptsDisabled { message }
    } else if e.kind() == ErrorKind::InvalidClientConfig {
        ClusterError::Url {
            url: hide_passwords(&config.urls),
            message,
        }
    } else if e.is_io_error()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_connection_dropped()
    {
        ClusterError::Connect {
            url: hide_passwords(&config.urls),
            message,
        }
    } else {
        ClusterError::Redis { message }
    }
}

/// Connects and checks that the store runs the scripts (loads both).
async fn connect(config: &Config, scripts: &Scripts) -> Result<Conn, ClusterError> {
    let url_error = |e: RedisError| ClusterError::Url {
        url: hide_passwords(&config.urls),
        message: e.to_string(),
    };
    let connecting = async {
        if config.cluster_mode {
            let client = redis::cluster::ClusterClient::builder(config.urls.clone())
                .connection_timeout(config.connect_timeout)
                .response_timeout(config.command_timeout)
                .retries(1)
                .build()
                .map_err(url_error)?;
            client
                .get_async_connection()
                .await
                .map(Conn::Many)
                .map_err(|e| classify(config, Failure::Redis(e)))
        } else {
            let client = redis::Client::open(config.urls[0].as_str()).map_err(url_error)?;
            let settings = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(config.connect_timeout))
                .set_response_timeout(Some(config.command_timeout));
            client
                .get_multiplexed_async_connection_with_config(&settings)
                .await
                .map(Conn::One)
                .map_err(|e| classify(config, Failure::Redis(e)))
        }
    };
    let mut conn = match timeout(config.connect_timeout, connecting).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            shared::CALLS_ERROR.fetch_add(1, Relaxed);
            return Err(e);
        }
        Err(_) => {
            shared::CALLS_TIMEOUT.fetch_add(1, Relaxed);
            return Err(ClusterError::Connect {
                url: hide_passwords(&config.urls),
                message: format!("no connection within {:?}", config.connect_timeout),
            });
        }
    };
    for script in [&scripts.lease, &scripts.heartbeat, &scripts.value_key] {
        let loaded = timeout(config.connect_timeout, async {
            match &mut conn {
                Conn::One(c) => script.load_async(c).await,
                Conn::Many(c) => script.load_async(c).await,
            }
        })
        .await;
        count(loaded).map_err(|f| classify(config, f))?;
    }
    share_value_key(config, scripts, &mut conn)
        .await
        .map_err(|f| classify(config, f))?;
    Ok(conn)
}

/// Agrees with the other instances on the hash key of parameter values (the first instance's
/// key, kept in Redis), so that one hotspot value has one Redis key everywhere.
async fn share_value_key(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
) -> Result<(), Failure> {
    let mine = crate::param::shared_key().unwrap_or_else(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(clock::precise_nanos());
        h.finish()
    });
    let mut invocation = scripts.value_key.prepare_invoke();
    invocation
        .key(config.keys.value_key())
        .arg(mine.to_string());
    let theirs: String = call(conn, invocation, config.command_timeout).await?;
    let shared = theirs.parse::<u64>().is_ok_and(crate::param::share_key);
    if !shared && shared::VALUES_SHARED.load(Relaxed) != shared {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "sentinel",
            namespace = %config.namespace,
            "cluster: parameter values were hashed before the cluster started (or with another \
             key): cluster hotspot rules limit locally; start the cluster before the first call"
        );
    }
    shared::VALUES_SHARED.store(shared, Relaxed);
    Ok(())
}

/// One heartbeat: this instance is live; the instances live.
async fn heartbeat(config: &Config, scripts: &Scripts, conn: &mut Conn) -> Result<u32, Failure> {
    let key = config.keys.instances();
    let mut invocation = scripts.heartbeat.prepare_invoke();
    invocation
        .key(key)
        .arg(&config.instance_id)
        .arg(INSTANCE_TTL_MS);
    let n: u64 = call(conn, invocation, config.command_timeout).await?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The thread's body: connect, report to `start`, then serve until `stop`.
pub(crate) fn thread_main(
    config: Arc<Config>,
    stop: Arc<tokio::sync::Notify>,
    started: Sender<Result<(), ClusterError>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = started.send(Err(ClusterError::Thread {
                message: e.to_string(),
            }));
            return;
        }
    };
    runtime.block_on(async move {
        let scripts = Arc::new(Scripts::new());
        let first = async {
            let mut conn = connect(&config, &scripts).await?;
            let n = heartbeat(&config, &scripts, &mut conn)
                .await
                .map_err(|f| classify(&config, f))?;
            Ok::<_, ClusterError>((conn, n))
        };
        let (conn, n) = tokio::select! {
            _ = stop.notified() => return,
            first = first => match first {
                Ok(ok) => ok,
                Err(e) => {
                    let _ = started.send(Err(e));
                    return;
                }
            },
        };
        shared::set_instances(n);
        connected(&config);
        let _ = started.send(Ok(()));
        tokio::select! {
            _ = stop.notified() => {}
            _ = run(Arc::clone(&config), conn, scripts) => {}
        }
    });
}

/// Connected: cluster rules spend leases.
fn connected(config: &Config) {
    shared::set_last_error(None);
    shared::set_mode(MODE_CONNECTED);
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "sentinel",
        namespace = %config.namespace,
        instances = shared::instances(),
        "cluster connected: cluster rules share their limits"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = config;
}

/// The store failed: cluster rules limit locally.
fn fallback(config: &Config, error: String) {
    shared::FALLBACKS.fetch_add(1, Relaxed);
    shared::set_mode(MODE_FALLBACK);
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "sentinel",
        namespace = %config.namespace,
        instances_last_seen = shared::instances(),
        error = %error,
        "cluster fallback: the store cannot be reached, cluster rules limit locally"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = config;
    shared::set_last_error(Some(error));
}

/// The cluster was dropped: cluster rules are local rules.
pub(crate) fn announce_stop(namespace: &str) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "sentinel",
        namespace = %namespace,
        "cluster stopped: cluster rules limit locally"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = namespace;
}

/// Serves while connected; on a failure falls back and reconnects with backoff, forever.
async fn run(config: Arc<Config>, first: Conn, scripts: Arc<Scripts>) {
    let mut conn = Some(first);
    let mut backoff = MIN_BACKOFF;
    loop {
        if let Some(c) = conn.take() {
            let failure = serve(&config, c, &scripts).await;
            fallback(&config, failure.to_string());
            backoff = MIN_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        match connect(&config, &scripts).await {
            Ok(mut c) => match heartbeat(&config, &scripts, &mut c).await {
                Ok(n) => {
                    shared::set_instances(n);
                    connected(&config);
                    conn = Some(c);
                }
                Err(f) => shared::set_last_error(Some(f.to_string())),
            },
            Err(e) => shared::set_last_error(Some(e.to_string())),
        }
    }
}

/// What a task of [`serve`] finished with.
enum Done {
    Beat(Result<u32, Failure>),
    Refill(Result<(), Failure>),
}

/// Heartbeats and refills until a call fails; returns the failure.
async fn serve(config: &Arc<Config>, conn: Conn, scripts: &Arc<Scripts>) -> Failure {
    let mut tasks: JoinSet<Done> = JoinSet::new();
    let mut next_beat = Instant::now();
    let mut beating = false;
    let failure = loop {
        let now = Instant::now();
        if !beating && now >= next_beat {
            beating = true;
            next_beat = now + HEARTBEAT_EVERY;
            let (config, scripts, mut conn) =
                (Arc::clone(config), Arc::clone(scripts), conn.clone());
            tasks.spawn(async move { Done::Beat(heartbeat(&config, &scripts, &mut conn).await) });
        }
        refill_asked(config, &conn, scripts, &mut tasks);
        let done = tokio::select! {
            _ = shared::WAKE.notified() => None,
            _ = tokio::time::sleep_until(next_beat.min(now + TICK)) => None,
            Some(done) = tasks.join_next() => done.ok(),
        };
        match done {
            Some(Done::Beat(Ok(n))) => {
                beating = false;
                shared::set_instances(n);
            }
            Some(Done::Beat(Err(f)) | Done::Refill(Err(f))) => {
                // A refused or dropped connection falls back at once; a single timeout (a
                // busy host can miss 20 ms now and then) only after a second one in a row.
                if !matches!(f, Failure::Timeout) {
                    break f;
                }
                beating = false;
                let mut probe = conn.clone();
                match heartbeat(config, scripts, &mut probe).await {
                    Ok(n) => shared::set_instances(n),
                    Err(f) => break f,
                }
            }
            Some(Done::Refill(Ok(()))) | None => {}
        }
    };
    tasks.abort_all();
    // The refills in flight were dropped: their slots may ask again.
    for table in shared::tables() {
        for slot in table.lease.slots() {
            slot.abandon();
        }
    }
    failure
}

/// Starts a refill for every slot that asked and may ask now.
fn refill_asked(
    config: &Arc<Config>,
    conn: &Conn,
    scripts: &Arc<Scripts>,
    tasks: &mut JoinSet<Done>,
) {
    let now = clock::precise_nanos();
    for table in shared::tables() {
        if !table.lease.take_dirty() {
            continue;
        }
        for (i, slot) in table.lease.slots().iter().enumerate() {
            let Some(key) = slot.begin_refill(now) else {
                if slot.is_asking() {
                    table.lease.mark_dirty();
                }
                continue;
            };
            let (config, scripts, mut conn) =
                (Arc::clone(config), Arc::clone(scripts), conn.clone());
            let table = Arc::clone(&table);
            tasks.spawn(async move {
                Done::Refill(refill(&config, &scripts, &mut conn, &table, i, key).await)
            });
        }
    }
}

/// The GCRA of a rule as the script takes it: emission interval and tolerance in µs, and the
/// burst in tokens; `None` for a threshold of 0 (no tokens ever).
fn pace(table: &RuleLeases) -> Option<(f64, f64, u64)> {
    let instances = match table.threshold {
        ClusterThreshold::Global => 1.0,
        ClusterThreshold::PerInstance => f64::from(shared::instances()),
    };
    let limit = table.limit() * instances;
    if limit.is_nan() || limit < 1.0 {
        return None;
    }
    let interval = table.window_ms as f64 * 1_000.0 / limit;
    let burst = limit.floor() as u64 + table.extra_burst;
    Some((interval, interval * burst as f64, burst))
}

/// One refill of slot `i` of `table` for `key`.
async fn refill(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    table: &RuleLeases,
    i: usize,
    key: u64,
) -> Result<(), Failure> {
    let slot = &table.lease.slots()[i];
    let now = clock::precise_nanos();
    let Some((interval, tolerance, burst)) = pace(table) else {
        slot.finish(0, 1, now, now.saturating_add(100_000_000));
        return Ok(());
    };
    let cap = burst / u64::from(shared::instances());
    let size = slot.next_size(now, LEASE_HORIZON_NANOS, cap);
    let (redis_key, _bucket) = config.keys.lease(table, key);
    let mut invocation = scripts.lease.prepare_invoke();
    invocation
        .key(redis_key)
        .arg(format!("{interval:.6}"))
        .arg(format!("{tolerance:.6}"))
        .arg(size);
    match call::<(u64, u64)>(conn, invocation, config.command_timeout).await {
        Ok((granted, wait_us)) => {
            let now = clock::precise_nanos();
            let retry_at = if granted < size {
                // The bucket is empty: ask again when a token comes, 5 to 50 ms from now, the
                // same for every instance whatever its lease size (so that they share fairly).
                let nanos = (wait_us.saturating_mul(1_000)).clamp(5_000_000, 50_000_000);
                now.saturating_add(nanos)
            } else {
                0
            };
            slot.finish(granted, size, now, retry_at);
            if granted > 0 {
                shared::LEASES_TAKEN.fetch_add(1, Relaxed);
            }
            if slot.is_asking() {
                table.lease.mark_dirty();
            }
            Ok(())
        }
        Err(f) => {
            slot.abandon();
            Err(f)
        }
    }
}
