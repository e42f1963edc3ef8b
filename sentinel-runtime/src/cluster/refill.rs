//! Lease refills and charges: what the background work asks the store for each lease slot,
//! the rule's pace with the share of instances cut off held back, and the calls admitted
//! locally during a fallback charged to the shared buckets on return.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::config::{report_lost, Config};
use super::connect::{call, Conn, Failure};
use super::scripts::Scripts;
use super::task::Done;
use crate::clock;
use crate::rules::ClusterThreshold;
use crate::slot::cluster::health;
use crate::slot::cluster::lease::{LeaseSlot, FLOW_KEY};
use crate::slot::cluster::shared::{self, RuleLeases};

/// The lease size follows this much of the instance's own traffic.
const LEASE_HORIZON_NANOS: u64 = 50_000_000;
/// New hotspot values leased per second, at most: the others are limited locally meanwhile.
pub(crate) const NEW_VALUES_PER_SEC: u64 = 1_000;
/// New hotspot values leased in one script call, at most.
const BATCH: usize = 32;

/// How far apart the passes that lease new hotspot values are, at least: new values wait for
/// the next pass (10 to 15 ms with the background's 5 ms tick; a value new after a quiet spell
/// is leased at once) and are leased together. Their calls are admitted against the local
/// share meanwhile and charged with their first lease. At most 100 passes a second, each of
/// one script call a rule on one Redis (whose values share the rule's hash tag), one a rule
/// and hash tag on a Redis Cluster, and one more per [`BATCH`] values. In a flood of new
/// values, one call a value made about 650 Redis calls a second, and leasing the values asked
/// at each wake-up together (by hash tag, of 64) 147 to 225.
pub(crate) const NEW_VALUES_GATHER: Duration = Duration::from_millis(10);

/// Starts a refill for every slot that asked and may ask now; the first leases of new hotspot
/// values only if `new_values_open` (see [`NEW_VALUES_GATHER`]). Returns whether any new value
/// was leased (a pass started).
pub(crate) fn refill_asked(
    config: &Arc<Config>,
    conn: &Conn,
    scripts: &Arc<Scripts>,
    tasks: &mut JoinSet<Done>,
    new_values_open: bool,
) -> bool {
    let now = clock::precise_nanos();
    let mut passed = false;
    for table in shared::tables() {
        if !table.lease.take_dirty() {
            continue;
        }
        // New hotspot values, by hash tag (a script's keys share a slot: on one Redis, a
        // rule's values share the rule's tag); up to BATCH a call.
        let mut new_values: Vec<Vec<(usize, u64)>> = Vec::new();
        for (i, slot) in table.lease.slots().iter().enumerate() {
            let new_value = table.param_index.is_some() && slot.asks_for_new_key();
            if new_value && !new_values_open {
                table.lease.mark_dirty();
                continue;
            }
            if new_value && !new_values_allowed(now) {
                if slot.defer() {
                    health::VALUES_OVER_CAP.fetch_add(1, Relaxed);
                }
                table.lease.mark_dirty();
                continue;
            }
            let Some(key) = slot.begin_refill(now) else {
                if slot.is_asking() {
                    table.lease.mark_dirty();
                }
                continue;
            };
            if new_value {
                let bucket = config.keys.lease(&table, key).1;
                if new_values.len() <= bucket {
                    new_values.resize_with(bucket + 1, Vec::new);
                }
                new_values[bucket].push((i, key));
                passed = true;
                continue;
            }
            let (config, scripts, mut conn) =
                (Arc::clone(config), Arc::clone(scripts), conn.clone());
            let table = Arc::clone(&table);
            tasks.spawn(async move {
                Done::Refill(refill(&config, &scripts, &mut conn, &table, i, key).await)
            });
        }
        for values in new_values {
            for chunk in values.chunks(BATCH) {
                let (config, scripts, mut conn) =
                    (Arc::clone(config), Arc::clone(scripts), conn.clone());
                let table = Arc::clone(&table);
                let chunk = chunk.to_vec();
                tasks.spawn(async move {
                    let done = if let [(i, key)] = chunk[..] {
                        refill(&config, &scripts, &mut conn, &table, i, key).await
                    } else {
                        refill_batch(&config, &scripts, &mut conn, &table, &chunk).await
                    };
                    Done::Refill(done)
                });
            }
        }
    }
    passed
}

