//! The cluster's background work, on its own thread and current-thread tokio runtime:
//! connecting, heartbeats, lease refills, riding out short failures, falling back when failures
//! persist, and coming back (with hysteresis, charging what was admitted locally meanwhile).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{timeout, Instant};

use super::config::Config;
use super::connect::{
    call, classify, connect, connect_start, deregister, read_policy, share_value_key, Conn, Failure,
};
use super::error::ClusterError;
use super::fleet_task;
use super::refill::{charge_back, refill_asked, NEW_VALUES_GATHER};
use super::scripts::Scripts;
use super::task::{Done, Seen};
use crate::slot::cluster::health;
use crate::slot::cluster::shared::{self, MODE_CONNECTED, MODE_FALLBACK};

/// How often an instance says it is live.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(30);
/// How often it probes while calls fail (before it leaves the store).
const PROBE_EVERY: Duration = Duration::from_millis(10);
/// An instance not heard from for this long is no longer counted in `instances`.
const INSTANCE_TTL_MS: u64 = 1_000;
/// An instance heard from within this long is connected now; one heard from before (within
/// the grace period) may be cut off from the store and limiting locally.
const RECENT_MS: u64 = 120;
/// How long the connected instances hold back the share of an instance that stopped
/// heartbeating (it may be cut off from the store and admitting its local share). At 2 s, a
/// partition of 2 of 3 instances for 5 s admitted 1.67 R from its 3rd second.
pub(crate) const GRACE_MS: u64 = 10_000;
/// How often asks that could not be served at once are looked at again.
const TICK: Duration = Duration::from_millis(5);
/// Reconnection backoff: from this, doubling...
const MIN_BACKOFF: Duration = Duration::from_millis(20);
/// ...up to this.
const MAX_BACKOFF: Duration = Duration::from_millis(500);
/// Calls that time out make the instance leave the store only once they failed for this long
/// in a row, with no call succeeding in between...
pub(crate) const PERSIST: Duration = Duration::from_millis(150);
/// ...and at least this many of them.
const PERSIST_FAILURES: u32 = 5;
/// After a reconnect, this many heartbeats in a row, `HEARTBEAT_EVERY` apart, must answer
/// before the instance leases again...
const STABLE_BEATS: u32 = 3;
/// ...each within this share of the command timeout (numerator, denominator). Coming back asks
/// more than staying: a store whose round trip sits just under the timeout answers most calls
/// and lets some time out; an instance that left on such a run of failures, and came back on
/// three heartbeats answered just in time, would leave again at the next run (measured at a
/// 19 ms round trip with the 20 ms timeout: two fallbacks per instance in most runs).
const STABLE_WITHIN: (u32, u32) = (3, 4);
/// How often the shared hotspot value key is checked.
const VALUE_KEY_EVERY: Duration = Duration::from_secs(1);
/// How long a stopping cluster tries to take its instance out of the set.
const DEREGISTER_WITHIN: Duration = Duration::from_millis(200);
/// How often the store's eviction policy is read again: a policy switched to one that evicts
/// is in the status within a second, while it lasts (at 10 s, a store that evicted the keys
/// for 3 s, with the fleet admitting 0.27 R, never showed in the status).
const POLICY_EVERY: Duration = Duration::from_secs(1);

/// One heartbeat: this instance is live; the instances seen.
async fn heartbeat(config: &Config, scripts: &Scripts, conn: &mut Conn) -> Result<Seen, Failure> {
    heartbeat_within(config, scripts, conn, config.command_timeout).await
}

/// [`heartbeat`] with an answer within `limit`.
async fn heartbeat_within(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    limit: Duration,
) -> Result<Seen, Failure> {
    let mut invocation = scripts.heartbeat.prepare_invoke();
    invocation
        .key(config.keys.instances())
        .arg(&config.instance_id)
        .arg(GRACE_MS)
        .arg(INSTANCE_TTL_MS)
        .arg(RECENT_MS);
    let (live, recent, known, fresh): (u64, u64, u64, u64) = call(conn, invocation, limit).await?;
    let n = |v: u64| u32::try_from(v).unwrap_or(u32::MAX).max(1);
    Ok(Seen {
        live: n(live),
        recent: n(recent),
        known: n(known),
        fresh: fresh != 0,
    })
}

