//! [`EndpointTable`]: a resource's endpoints, bounded, with their counts and ejections. Plain
//! data, the time given by the caller (the detector holds it under a lock).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::rule::{OutlierRule, MAX_EJECTION_FACTOR, MAX_OUTLIER_RECOVERY, OUTLIER_RATIO_WINDOW};

/// Endpoints seen within this long count in the ejection share's base.
pub(crate) const SEEN_NANOS: u64 = 60_000_000_000;
/// Longer endpoint names are not tracked.
pub(crate) const MAX_NAME: usize = 255;
const WINDOW_NANOS: u64 = OUTLIER_RATIO_WINDOW.as_nanos() as u64;
const PROBE: u64 = 1 << 31;

/// What an admitted call's exit reports to the table: the endpoint's slot and generation (a slot
/// reused by another endpoint since does not take the report), and whether the call is the
/// endpoint's probe. 0: no endpoint tracked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OutlierTicket(u64);

impl OutlierTicket {
    fn new(slot: usize, generation: u32, probe: bool) -> OutlierTicket {
        let probe = if probe { PROBE } else { 0 };
        OutlierTicket(u64::from(generation) << 32 | probe | slot as u64)
    }

    /// Whether a tracked endpoint admitted the call.
    #[inline(always)]
    pub(crate) fn is_some(self) -> bool {
        self.0 != 0
    }

    /// Whether the call is its endpoint's probe.
    pub(crate) fn is_probe(self) -> bool {
        self.0 & PROBE != 0
    }

    fn slot(self) -> usize {
        (self.0 & (PROBE - 1)) as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// Where an endpoint stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// Its calls pass and are counted.
    Healthy,
    /// Its calls are blocked until `until`; the first call after it is the probe.
    Ejected { until: u64 },
    /// Its probe is out since `since`: the other calls are blocked.
    Probing { since: u64 },
}

/// An ejection or a return, for events and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The endpoint is ejected for `nanos`.
    Ejected { endpoint: Arc<str>, nanos: u64 },
    /// The endpoint's probe succeeded.
    Returned { endpoint: Arc<str> },
}

#[derive(Debug)]
struct Endpoint {
    name: Arc<str>,
    generation: u32,
    /// Its place in the recency order.
    seq: u64,
    last_seen: u64,
    consecutive: u32,
    window_start: u64,
    requests: u32,
    errors: u32,
    health: Health,
    /// Ejections in a row (a return that lasts as long as the last ejection forgets them).
    ejections: u32,
    /// How long the last ejection lasted, and the recovery of the rule that made it.
    backoff: u64,
    base: u64,
    returned_at: u64,
}

impl Endpoint {
    /// Ejected now: its calls are blocked, or its probe is out (a lapsed ejection whose probe
    /// has not come is not).
    fn is_out(&self, now: u64) -> bool {
        match self.health {
            Health::Healthy => false,
            Health::Ejected { until } => until > now,
            Health::Probing { .. } => true,
        }
    }

    /// Holds a place in the ejection share now: ejected, probing, or its ejection (or its
    /// probe's time) ended less than [`SEEN_NANOS`] ago and no probe has brought it back yet.
    /// A lapsed ejection still holds its place, or another endpoint could be ejected in the
    /// gap and the share be exceeded once the probe comes (and fails); one not probed for a
    /// minute lets it go (the endpoint may be gone), and its next call probes only if the
    /// share allows ([`EndpointTable::admit`]).
    fn holds_share(&self, now: u64) -> bool {
        let lapsed = match self.health {
            Health::Healthy => return false,
            Health::Ejected { until } => until,
            Health::Probing { since } => since.saturating_add(self.base),
        };
        now < lapsed.saturating_add(SEEN_NANOS)
    }

    /// Back in service (its probe succeeded, or the share had no room to eject it again):
    /// its counts start afresh; its ejections in a row are forgotten once it stays back as
    /// long as its last ejection lasted.
    fn back(&mut self, now: u64) {
        self.health = Health::Healthy;
        self.returned_at = now;
        (self.consecutive, self.requests, self.errors) = (0, 0, 0);
        self.window_start = now;
    }
}

/// The share of a resource's endpoints its `rules` may hold ejected at once: the largest of
/// their `max_ejection_percent` (each rule ejects only within its own).
pub(crate) fn largest_share(rules: &[OutlierRule]) -> f64 {
    (rules.iter())
        .map(|r| r.max_ejection_percent)
        .fold(0.0, f64::max)
}