/// Whether another new hotspot value may be leased now (at most [`NEW_VALUES_PER_SEC`] a
/// second).
fn new_values_allowed(now: u64) -> bool {
    use std::sync::atomic::AtomicU64;
    static SECOND: AtomicU64 = AtomicU64::new(0);
    static LEASED: AtomicU64 = AtomicU64::new(0);
    let second = now / 1_000_000_000;
    if SECOND.swap(second, Relaxed) != second {
        LEASED.store(0, Relaxed);
    }
    LEASED.fetch_add(1, Relaxed) < NEW_VALUES_PER_SEC
}

/// The GCRA of a rule as the script takes it: emission interval and tolerance in µs, and the
/// burst in tokens; `None` for a threshold of 0 (no tokens ever). The instances that stopped
/// heartbeating within the grace period may be admitting their local share: theirs is held
/// back (a global rule's rate is its threshold times the instances heard from recently over
/// those heard from within the grace period; a per-instance rule's, its threshold times the
/// instances heard from recently).
fn pace(table: &RuleLeases) -> Option<(f64, f64, u64)> {
    let (recent, known) = shared::sharing();
    let share = match table.threshold {
        ClusterThreshold::Global => f64::from(recent) / f64::from(known.max(1)),
        ClusterThreshold::PerInstance => f64::from(recent),
    };
    let limit = table.limit() * share;
    if limit.is_nan() || limit < 1.0 {
        return None;
    }
    let interval = table.window_ms as f64 * 1_000.0 / limit;
    let burst = limit.floor() as u64 + table.extra_burst;
    Some((interval, interval * burst as f64, burst))
}

/// What the lease script answered.
struct Answer {
    granted: u64,
    wait_us: u64,
    /// The store had lost the key's state (see [`LeaseSlot::set_lost`]).
    lost: bool,
}

/// What one call of the lease script asks.
struct Ask {
    /// The hotspot value's hash ([`FLOW_KEY`] for a flow rule).
    value: u64,
    /// Emission interval and tolerance, in µs.
    pace: (f64, f64),
    /// Tokens wanted.
    want: u64,
    /// Tokens to charge (calls admitted locally meanwhile).
    charge: u64,
    /// Until when this instance knows the key must exist (µs of the store's clock; 0: not).
    alive_until: u64,
}

/// Runs the lease script for `ask` of `table`. Records what the answer says of the store (lost
/// state, the epoch, rules that disagree); returns the answer and until when the key lives.
async fn lease(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    table: &RuleLeases,
    ask: Ask,
) -> Result<(Answer, u64), Failure> {
    let Ask {
        value,
        pace,
        want,
        charge,
        alive_until,
    } = ask;
    let (redis_key, bucket) = config.keys.lease(table, value);
    let known = config.epochs[bucket].load(Relaxed);
    let mut invocation = scripts.lease.prepare_invoke();
    invocation
        .key(redis_key)
        .key(config.keys.epoch(bucket))
        .arg(format!("{:.6}", pace.0))
        .arg(format!("{:.6}", pace.1))
        .arg(want)
        .arg(known)
        .arg(alive_until)
        .arg(charge)
        .arg(format!("{}", table.limit()));
    let (granted, wait_us, lost, epoch, until, disagree): (u64, u64, u64, String, u64, u64) =
        call(conn, invocation, config.command_timeout).await?;
    record(config, bucket, lost, &epoch, disagree);
    let lost = lost != 0;
    Ok((
        Answer {
            granted,
            wait_us,
            lost,
        },
        until,
    ))
}

/// Records what a lease answer says of the store: the bucket's epoch, lost state, rules that
/// disagree.
fn record(config: &Config, bucket: usize, lost: u64, epoch: &str, disagree: u64) {
    if let Ok(epoch) = epoch.parse::<u64>() {
        config.epochs[bucket].store(epoch, Relaxed);
    }
    if lost != 0 {
        report_lost(config);
    }
    if disagree != 0 {
        health::rules_disagree();
    }
}

/// Puts `answer` to a refill of `size` tokens into `slot`.
fn settle(table: &RuleLeases, slot: &LeaseSlot, size: u64, answer: Answer, until: u64) {
    let Answer {
        granted,
        wait_us,
        lost,
    } = answer;
    let now = clock::precise_nanos();
    if lost {
        slot.set_lost(now, table.window_ms.saturating_mul(1_000_000));
    }
    let retry_at = if granted < size {
        // The bucket is empty: ask again when a token comes, 5 to 50 ms from now, the same for
        // every instance whatever its lease size (so that they share fairly).
        let nanos = (wait_us.saturating_mul(1_000)).clamp(5_000_000, 50_000_000);
        now.saturating_add(nanos)
    } else {
        0
    };
    slot.finish(granted, size, now, retry_at);
    if until != 0 {
        slot.set_alive_until(until);
    }
    if granted > 0 {
        shared::LEASES_TAKEN.fetch_add(1, Relaxed);
    }
    if slot.is_asking() {
        table.lease.mark_dirty();
    }
}