/// How long the counts of instances are smoothed over: a heartbeat that comes late must not
/// make `instances` dip.
const SMOOTH_OVER: Duration = Duration::from_millis(300);

/// The counts of instances lately seen.
struct Counts {
    history: VecDeque<(Instant, Seen)>,
    /// When the store last lost the set of instances, and the counts before.
    lost: Option<(Instant, u32, u32)>,
    /// When this instance last came back from a fallback, and the counts it had seen before
    /// it fell back.
    resumed: Option<(Instant, u32, u32)>,
}

static COUNTS: Mutex<Counts> = Mutex::new(Counts {
    history: VecDeque::new(),
    lost: None,
    resumed: None,
});

/// Notes that this instance is coming back from a fallback, having seen `live` instances live
/// and `known` within the grace period before it fell back; the next [`seen`] counts them.
///
/// While the store could not be reached no instance could heartbeat: after an outage longer
/// than the grace period (a Redis Cluster failover takes about 2.5 s) the set holds only the
/// instances already back, though the others may still be in their fallback, each admitting
/// its local share of the instances it last saw. The first instance back would count itself
/// alone and take the whole limit on top of theirs (measured: 1.65 R in one second). So the
/// instances seen before the fallback stay counted, live and within the grace period, for a
/// grace period from the return: the grace period runs from when an instance could last be
/// heard, not across an outage of the store.
fn resuming(live: u32, known: u32) {
    let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    counts.resumed = Some((Instant::now(), live, known));
}

/// Forgets the counts a cluster started before in this process saw (another namespace,
/// perhaps): a new cluster starts from its own heartbeats.
fn forget_counts() {
    let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    counts.history.clear();
    counts.lost = None;
    counts.resumed = None;
}

/// Records what a heartbeat saw: the instances live and within the grace period as the most
/// seen over [`SMOOTH_OVER`], for [`INSTANCE_TTL_MS`] after the store lost the set of
/// instances (they come back one heartbeat at a time), and for [`GRACE_MS`] after this
/// instance came back from a fallback (the others may be in theirs, see [`resuming`]); those
/// connected as seen now. A count kept high holds back more, never less.
fn seen(s: Seen) {
    let now = Instant::now();
    let (live, known) = {
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        if s.fresh {
            counts.lost = Some((now, shared::instances(), shared::sharing().1));
        }
        let history = &mut counts.history;
        while history
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > SMOOTH_OVER)
        {
            history.pop_front();
        }
        history.push_back((now, s));
        let (mut live, mut known) = history.iter().fold((0, 0), |(live, known), (_, h)| {
            (live.max(h.live), known.max(h.known))
        });
        let held = Duration::from_millis(INSTANCE_TTL_MS);
        if let Some((_, l, k)) = counts
            .lost
            .filter(|(at, _, _)| now.duration_since(*at) < held)
        {
            live = live.max(l);
            known = known.max(k);
        }
        let grace = Duration::from_millis(GRACE_MS);
        if let Some((_, l, k)) = counts
            .resumed
            .filter(|(at, _, _)| now.duration_since(*at) < grace)
        {
            live = live.max(l);
            known = known.max(k);
        }
        (live, known)
    };
    shared::set_instances(live);
    shared::set_sharing(s.recent, known.max(s.recent));
    health::HELD_BACK.store(u64::from(known.saturating_sub(s.recent)), Relaxed);
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
    forget_counts();
    runtime.block_on(async move {
        let scripts = Arc::new(Scripts::new());
        let first = async {
            let mut conn = connect_start(&config, &scripts).await?;
            // Within the connect timeout: many instances starting at once load the store.
            let n = heartbeat_within(&config, &scripts, &mut conn, config.connect_timeout)
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
        seen(n);
        connected(&config);
        let _ = started.send(Ok(()));
        tokio::select! {
            _ = stop.notified() => deregister(&config, DEREGISTER_WITHIN).await,
            _ = run(Arc::clone(&config), conn, scripts) => {}
        }
    });
}

