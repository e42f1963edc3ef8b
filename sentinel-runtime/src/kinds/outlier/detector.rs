//! [`Detector`]: a resource's outlier rules and its endpoints' table, shared across reloads; and
//! what its ejections and returns tell the process (a count, a `tracing` event).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::rule::{OutlierRule, MAX_ENDPOINTS};
use super::table::{largest_share, Change, EndpointTable, OutlierTicket};

/// A resource's outlier part of the chain: its rules, and its endpoints (kept by a rebuild).
#[derive(Debug)]
pub(crate) struct Detector {
    pub(crate) rules: Vec<OutlierRule>,
    table: Arc<Mutex<EndpointTable>>,
}

impl Detector {
    /// Whether `other` keeps its endpoints in this detector's table.
    pub(crate) fn shares_table(&self, other: &Detector) -> bool {
        Arc::ptr_eq(&self.table, &other.table)
    }

    /// A detector of the same rules on the same table.
    pub(crate) fn sharing(&self) -> Detector {
        Detector {
            rules: self.rules.clone(),
            table: Arc::clone(&self.table),
        }
    }

    /// A detector of `rules`, keeping `old`'s endpoints if there was one.
    pub(crate) fn new(rules: &[OutlierRule], old: Option<&Detector>) -> Detector {
        let table = match old {
            Some(old) => Arc::clone(&old.table),
            None => Arc::new(Mutex::new(EndpointTable::new(MAX_ENDPOINTS))),
        };
        Detector {
            rules: rules.to_vec(),
            table,
        }
    }

    fn table(&self) -> MutexGuard<'_, EndpointTable> {
        // The table's invariants hold between its methods, none of which calls user code.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides a call to `endpoint` at `now` (see [`EndpointTable::admit`]).
    pub(crate) fn admit(&self, endpoint: &str, now: u64) -> Result<OutlierTicket, u64> {
        self.table()
            .admit(endpoint, now, largest_share(&self.rules))
    }

    /// Gives back a probe that will not report.
    pub(crate) fn release(&self, ticket: OutlierTicket, now: u64) {
        if ticket.is_probe() {
            self.table().release(ticket, now);
        }
    }

    /// Counts the end of a call admitted with `ticket` on `resource`: an abandoned call (its
    /// future dropped half-way) is no verdict, and gives its probe back.
    pub(crate) fn on_exit(
        &self,
        resource: &'static str,
        ticket: OutlierTicket,
        now: u64,
        error: bool,
        abandoned: bool,
    ) {
        if abandoned {
            return self.release(ticket, now);
        }
        let change = self.table().report(ticket, now, error, &self.rules);
        if let Some(change) = change {
            notify(resource, &change);
        }
    }

    /// The endpoints ejected now, sorted.
    pub(crate) fn ejected(&self, now: u64) -> Vec<String> {
        self.table().ejected(now)
    }

    /// Whether `endpoint` is ejected now.
    pub(crate) fn is_ejected(&self, endpoint: &str, now: u64) -> bool {
        self.table().is_ejected(endpoint, now)
    }

    /// How many endpoints are tracked.
    pub(crate) fn endpoints(&self) -> usize {
        self.table().len()
    }
}

/// Ejections and returns since start, by resource (bounded: resources are capped).
static COUNTS: Mutex<BTreeMap<&'static str, (u64, u64)>> = Mutex::new(BTreeMap::new());

/// Ejections and returns since start: `(resource, ejections, returns)`, sorted.
pub(crate) fn ejection_counts() -> Vec<(&'static str, u64, u64)> {
    let counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    counts.iter().map(|(&r, &(e, b))| (r, e, b)).collect()
}

fn notify(resource: &'static str, change: &Change) {
    {
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        let (ejections, returns) = counts.entry(resource).or_default();
        match change {
            Change::Ejected { .. } => *ejections += 1,
            Change::Returned { .. } => *returns += 1,
        }
    }
    #[cfg(feature = "tracing")]
    match change {
        Change::Ejected { endpoint, nanos } => tracing::warn!(
            target: "sentinel",
            resource,
            endpoint = &**endpoint,
            ejected_ms = nanos / 1_000_000,
            "outlier endpoint ejected"
        ),
        Change::Returned { endpoint } => tracing::info!(
            target: "sentinel",
            resource,
            endpoint = &**endpoint,
            "outlier endpoint returned"
        ),
    }
}