/// The first leases of new hotspot values `values` (slot index, value hash) of `table` in one
/// script call, all of one hash tag.
async fn refill_batch(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    table: &RuleLeases,
    values: &[(usize, u64)],
) -> Result<(), Failure> {
    let slots = table.lease.slots();
    let now = clock::precise_nanos();
    let Some((interval, tolerance, burst)) = pace(table) else {
        for &(i, _) in values {
            slots[i].finish(0, 1, now, now.saturating_add(100_000_000));
        }
        return Ok(());
    };
    let cap = burst / u64::from(shared::instances());
    let mut asks = Vec::with_capacity(values.len());
    let mut invocation = scripts.lease_batch.prepare_invoke();
    invocation
        .arg(format!("{interval:.6}"))
        .arg(format!("{tolerance:.6}"))
        .arg(format!("{}", table.limit()));
    for &(i, key) in values {
        let slot = &slots[i];
        let size = slot.next_size(now, LEASE_HORIZON_NANOS, cap);
        let owed = slot.take_owed();
        let (redis_key, bucket) = config.keys.lease(table, key);
        invocation
            .key(redis_key)
            .key(config.keys.epoch(bucket))
            .arg(size)
            .arg(config.epochs[bucket].load(Relaxed))
            .arg(slot.alive_until())
            .arg(owed);
        asks.push((slot, size, owed, bucket));
    }
    let answers: Result<Vec<String>, Failure> =
        call(conn, invocation, config.command_timeout).await;
    let answers = match answers {
        Ok(a) if a.len() == asks.len() * 6 => a,
        // A failure, or an answer of another length (never from this script): the values ask
        // again, and what they owed is owed again.
        failed => {
            for &(slot, _, owed, _) in &asks {
                if owed > 0 {
                    slot.owe(u32::try_from(owed).unwrap_or(u32::MAX));
                }
                slot.abandon();
            }
            return failed.map(|_| ());
        }
    };
    let number = |s: &String| s.parse::<u64>().unwrap_or(0);
    for ((slot, size, _, bucket), a) in asks.into_iter().zip(answers.chunks(6)) {
        record(config, bucket, number(&a[2]), &a[3], number(&a[5]));
        let answer = Answer {
            granted: number(&a[0]),
            wait_us: number(&a[1]),
            lost: number(&a[2]) != 0,
        };
        settle(table, slot, size, answer, number(&a[4]));
    }
    Ok(())
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
    let owed = slot.take_owed();
    let ask = Ask {
        value: key,
        pace: (interval, tolerance),
        want: size,
        charge: owed,
        alive_until: slot.alive_until(),
    };
    let answer = lease(config, scripts, conn, table, ask).await;
    match answer {
        Ok((answer, until)) => {
            settle(table, slot, size, answer, until);
            Ok(())
        }
        Err(f) => {
            if owed > 0 {
                slot.owe(u32::try_from(owed).unwrap_or(u32::MAX));
            }
            slot.abandon();
            Err(f)
        }
    }
}

/// Charges to the shared buckets the calls cluster flow rules admitted locally during a
/// fallback that lasted `fell_for`: as many as fall in the rule's last window, if they came at
/// an even pace (all of them when the fallback was shorter than the window). The store takes a
/// charge past a spent bucket into debt of at most one more window.
pub(crate) async fn charge_back(
    config: &Config,
    scripts: &Scripts,
    conn: &mut Conn,
    fell_for: Duration,
) -> Result<(), Failure> {
    for table in shared::tables() {
        let owed = table.owed.swap(0, Relaxed);
        if owed == 0 || table.param_index.is_some() {
            continue;
        }
        let window = Duration::from_millis(table.window_ms);
        let charge = if fell_for <= window {
            owed
        } else {
            (owed as f64 * window.as_secs_f64() / fell_for.as_secs_f64()).ceil() as u64
        };
        let Some((interval, tolerance, _)) = pace(&table) else {
            continue;
        };
        let ask = Ask {
            value: FLOW_KEY,
            pace: (interval, tolerance),
            want: 0,
            charge,
            alive_until: 0,
        };
        let charged = lease(config, scripts, conn, &table, ask).await;
        if let Err(f) = charged {
            table.owed.fetch_add(owed, Relaxed);
            return Err(f);
        }
        health::CHARGED_BACK.fetch_add(charge, Relaxed);
    }
    Ok(())
}
