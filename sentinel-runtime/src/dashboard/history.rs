//! The last 300 seconds of the busiest resources: one bounded ring of per-second points per
//! resource, at most [`TRACKED`] rings, filled by the sampler from each resource's minute-level
//! window (exact per-second totals, so a late sample loses nothing within a minute).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::metrics::{self, SecondStats};

/// Seconds of history per resource.
pub(crate) const SECONDS: usize = 300;
/// Resources with a history ring: the busiest, by traffic.
pub(crate) const TRACKED: usize = 200;

/// One second of a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Point {
    /// The second on the runtime clock (whole seconds).
    pub(crate) second: u64,
    /// Admitted calls.
    pub(crate) pass: u64,
    /// Rejected calls.
    pub(crate) block: u64,
    /// Calls that ended in an error.
    pub(crate) error: u64,
    /// Average response time of the calls that finished, in milliseconds.
    pub(crate) avg_rt_ms: f64,
    /// Calls the resource's shadow rules would have refused (admitted all the same).
    pub(crate) shadow_block: u64,
}

impl Point {
    fn from_second(s: &SecondStats) -> Point {
        Point {
            second: s.second,
            pass: s.pass,
            block: s.block,
            error: s.error,
            avg_rt_ms: s.avg_rt_ms,
            shadow_block: s.shadow_block,
        }
    }

    fn empty(second: u64) -> Point {
        Point {
            second,
            ..Point::default()
        }
    }
}

/// The rings, by resource.
#[derive(Default)]
pub(crate) struct History {
    rings: Mutex<HashMap<&'static str, VecDeque<Point>>>,
}

impl History {
    /// Brings the rings of `busiest` (at most [`TRACKED`] names, busiest first) up to the
    /// second before `now_second`, and drops the rings of every other resource.
    pub(crate) fn update(&self, busiest: &[&'static str], now_second: u64) {
        let mut rings = self.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let keep: HashSet<&str> = busiest.iter().take(TRACKED).copied().collect();
        rings.retain(|name, _| keep.contains(name));
        for &name in busiest.iter().take(TRACKED) {
            let Some(seconds) = metrics::last_minute(name) else {
                continue;
            };
            let ring = rings.entry(name).or_default();
            append(ring, &seconds, now_second);
        }
    }

    /// The last [`SECONDS`] completed seconds of `name` (oldest first, one point a second from
    /// the first second seen), or `None` if no resource has that name. An untracked resource
    /// has its last minute only.
    pub(crate) fn series(&self, name: &str, now_second: u64) -> Option<Vec<Point>> {
        let seconds = metrics::last_minute(name)?;
        let rings = self.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ring = rings.get(name).cloned().unwrap_or_default();
        drop(rings);
        append(&mut ring, &seconds, now_second);
        Some(ring.into())
    }

    /// How many rings there are (for tests of the bound).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Appends the completed seconds of `seconds` (seconds that saw traffic, oldest first) newer
/// than the ring's last point, with an empty point for each quiet second between, keeping the
/// last [`SECONDS`].
fn append(ring: &mut VecDeque<Point>, seconds: &[SecondStats], now_second: u64) {
    let mut next = match ring.back() {
        Some(last) => last.second + 1,
        None => match seconds.first() {
            Some(first) => first.second,
            None => return,
        },
    };
    // Nothing older than the ring can hold is worth filling in.
    let oldest = now_second.saturating_sub(SECONDS as u64);
    if next < oldest {
        ring.clear();
        next = oldest;
    }
    let mut traffic = seconds
        .iter()
        .filter(|s| s.second >= next && s.second < now_second)
        .peekable();
    for second in next..now_second {
        let point = match traffic.peek() {
            Some(s) if s.second == second => {
                let p = Point::from_second(s);
                traffic.next();
                p
            }
            _ => Point::empty(second),
        };
        if ring.len() == SECONDS {
            ring.pop_front();
        }
        ring.push_back(point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(second: u64, pass: u64) -> SecondStats {
        SecondStats {
            second,
            pass,
            block: 0,
            complete: 0,
            error: 0,
            avg_rt_ms: 0.0,
            min_rt_ms: 0.0,
            shadow_block: 0,
        }
    }

    /// However many resources are busy, at most [`TRACKED`] rings of at most [`SECONDS`] points.
    #[test]
    fn rings_are_kept_for_the_busiest_200_only() {
        // The counts are read at the clock's time: a mock clock another test installed between
        // the entries and the reads would move it, so this test holds the mock clock too.
        let _clock = crate::clock::MockClock::install();
        let names: Vec<&'static str> = (0..450)
            .map(|i| {
                let name: &'static str = Box::leak(format!("history-bound-{i}").into_boxed_str());
                drop(crate::entry(name));
                name
            })
            .collect();
        let history = History::default();
        let now = crate::clock::now_nanos() / 1_000_000_000 + 2;
        history.update(&names, now);
        assert_eq!(history.len(), TRACKED);
        history.update(&names[250..], now + 1);
        assert_eq!(history.len(), TRACKED);
        assert!(history.series("history-bound-0", now).is_some()); // untracked: its last minute
        let rings = history.rings.lock().unwrap();
        assert!(rings.keys().all(|n| names[250..450].contains(n)));
        assert!(rings.values().all(|r| r.len() <= SECONDS && !r.is_empty()));
    }

    #[test]
    fn quiet_seconds_are_filled_and_the_ring_keeps_300() {
        let mut ring = VecDeque::new();
        append(&mut ring, &[sec(10, 1), sec(12, 3), sec(14, 9)], 14);
        let got: Vec<(u64, u64)> = ring.iter().map(|p| (p.second, p.pass)).collect();
        assert_eq!(got, vec![(10, 1), (11, 0), (12, 3), (13, 0)]); // 14 is not complete
        append(&mut ring, &[sec(12, 3), sec(14, 9)], 16);
        let got: Vec<(u64, u64)> = ring.iter().map(|p| (p.second, p.pass)).collect();
        assert_eq!(got.len(), 6);
        assert_eq!(got[4..], [(14, 9), (15, 0)]);
        append(&mut ring, &[], 1_000);
        assert_eq!(ring.len(), SECONDS);
        assert_eq!(ring.front().unwrap().second, 700);
        assert_eq!(ring.back().unwrap().second, 999);
    }
}