/// Connected: cluster rules spend leases.
fn connected(config: &Config) {
    shared::set_last_error(None);
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "sentinel",
        namespace = %config.namespace,
        instances = shared::instances(),
        "cluster connected: cluster rules share their limits"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = config;
    // Last, as for a fallback: the state is seen after its event.
    shared::set_mode(MODE_CONNECTED);
}

/// The store failed: cluster rules limit locally.
fn fallback(config: &Config, error: String) {
    shared::FALLBACKS.fetch_add(1, Relaxed);
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
    // Last: whoever sees the fallback state also sees its count, its error and its event.
    shared::set_mode(MODE_FALLBACK);
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

/// Serves while connected; when failures persist falls back, and reconnects with backoff,
/// forever. Back only after [`STABLE_BEATS`] heartbeats in a row, and after charging what was
/// admitted locally meanwhile.
async fn run(config: Arc<Config>, first: Conn, scripts: Arc<Scripts>) {
    let mut conn = Some(first);
    let mut backoff = MIN_BACKOFF;
    let mut fell_at = Instant::now();
    // The instances live and within the grace period when this instance fell back.
    let mut before = (1, 1);
    loop {
        if let Some(c) = conn.take() {
            let failure = serve(&config, c, &scripts).await;
            before = (shared::instances(), shared::sharing().1);
            fallback(&config, failure.to_string());
            fell_at = Instant::now();
            backoff = MIN_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        let mut c = match connect(&config, &scripts).await {
            Ok(c) => c,
            Err(e) => {
                shared::set_last_error(Some(e.to_string()));
                continue;
            }
        };
        match stable(&config, &scripts, &mut c).await {
            Ok(n) => {
                resuming(before.0, before.1);
                seen(n);
            }
            Err(f) => {
                shared::set_last_error(Some(f.to_string()));
                continue;
            }
        }
        if let Err(f) = charge_back(&config, &scripts, &mut c, fell_at.elapsed()).await {
            shared::set_last_error(Some(f.to_string()));
            continue;
        }
        connected(&config);
        conn = Some(c);
    }
}

/// Heartbeats until [`STABLE_BEATS`] in a row answered, each within [`STABLE_WITHIN`] of the
/// command timeout; the last one's count.
async fn stable(config: &Config, scripts: &Scripts, conn: &mut Conn) -> Result<Seen, Failure> {
    let (num, den) = STABLE_WITHIN;
    let within = config.command_timeout * num / den;
    let mut n = heartbeat_within(config, scripts, conn, within).await?;
    for _ in 1..STABLE_BEATS {
        tokio::time::sleep(HEARTBEAT_EVERY).await;
        n = heartbeat_within(config, scripts, conn, within).await?;
    }
    Ok(n)
}

/// Failures in a row, since when.
#[derive(Default)]
struct Streak {
    failures: u32,
    since: Option<Instant>,
}

impl Streak {
    fn fail(&mut self, now: Instant) {
        self.failures += 1;
        self.since.get_or_insert(now);
    }

    fn succeed(&mut self) {
        if self.failures > 0 {
            health::FAILURES_RIDDEN_OUT.fetch_add(1, Relaxed);
            shared::set_last_error(None);
        }
        *self = Streak::default();
    }

    fn failing(&self) -> bool {
        self.failures > 0
    }

    /// Whether the failures persisted: leave the store.
    fn persisted(&self, now: Instant) -> bool {
        self.failures >= PERSIST_FAILURES
            && self.since.is_some_and(|s| now.duration_since(s) >= PERSIST)
    }
}

/// Whether `f` says the connection itself is gone (dropped, refused, reset), rather than slow.
fn connection_lost(f: &Failure) -> bool {
    match f {
        Failure::Timeout => false,
        Failure::Redis(e) => {
            e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_unrecoverable_error()
        }
    }
}

/// Heartbeats, refills and checks until failures persist; returns the last failure. A
/// connection that drops is replaced at once if the store answers a new one (a killed client,
/// a failover); calls that time out are ridden out for [`PERSIST`] while the leases in hand
/// keep being spent.
async fn serve(config: &Arc<Config>, mut conn: Conn, scripts: &Arc<Scripts>) -> Failure {
    let mut tasks: JoinSet<Done> = JoinSet::new();
    let mut next_beat = Instant::now();
    let mut beating = false;
    let mut next_value_key = Instant::now() + VALUE_KEY_EVERY;
    let mut next_policy = Instant::now() + POLICY_EVERY;
    let mut checking = false;
    let mut next_new_values = Instant::now();
    let mut streak = Streak::default();
    let failure = loop {
        let now = Instant::now();
        if !beating && now >= next_beat {
            beating = true;
            let every = if streak.failing() {
                PROBE_EVERY
            } else {
                HEARTBEAT_EVERY
            };
            next_beat = now + every;
            let (config, scripts, mut conn) =
                (Arc::clone(config), Arc::clone(scripts), conn.clone());
            tasks.spawn(async move { Done::Beat(heartbeat(&config, &scripts, &mut conn).await) });
        }
        if !checking && !streak.failing() && now >= next_value_key {
            checking = true;
            let policy = now >= next_policy;
            next_value_key = now + VALUE_KEY_EVERY;
            if policy {
                next_policy = now + POLICY_EVERY;
            }
            let (config, scripts, mut conn) =
                (Arc::clone(config), Arc::clone(scripts), conn.clone());
            tasks.spawn(async move {
                // The epochs need no look here: every lease checks its bucket's.
                let limit = config.command_timeout;
                let checked = share_value_key(&config, &scripts, &mut conn, limit).await;
                // The fleet's view is best effort: its failures say nothing the heartbeats
                // do not.
                let _ = fleet_task::publish(&config, &mut conn, limit).await;
                if policy {
                    read_policy(&config, &mut conn, limit).await;
                }
                Done::Check(checked)
            });
        }
        if refill_asked(config, &conn, scripts, &mut tasks, now >= next_new_values) {
            next_new_values = now + NEW_VALUES_GATHER;
        }
        let done = tokio::select! {
            _ = shared::WAKE.notified() => None,
            _ = tokio::time::sleep_until(next_beat.min(now + TICK)) => None,
            Some(done) = tasks.join_next() => done.ok(),
        };
        let failed = match done {
            Some(Done::Beat(Ok(n))) => {
                beating = false;
                seen(n);
                streak.succeed();
                None
            }
            Some(Done::Refill(Ok(()))) => {
                streak.succeed();
                None
            }
            Some(Done::Check(Ok(()))) => {
                checking = false;
                None
            }
            Some(Done::Beat(Err(f))) => {
                beating = false;
                Some(f)
            }
            Some(Done::Check(Err(f))) => {
                checking = false;
                Some(f)
            }
            Some(Done::Refill(Err(f))) => Some(f),
            None => None,
        };
        let Some(f) = failed else {
            continue;
        };
        let now = Instant::now();
        streak.fail(now);
        shared::set_last_error(Some(f.to_string()));
        if connection_lost(&f) {
            // The connection is gone: a new one now, or leave if the store refuses it.
            match timeout(PERSIST, connect(config, scripts)).await {
                Ok(Ok(c)) => {
                    conn = c;
                    next_beat = Instant::now();
                    continue;
                }
                _ => break f,
            }
        }
        if streak.persisted(now) {
            break f;
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
