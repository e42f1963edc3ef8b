//! Block rates that add up: a resource's blocks per second, each kind's, and its shadow
//! blocks per second, all from its running totals over one interval, from a reading at least
//! [`MIN_INTERVAL`] old to now. The readings are taken by the sampler (once a second) and by
//! each listing of resources, on the runtime's clock; a few per resource, for a bounded number
//! of resources.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, PoisonError};

use super::history::TRACKED;
use crate::metrics::ResourceStats;
use crate::stat::BlockTotals;

/// The shortest interval a rate is taken over.
pub(crate) const MIN_INTERVAL: u64 = 1_000_000_000;
/// Readings older than this are dropped (keeping the newest that is at least
/// [`MIN_INTERVAL`] old).
const KEEP: u64 = 10_000_000_000;
/// The least time between two readings kept (but the newest).
const SPACING: u64 = MIN_INTERVAL / 4;
/// Readings kept per resource.
const PER_RESOURCE: usize = 8;
/// Resources with readings.
const MAX_RESOURCES: usize = 4 * TRACKED;

/// A resource's totals at one time.
#[derive(Clone, Copy, Debug)]
struct Reading {
    /// The runtime clock's time, in nanoseconds.
    at: u64,
    /// Blocks by kind, in the order of [`BlockTotals::RULES`].
    blocks: [u64; BlockTotals::RULES.len()],
    /// Calls its shadow rules would have blocked.
    shadow: u64,
}

impl Reading {
    fn of(at: u64, s: &ResourceStats) -> Reading {
        Reading {
            at,
            blocks: s.block_total_by_rule.by_rule().map(|(_, n)| n),
            shadow: s.shadow_block_total,
        }
    }
}

/// A resource's rates over one interval.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rate {
    /// The interval's length, in seconds (at least [`MIN_INTERVAL`]).
    pub(crate) over_s: f64,
    /// Blocks per second: the sum of `by_rule`'s.
    pub(crate) blocked: f64,
    /// Blocks per second by kind of rule, the kinds that blocked only.
    pub(crate) by_rule: Vec<(&'static str, f64)>,
    /// Calls its shadow rules would have blocked, per second.
    pub(crate) shadow: f64,
}

/// The readings of the resources, by name.
#[derive(Default)]
pub(crate) struct Readings(Mutex<HashMap<&'static str, VecDeque<Reading>>>);

/// The process's readings, shared by its dashboards (a reading is a fact about the process).
pub(crate) static READINGS: LazyLock<Readings> = LazyLock::new(Readings::default);

impl Readings {
    /// Records each resource's totals at `now` (nanoseconds on the runtime clock), and drops the
    /// readings older than [`KEEP`].
    pub(crate) fn record<'a>(
        &self,
        now: u64,
        rows: impl Iterator<Item = (&'static str, &'a ResourceStats)>,
    ) {
        let mut readings = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, stats) in rows {
            if !readings.contains_key(name) && readings.len() >= MAX_RESOURCES {
                continue;
            }
            let ring = readings.entry(name).or_default();
            // A clock set back (a test's mock clock): what was read "later" means nothing now.
            ring.retain(|r| r.at <= now);
            // Readings kept at least SPACING apart (but the newest), so the few kept reach back
            // over a second however often the resources are listed.
            let n = ring.len();
            if ring.back().is_some_and(|r| r.at == now)
                || (n >= 2 && ring[n - 1].at - ring[n - 2].at < SPACING)
            {
                ring.pop_back();
            }
            ring.push_back(Reading::of(now, stats));
            // The oldest go, keeping one at least MIN_INTERVAL old while it is within KEEP.
            while ring.len() > PER_RESOURCE
                || (ring.len() > 1 && (now - ring[0].at > KEEP || now - ring[1].at >= MIN_INTERVAL))
            {
                ring.pop_front();
            }
        }
        readings.retain(|_, ring| {
            ring.back()
                .is_some_and(|r| now.saturating_sub(r.at) <= KEEP)
        });
    }

    /// `name`'s rates from its newest reading at least [`MIN_INTERVAL`] before `now` to `stats`,
    /// its totals at `now`; `None` without such a reading.
    pub(crate) fn rate(&self, name: &str, now: u64, stats: &ResourceStats) -> Option<Rate> {
        let readings = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let then = readings
            .get(name)?
            .iter()
            .rev()
            .find(|r| r.at <= now && now - r.at >= MIN_INTERVAL)
            .copied()?;
        drop(readings);
        let over_s = (now - then.at) as f64 / 1e9;
        let by_rule: Vec<(&'static str, f64)> = stats
            .block_total_by_rule
            .by_rule()
            .iter()
            .zip(then.blocks)
            .map(|(&(kind, n), before)| (kind, n.saturating_sub(before)))
            .filter(|&(_, d)| d > 0)
            .map(|(kind, d)| (kind, d as f64 / over_s))
            .collect();
        let blocked_count: u64 = stats
            .block_total_by_rule
            .by_rule()
            .iter()
            .zip(then.blocks)
            .map(|(&(_, n), before)| n.saturating_sub(before))
            .sum();
        Some(Rate {
            over_s,
            blocked: blocked_count as f64 / over_s,
            by_rule,
            shadow: stats.shadow_block_total.saturating_sub(then.shadow) as f64 / over_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::BlockTotals;

    fn stats(flow: u64, hotspot: u64, shadow: u64) -> ResourceStats {
        let mut s = crate::metrics::overflow();
        s.block_total_by_rule = BlockTotals {
            flow,
            hotspot,
            ..BlockTotals::default()
        };
        s.shadow_block_total = shadow;
        s
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn rates_add_up_over_one_interval_of_at_least_a_second() {
        let (r, name) = (Readings::default(), "rates-unit-add-up");
        r.record(100 * S, [(name, &stats(10, 4, 0))].into_iter());
        // Under a second later: no rate yet.
        assert_eq!(r.rate(name, 100 * S + S / 2, &stats(12, 4, 0)), None);
        r.record(100 * S + S / 2, [(name, &stats(12, 4, 0))].into_iter());
        // 2 s after the first reading (1.5 s after the second): over the newest a second old.
        let got = r.rate(name, 102 * S, &stats(30, 10, 3)).expect("a rate");
        assert_eq!(got.over_s, 1.5);
        assert_eq!(got.by_rule, vec![("flow", 12.0), ("hotspot", 4.0)]);
        assert_eq!(got.blocked, 16.0);
        assert_eq!(got.shadow, 2.0);
        let sum: f64 = got.by_rule.iter().map(|(_, v)| v).sum();
        assert_eq!(sum, got.blocked);
    }

    #[test]
    fn readings_are_bounded_and_a_clock_set_back_forgets_them() {
        let (r, name) = (Readings::default(), "rates-unit-bounded");
        for i in 0..100 {
            r.record(
                1_000 * S + i * S / 10,
                [(name, &stats(i, 0, 0))].into_iter(),
            );
        }
        {
            let readings = r.0.lock().unwrap();
            let ring = &readings[name];
            assert!(ring.len() <= PER_RESOURCE, "{}", ring.len());
            // One reading at least a second old stays.
            let now = 1_000 * S + 99 * S / 10;
            assert!(ring.iter().any(|r| now - r.at >= MIN_INTERVAL));
        }
        r.record(5 * S, [(name, &stats(0, 0, 0))].into_iter());
        assert_eq!(r.0.lock().unwrap()[name].len(), 1);
        // Resources not read for KEEP are forgotten.
        r.record(5 * S + KEEP + S, std::iter::empty());
        assert!(!r.0.lock().unwrap().contains_key(name));
    }
}