/// A resource's endpoints: at most `cap`, the least recently seen (a healthy one first) replaced
/// by a new one beyond it.
#[derive(Debug)]
pub(crate) struct EndpointTable {
    cap: usize,
    index: HashMap<Arc<str>, usize>,
    slots: Vec<Endpoint>,
    /// `(seq, slot)`, least recently seen first.
    recency: BTreeSet<(u64, usize)>,
    seq: u64,
    next_generation: u32,
}

impl EndpointTable {
    pub(crate) fn new(cap: usize) -> EndpointTable {
        EndpointTable {
            cap: cap.max(1),
            index: HashMap::new(),
            slots: Vec::new(),
            recency: BTreeSet::new(),
            seq: 0,
            next_generation: 0,
        }
    }

    /// How many endpoints are tracked.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The endpoint's slot, added (replacing the least recently seen when full) if new, marked
    /// seen now. `None`: the name is too long to track.
    fn touch(&mut self, name: &str, now: u64) -> Option<usize> {
        if name.len() > MAX_NAME {
            return None;
        }
        self.seq += 1;
        let seq = self.seq;
        if let Some(&i) = self.index.get(name) {
            let e = &mut self.slots[i];
            self.recency.remove(&(e.seq, i));
            self.recency.insert((seq, i));
            e.seq = seq;
            e.last_seen = e.last_seen.max(now);
            return Some(i);
        }
        self.next_generation = self.next_generation.wrapping_add(1).max(1);
        let name: Arc<str> = name.into();
        let fresh = Endpoint {
            name: Arc::clone(&name),
            generation: self.next_generation,
            seq,
            last_seen: now,
            consecutive: 0,
            window_start: now,
            requests: 0,
            errors: 0,
            health: Health::Healthy,
            ejections: 0,
            backoff: 0,
            base: 0,
            returned_at: 0,
        };
        let i = if self.slots.len() < self.cap {
            self.slots.push(fresh);
            self.slots.len() - 1
        } else {
            let i = self.victim(now);
            let old = std::mem::replace(&mut self.slots[i], fresh);
            self.index.remove(&old.name);
            self.recency.remove(&(old.seq, i));
            i
        };
        self.index.insert(name, i);
        self.recency.insert((seq, i));
        Some(i)
    }

    /// The slot to reuse: the least recently seen endpoint that holds no place in the share,
    /// else the least recently seen.
    fn victim(&self, now: u64) -> usize {
        let mut order = self.recency.iter().map(|&(_, i)| i);
        let first = self.recency.first().map_or(0, |&(_, i)| i);
        order
            .find(|&i| !self.slots[i].holds_share(now))
            .unwrap_or(first)
    }

    /// Decides a call to `name`: its ticket, or the end of the endpoint's ejection if it is
    /// blocked (0: its probe is out). `share` is the rules' [`largest_share`]: an endpoint
    /// whose ejection ended so long ago that it no longer holds a place in it probes only if
    /// the share allows one more; else the call is an ordinary one (the endpoint is back).
    pub(crate) fn admit(&mut self, name: &str, now: u64, share: f64) -> Result<OutlierTicket, u64> {
        let Some(i) = self.touch(name, now) else {
            return Ok(OutlierTicket::default());
        };
        let e = &self.slots[i];
        let probe = match e.health {
            Health::Healthy => false,
            Health::Ejected { until } if now < until => return Err(until),
            Health::Probing { since } if now < since.saturating_add(e.base) => return Err(0),
            // Its ejection is over (or its probe never reported): this call is the probe, if
            // the endpoint still holds its place in the share or the share has room for it.
            Health::Ejected { .. } | Health::Probing { .. } => {
                e.holds_share(now) || self.share_allows(now, share, Some(i))
            }
        };
        let e = &mut self.slots[i];
        if probe {
            e.health = Health::Probing { since: now };
        } else if e.health != Health::Healthy {
            e.back(now);
        }
        Ok(OutlierTicket::new(i, e.generation, probe))
    }

    /// The endpoint of `ticket`, if it still holds its slot.
    fn of(&mut self, ticket: OutlierTicket) -> Option<usize> {
        let i = ticket.slot();
        let e = self.slots.get(i)?;
        (ticket.is_some() && e.generation == ticket.generation()).then_some(i)
    }

    /// Gives back a probe that will not report (blocked by a later check, or abandoned): the
    /// next call probes.
    pub(crate) fn release(&mut self, ticket: OutlierTicket, now: u64) {
        if !ticket.is_probe() {
            return;
        }
        if let Some(i) = self.of(ticket) {
            let e = &mut self.slots[i];
            if let Health::Probing { .. } = e.health {
                e.health = Health::Ejected { until: now };
            }
        }
    }

