//! Reaching the store: connecting, loading the scripts, one call with its timeout and count,
//! and what an instance checks once connected (the shared hotspot value key, the epochs of
//! the key buckets, the eviction policy).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, FromRedisValue, RedisError, RedisResult, ServerErrorKind};
use tokio::time::timeout;

use super::config::Config;
use super::error::ClusterError;
use super::keys::BUCKETS;
use super::scripts::Scripts;
use crate::clock;
use crate::slot::cluster::health;
use crate::slot::cluster::shared;

/// A connection to one Redis or to a Redis Cluster (both cheap to clone: multiplexed).
#[derive(Clone)]
pub(crate) enum Conn {
    One(MultiplexedConnection),
    Many(ClusterConnection),
}

/// Why a call to the store failed.
#[derive(Debug)]
pub(crate) enum Failure {
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
pub(crate) async fn call<T: FromRedisValue>(
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
        // The client's own response timeout is a timeout like ours.
        Ok(Err(e)) if e.is_timeout() => {
            shared::CALLS_TIMEOUT.fetch_add(1, Relaxed);
            Err(Failure::Timeout)
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
pub(crate) fn classify(config: &Config, failure: Failure) -> ClusterError {
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

/// Opens a connection (no scripts loaded, nothing checked). The client's own response timeout
/// is the connect timeout: each call is bounded by its caller (the command timeout while
/// serving, the connect timeout while starting).
async fn open(config: &Config) -> Result<Conn, ClusterError> {
    let url_error = |e: RedisError| ClusterError::Url {
        url: hide_passwords(&config.urls),
        message: e.to_string(),
    };
    if config.cluster_mode {
        let client = redis::cluster::ClusterClient::builder(config.urls.clone())
            .connection_timeout(config.connect_timeout)
            .response_timeout(config.connect_timeout)
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
            .set_response_timeout(Some(config.connect_timeout));
        client
            .get_multiplexed_async_connection_with_config(&settings)
            .await
            .map(Conn::One)
            .map_err(|e| classify(config, Failure::Redis(e)))
    }
}

/// Takes this instance out of the set of instances (the cluster stops): the others stop
/// counting it at once instead of holding its share back for the grace period. At most
/// `limit`; a failure is ignored (the instance is then forgotten after the grace period).
pub(crate) async fn deregister(config: &Config, limit: Duration) {
    let _ = timeout(limit, async {
        let mut conn = open(config).await.ok()?;
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(config.keys.instances()).arg(&config.instance_id);
        match &mut conn {
            Conn::One(c) => cmd.query_async::<i64>(c).await.ok(),
            Conn::Many(c) => cmd.query_async::<i64>(c).await.ok(),
        }
    })
    .await;
}

/// [`connect`] for `start`: a failure that may pass (no answer, a script missing on a node that
/// just took over during a Redis Cluster failover) is tried again 20 ms later while the connect
/// timeout lasts; a bad password or URL is not. (Once serving, a failed reconnect falls back at
/// once and the reconnects back off.)
pub(crate) async fn connect_start(
    config: &Config,
    scripts: &Scripts,
) -> Result<Conn, ClusterError> {
    let deadline = tokio::time::Instant::now() + config.connect_timeout;
    // A try that hangs (a node paused while it hands over its slots) is cut short and made
    // again: each gets a quarter of the connect timeout.
    let each = config.connect_timeout / 4;
    loop {
        let cut = deadline.min(tokio::time::Instant::now() + each);
        let error = match tokio::time::timeout_at(cut, connect(config, scripts)).await {
            Ok(Ok(conn)) => return Ok(conn),
            Ok(Err(e)) => e,
            Err(_) => {
                shared::CALLS_TIMEOUT.fetch_add(1, Relaxed);
                ClusterError::Connect {
                    url: hide_passwords(&config.urls),
                    message: format!("no connection within {:?}", config.connect_timeout),
                }
            }
        };
        let passing = match &error {
            ClusterError::Connect { .. } | ClusterError::Redis { .. } => true,
            ClusterError::ScriptsDisabled { message } => {
                message.to_ascii_uppercase().contains("NOSCRIPT")
            }
            _ => false,
        };
        let retry_at = tokio::time::Instant::now() + Duration::from_millis(20);
        if !passing || retry_at >= deadline {
            return Err(error);
        }
        tokio::time::sleep_until(retry_at).await;
    }
}

/// Connects and checks that the store runs the scripts (loads them), then reads what an
/// instance checks once connected.
pub(crate) async fn connect(config: &Config, scripts: &Scripts) -> Result<Conn, ClusterError> {
    let connecting = open(config);
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
    for script in [
        &scripts.lease,
        &scripts.lease_batch,
        &scripts.heartbeat,
        &scripts.value_key,
        &scripts.epoch,
    ] {
        let loaded = timeout(config.connect_timeout, async {
            match &mut conn {
                Conn::One(c) => script.load_async(c).await,
                Conn::Many(c) => script.load_async(c).await,
            }
        })
        .await;
        count(loaded).map_err(|f| classify(config, f))?;
    }
    // Checked within the connect timeout: many instances starting at once load the store.
    let limit = config.connect_timeout;
    share_value_key(config, scripts, &mut conn, limit)
        .await
        .map_err(|f| classify(config, f))?;
    read_epochs(config, scripts, &mut conn, limit)
        .await
        .map_err(|f| classify(config, f))?;
    read_policy(config, &mut conn, limit).await;
    Ok(conn)
}

/// When this process adopted the hotspot value key in force (µs of Redis `TIME`, as the store
/// keeps it); 0: not yet.
static ADOPTED_SINCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Agrees with the other instances on the hash key of parameter values, so that one hotspot
/// value has one Redis key everywhere: the store keeps the key and since when it is in use; a
/// key in use for longer replaces a younger one (an instance that started after the store lost
/// the key and wrote its own), so the instances that were running keep agreeing. An instance
/// whose key is not the store's says so (`status().value_key_split`) and its cluster hotspot
/// rules limit locally. Run on every connect and every second.
pub(crate) async fn share_value_key(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    limit: Duration,
) -> Result<(), Failure> {
    let in_force = crate::param::shared_key();
    let mine = in_force.unwrap_or_else(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(clock::precise_nanos());
        h.finish()
    });
    let since = match in_force {
        Some(_) => ADOPTED_SINCE.load(Relaxed),
        None => 0,
    };
    let mut invocation = scripts.value_key.prepare_invoke();
    invocation
        .key(config.keys.value_key())
        .arg(mine.to_string())
        .arg(since.to_string());
    let theirs: String = call(conn, invocation, limit).await?;
    let mut words = theirs.split_whitespace();
    let key = words.next().and_then(|w| w.parse::<u64>().ok());
    let their_since = words
        .next()
        .and_then(|w| w.parse::<u64>().ok())
        .unwrap_or(0);
    let shared = key.is_some_and(crate::param::share_key);
    if shared && ADOPTED_SINCE.load(Relaxed) == 0 {
        ADOPTED_SINCE.store(their_since.max(1), Relaxed);
    }
    let was_split = health::VALUE_KEY_SPLIT.load(Relaxed);
    health::set_value_key_split(!shared);
    if !shared && !was_split {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "sentinel",
            namespace = %config.namespace,
            "cluster: this instance hashes parameter values with another key than the store's \
             (values hashed before the cluster started, or the store lost the key and another \
             instance wrote its own): cluster hotspot rules limit locally here"
        );
    }
    shared::VALUES_SHARED.store(shared, Relaxed);
    Ok(())
}

/// Reads (or writes) the epoch of every bucket of keys; an epoch that changed since this
/// instance last saw it means the store lost state meanwhile.
pub(crate) async fn read_epochs(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    limit: Duration,
) -> Result<(), Failure> {
    let mut lost = false;
    for bucket in 0..BUCKETS {
        let backdate: u64 = match config.epochs[bucket].load(Relaxed) {
            0 => 3_600_000_000,
            _ => 0,
        };
        let mut invocation = scripts.epoch.prepare_invoke();
        invocation.key(config.keys.epoch(bucket)).arg(backdate);
        let epoch: String = call(conn, invocation, limit).await?;
        let epoch = epoch.parse::<u64>().unwrap_or(0);
        let known = config.epochs[bucket].swap(epoch, Relaxed);
        lost |= known != 0 && known != epoch;
    }
    if lost {
        super::config::report_lost(config);
    }
    Ok(())
}

/// Reads the store's `maxmemory-policy` and says when it may evict the cluster's keys. A store
/// that refuses `CONFIG GET` (managed Redis often does) is not an error: the policy is then
/// unknown.
pub(crate) async fn read_policy(config: &Config, conn: &mut Conn, limit: Duration) {
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg("maxmemory-policy");
    let answer = timeout(limit, async {
        match conn {
            Conn::One(c) => cmd.query_async::<redis::Value>(c).await,
            Conn::Many(c) => cmd.query_async::<redis::Value>(c).await,
        }
    })
    .await;
    let policy = match count(answer) {
        Ok(value) => {
            let mut words = Vec::new();
            strings(&value, &mut words);
            words.retain(|w| !w.eq_ignore_ascii_case("maxmemory-policy"));
            // Of the nodes of a Redis Cluster, the one that evicts decides.
            words
                .iter()
                .find(|w| !w.eq_ignore_ascii_case("noeviction"))
                .or(words.first())
                .cloned()
        }
        Err(_) => None,
    };
    let was = health::KEYS_EVICTABLE.load(Relaxed);
    health::set_policy(policy.clone());
    if health::KEYS_EVICTABLE.load(Relaxed) && !was {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "sentinel",
            namespace = %config.namespace,
            policy = policy.as_deref().unwrap_or(""),
            "cluster: the store may evict the cluster's keys (maxmemory-policy evicts): a lost \
             key is detected and limits as if spent, but set `maxmemory-policy noeviction`"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (config, policy);
}

/// The strings in `value`, however nested.
fn strings(value: &redis::Value, out: &mut Vec<String>) {
    match value {
        redis::Value::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => out.push(s.clone()),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().for_each(|v| strings(v, out))
        }
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        _ => {}
    }
}
