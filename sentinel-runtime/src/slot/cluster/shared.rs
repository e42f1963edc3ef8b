//! What the cluster checks share with the cluster's background work: whether leases are in
//! force, the instances last seen, the lease tables, the counters behind
//! [`metrics::cluster`](crate::metrics::cluster), and the wake-up of the background work.

// Without the `redis` feature nothing grants leases: only the local fallback is used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::table::LeaseTable;
use crate::rule_data::cluster::ClusterThreshold;

/// No cluster is started: cluster rules limit locally.
pub(crate) const MODE_NONE: u8 = 0;
/// The store answers: cluster rules spend leases.
pub(crate) const MODE_CONNECTED: u8 = 1;
/// A cluster is started but its store cannot be reached: cluster rules limit locally.
pub(crate) const MODE_FALLBACK: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(MODE_NONE);
static INSTANCES: AtomicU32 = AtomicU32::new(1);
/// The instances heard from recently (connected now), and within the grace period.
static RECENT: AtomicU32 = AtomicU32::new(1);
static KNOWN: AtomicU32 = AtomicU32::new(1);

/// When (runtime clock, ns) this process last came back from a fallback; 0: never.
static RESUMED_AT: AtomicU64 = AtomicU64::new(0);

pub(crate) static LEASES_TAKEN: AtomicU64 = AtomicU64::new(0);
pub(crate) static CALLS_OK: AtomicU64 = AtomicU64::new(0);
pub(crate) static CALLS_ERROR: AtomicU64 = AtomicU64::new(0);
pub(crate) static CALLS_TIMEOUT: AtomicU64 = AtomicU64::new(0);
pub(crate) static FALLBACKS: AtomicU64 = AtomicU64::new(0);
pub(crate) static CROSSSLOT: AtomicU64 = AtomicU64::new(0);
static LAST_ERROR: Mutex<Option<String>> = Mutex::new(None);
/// Whether this process hashes parameter values with the key the cluster's instances share
/// (else cluster hotspot rules limit locally: their values' keys would differ).
pub(crate) static VALUES_SHARED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The background work's wake-up: a lease asked for a refill.
#[cfg(feature = "redis")]
pub(crate) static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Whether cluster rules spend leases now.
#[inline]
pub(crate) fn mode() -> u8 {
    MODE.load(Acquire)
}

/// Whether `now` (runtime clock, ns) lies within `window_ns` of this process's last return from
/// a fallback.
#[inline]
pub(crate) fn resumed_within(now: u64, window_ns: u64) -> bool {
    let at = RESUMED_AT.load(Relaxed);
    at != 0 && now.saturating_sub(at) < window_ns
}

/// Sets the mode; returns the previous one.
pub(crate) fn set_mode(mode: u8) -> u8 {
    if mode == MODE_CONNECTED && MODE.load(Relaxed) == MODE_FALLBACK {
        RESUMED_AT.store(crate::clock::precise_nanos().max(1), Relaxed);
    }
    let old = MODE.swap(mode, AcqRel);
    if mode != MODE_CONNECTED {
        for table in tables() {
            table.lease.expire_all();
        }
    }
    old
}

/// The instances live when the store was last reached (1 without a cluster).
#[inline]
pub(crate) fn instances() -> u32 {
    INSTANCES.load(Relaxed).max(1)
}

pub(crate) fn set_instances(n: u32) {
    INSTANCES.store(n.max(1), Relaxed);
}

/// The instances heard from recently, and within the grace period (some of these may be cut
/// off from the store and limiting locally).
pub(crate) fn sharing() -> (u32, u32) {
    (RECENT.load(Relaxed).max(1), KNOWN.load(Relaxed).max(1))
}

pub(crate) fn set_sharing(recent: u32, known: u32) {
    RECENT.store(recent.max(1), Relaxed);
    KNOWN.store(known.max(recent).max(1), Relaxed);
}

pub(crate) fn last_error() -> Option<String> {
    LAST_ERROR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

pub(crate) fn set_last_error(error: Option<String>) {
    *LAST_ERROR.lock().unwrap_or_else(PoisonError::into_inner) = error;
}

/// Wakes the background work (a lease asked for a refill).
#[inline]
pub(crate) fn wake() {
    #[cfg(feature = "redis")]
    WAKE.notify_one();
}

/// What the store needs to know of a cluster rule to grant its tokens; read by the background
/// work, written when rules load.
#[derive(Debug)]
pub(crate) struct RuleLeases {
    /// The rule's resource (the store's keys encode it).
    pub(crate) resource: String,
    /// A hotspot rule's parameter index (its slots are values); `None` for a flow rule.
    pub(crate) param_index: Option<usize>,
    pub(crate) threshold: ClusterThreshold,
    /// The threshold per window (`f64` bits).
    threshold_bits: AtomicU64,
    /// Calls beyond the threshold a value may take at once from idle (hotspot rules' `burst`).
    pub(crate) extra_burst: u64,
    /// The window in milliseconds.
    pub(crate) window_ms: u64,
    pub(crate) lease: LeaseTable,
    /// Calls admitted locally while the store could not be reached, to charge to the shared
    /// bucket on return.
    pub(crate) owed: AtomicU64,
}

impl RuleLeases {
    /// The threshold per window.
    pub(crate) fn limit(&self) -> f64 {
        f64::from_bits(self.threshold_bits.load(Relaxed))
    }

    pub(crate) fn set_limit(&self, threshold: f64) {
        self.threshold_bits.store(threshold.to_bits(), Relaxed);
    }
}

static TABLES: Mutex<Vec<Weak<RuleLeases>>> = Mutex::new(Vec::new());

/// The lease table of the rule of `resource` (and parameter `param_index`, for a hotspot rule;
/// shared by every gate of that rule, also across
/// reloads), made if none is alive.
#[allow(clippy::too_many_arguments)]
pub(crate) fn leases(
    resource: &str,
    param_index: Option<usize>,
    threshold: ClusterThreshold,
    limit: f64,
    extra_burst: u64,
    window_ms: u64,
    slots: usize,
) -> Arc<RuleLeases> {
    let mut tables = TABLES.lock().unwrap_or_else(PoisonError::into_inner);
    tables.retain(|t| t.strong_count() > 0);
    for t in tables.iter().filter_map(Weak::upgrade) {
        if t.resource == resource
            && t.param_index == param_index
            && t.threshold == threshold
            && t.window_ms == window_ms
            && t.extra_burst == extra_burst
        {
            t.set_limit(limit);
            return t;
        }
    }
    let t = Arc::new(RuleLeases {
        resource: resource.to_owned(),
        param_index,
        threshold,
        threshold_bits: AtomicU64::new(limit.to_bits()),
        extra_burst,
        window_ms,
        lease: LeaseTable::new(slots),
        owed: AtomicU64::new(0),
    });
    tables.push(Arc::downgrade(&t));
    t
}

/// Every live lease table (off the call path: the background work's scan).
pub(crate) fn tables() -> Vec<Arc<RuleLeases>> {
    TABLES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect()
}