    /// Counts an admitted call's end: a probe brings its endpoint back or ejects it again for
    /// longer; a healthy endpoint's counts may meet a rule, which ejects it if the share allows.
    pub(crate) fn report(
        &mut self,
        ticket: OutlierTicket,
        now: u64,
        error: bool,
        rules: &[OutlierRule],
    ) -> Option<Change> {
        let i = self.of(ticket)?;
        if ticket.is_probe() {
            let e = &mut self.slots[i];
            if !matches!(e.health, Health::Probing { .. }) {
                return None;
            }
            // A failed probe ejects the endpoint again only within the share (it may have
            // shrunk: a reload lowered it, or fewer endpoints are seen); else it is back too.
            if !error || !self.share_allows(now, largest_share(rules), Some(i)) {
                let e = &mut self.slots[i];
                e.back(now);
                return Some(Change::Returned {
                    endpoint: Arc::clone(&e.name),
                });
            }
            let e = &mut self.slots[i];
            e.ejections = e.ejections.saturating_add(1);
            e.backoff = longer(e.backoff, e.base);
            return Some(self.eject(i, now));
        }
        let e = &mut self.slots[i];
        if e.health != Health::Healthy {
            return None;
        }
        if now.saturating_sub(e.window_start) >= WINDOW_NANOS {
            (e.requests, e.errors, e.window_start) = (0, 0, now);
        }
        e.requests = e.requests.saturating_add(1);
        if error {
            e.errors = e.errors.saturating_add(1);
            e.consecutive = e.consecutive.saturating_add(1);
        } else {
            e.consecutive = 0;
        }
        let (consecutive, requests, errors) = (e.consecutive, e.requests, e.errors);
        let rule = rules
            .iter()
            .find(|r| r.is_met(consecutive, requests, errors))?;
        if !self.share_allows(now, rule.max_ejection_percent, None) {
            return None;
        }
        let e = &mut self.slots[i];
        let base = rule.recovery.as_nanos() as u64;
        // A return that lasted as long as the ejection before it forgets the ejections.
        if now.saturating_sub(e.returned_at) >= e.backoff {
            e.ejections = 0;
        }
        e.base = base;
        e.backoff = match e.ejections {
            0 => base,
            _ => longer(e.backoff, base),
        };
        e.ejections = e.ejections.saturating_add(1);
        Some(self.eject(i, now))
    }

    /// Ejects the endpoint in slot `i` for its `backoff`.
    fn eject(&mut self, i: usize, now: u64) -> Change {
        let e = &mut self.slots[i];
        e.health = Health::Ejected {
            until: now.saturating_add(e.backoff),
        };
        (e.consecutive, e.requests, e.errors) = (0, 0, 0);
        Change::Ejected {
            endpoint: Arc::clone(&e.name),
            nanos: e.backoff,
        }
    }

    /// Whether one more endpoint may be ejected: fewer hold a place in the share
    /// ([`Endpoint::holds_share`]; the one in slot `except` left out) than `share` of those
    /// seen in the last minute (or holding a place), rounded down, or none does.
    fn share_allows(&self, now: u64, share: f64, except: Option<usize>) -> bool {
        let since = now.saturating_sub(SEEN_NANOS);
        let (mut out, mut seen) = (0usize, 0usize);
        for (i, e) in self.slots.iter().enumerate() {
            let holds = e.holds_share(now);
            out += usize::from(holds && Some(i) != except);
            seen += usize::from(holds || e.last_seen >= since);
        }
        let allowed = ((share * seen as f64).floor() as usize).max(1);
        out < allowed
    }

    /// The endpoints ejected now (their calls are blocked), by name.
    pub(crate) fn ejected(&self, now: u64) -> Vec<String> {
        let mut names: Vec<String> = (self.slots.iter())
            .filter(|e| e.is_out(now))
            .map(|e| e.name.to_string())
            .collect();
        names.sort();
        names
    }

    /// Whether `name` is ejected now.
    pub(crate) fn is_ejected(&self, name: &str, now: u64) -> bool {
        self.index
            .get(name)
            .is_some_and(|&i| self.slots[i].is_out(now))
    }
}

/// The ejection after one of `backoff`: twice as long, at most [`MAX_EJECTION_FACTOR`] times
/// `base` and [`MAX_OUTLIER_RECOVERY`], at least `base`.
fn longer(backoff: u64, base: u64) -> u64 {
    let cap = base.saturating_mul(u64::from(MAX_EJECTION_FACTOR));
    let max = MAX_OUTLIER_RECOVERY.as_nanos() as u64;
    backoff.saturating_mul(2).min(cap).min(max).max(base)
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
