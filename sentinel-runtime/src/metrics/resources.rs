//! One resource's statistics ([`snapshot`], [`last_minute`]), every resource's ([`all`]), and
//! those of the entries beyond the cap ([`overflow`]) and of the inbound traffic ([`inbound`]).

use crate::clock;
use crate::registry;
use crate::stat::{avg_rt_ms, MetricEvent, ResourceStats, SecondTotals, NO_MIN};

/// The statistics of `resource`, or `None` if no node of that name exists. Allocates nothing.
///
/// ```
/// let _ = sentinel_runtime::entry("doc-snapshot");
/// let stats = sentinel_runtime::metrics::snapshot("doc-snapshot").unwrap();
/// assert!(stats.pass_qps >= 1.0);
/// ```
pub fn snapshot(resource: &str) -> Option<ResourceStats> {
    registry::get(resource).map(|node| node.snapshot())
}

/// Every resource with its statistics, sorted by name.
pub fn all() -> Vec<(String, ResourceStats)> {
    let mut out: Vec<(String, ResourceStats)> = registry::all()
        .into_iter()
        .map(|node| (node.name().to_owned(), node.snapshot()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The statistics of the entries beyond the cap on resources
/// ([`registry::set_max_resources`]): new names that got no
/// node of their own, counted together. Their entries pass unchecked.
///
/// ```
/// let overflow = sentinel_runtime::metrics::overflow();
/// assert_eq!(overflow.block_qps, 0.0); // never blocked: no rules apply to them
/// ```
pub fn overflow() -> ResourceStats {
    registry::overflow().snapshot()
}

/// The statistics of the process's **inbound** traffic, every resource together: the entries
/// marked [`inbound`](crate::EntryBuilder::inbound) (the tower layer's requests, the attribute's
/// `inbound = true`), as the system rules ([`SystemRule`](crate::rules::SystemRule)) read them.
///
/// ```
/// use sentinel_runtime::{metrics, EntryBuilder};
/// let before = metrics::inbound().pass_total;
/// drop(EntryBuilder::new("doc-inbound-stats").inbound().enter());
/// assert!(metrics::inbound().pass_total > before);
/// ```
pub fn inbound() -> ResourceStats {
    let stats = crate::stat::inbound();
    ResourceStats::from_totals(stats.window(clock::now_nanos()), None).with_running(stats.totals())
}

/// How many values the hotspot rules of `resource` forgot while they were still being limited
/// (their tables were full of live values); `None` if no node of that name exists. See
/// [`HotspotRule`](crate::rules::HotspotRule).
pub fn hotspot_live_evictions(resource: &str) -> Option<u64> {
    registry::get(resource).map(|node| node.hotspot_live_evictions())
}

/// The totals of one second, from the minute-level window.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SecondStats {
    /// The second's start on the runtime clock, in whole seconds.
    pub second: u64,
    /// Admitted calls.
    pub pass: u64,
    /// Rejected calls.
    pub block: u64,
    /// Finished calls.
    pub complete: u64,
    /// Calls that finished with an error or a panic.
    pub error: u64,
    /// Average response time of the finished calls, in milliseconds.
    pub avg_rt_ms: f64,
    /// The shortest response time, in milliseconds (0 if none finished).
    pub min_rt_ms: f64,
    /// Calls the resource's shadow rules would have refused (none was: they are among the
    /// admitted calls), all kinds of rule together.
    pub shadow_block: u64,
}

impl SecondStats {
    fn from_totals(t: &SecondTotals) -> SecondStats {
        let c = |e: MetricEvent| t.counts[e as usize];
        SecondStats {
            second: t.start / 1_000_000_000,
            pass: c(MetricEvent::Pass),
            block: c(MetricEvent::Block),
            complete: c(MetricEvent::Complete),
            error: c(MetricEvent::Error),
            avg_rt_ms: avg_rt_ms(c(MetricEvent::RtSum), c(MetricEvent::Complete)),
            min_rt_ms: match c(MetricEvent::MinRt) {
                NO_MIN => 0.0,
                us => us as f64 / 1_000.0,
            },
            shadow_block: 0,
        }
    }
}

/// The last 60 seconds of `resource`, one entry per second that saw traffic, oldest first; the
/// current (partial) second is included. `None` if no node of that name exists.
pub fn last_minute(resource: &str) -> Option<Vec<SecondStats>> {
    let node = registry::get(resource)?;
    let seconds = node.stats().minute_totals(clock::now_nanos());
    let shadow = node.stats().shadow();
    let second = |t: &SecondTotals| {
        let mut s = SecondStats::from_totals(t);
        s.shadow_block = shadow.blocks_in_second(s.second);
        s
    };
    Some(seconds.iter().map(second).collect())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::clock::MockClock;
    use crate::rules::{self, FlowRule};
    use crate::{entry, BlockKind};

    /// The totals count every call made through the public entry path, over minutes of traffic
    /// with idle gaps longer than every window, blocks of two rule kinds, errors and exact
    /// response times (the mock clock moves only when told).
    #[test]
    fn totals_equal_the_calls_made_over_minutes_with_idle_gaps() {
        const R: &str = "metrics-test-totals";
        let clock = MockClock::install();
        rules::load_flow_rules(vec![FlowRule::qps(R, 5.0), FlowRule::concurrency(R, 2)]).unwrap();
        let (mut pass, mut flow, mut concurrency, mut error) = (0u64, 0u64, 0u64, 0u64);
        let mut rt = Duration::ZERO;
        for second in 0..200u64 {
            // Idle gaps: a minute and a half now and then, else 1 s.
            clock.advance(Duration::from_millis(if second % 37 == 0 {
                90_000
            } else {
                1_000
            }));
            for i in 0..(second % 9) {
                match entry(R) {
                    Ok(e) => {
                        pass += 1;
                        // A third call while two are inside: blocked by the concurrency limit.
                        if i == 0 {
                            let inner = entry(R).unwrap();
                            pass += 1;
                            let err = entry(R).unwrap_err();
                            assert_eq!(err.kind(), BlockKind::Concurrency);
                            concurrency += 1;
                            drop(inner);
                        }
                        let held = Duration::from_millis(1 + second % 13);
                        clock.advance(held);
                        rt += held;
                        if i % 3 == 1 {
                            e.set_error();
                            error += 1;
                        }
                    }
                    Err(err) => {
                        assert_eq!(err.kind(), BlockKind::Flow);
                        flow += 1;
                    }
                }
            }
            let at = clock.elapsed();
            let Some(s) = super::snapshot(R) else {
                assert_eq!(pass + flow, 0, "no node at {at:?}");
                continue;
            };
            assert_eq!(s.pass_total, pass, "pass at {at:?}");
            assert_eq!(s.complete_total, pass, "complete at {at:?}");
            assert_eq!(s.error_total, error, "error at {at:?}");
            assert_eq!(s.block_total, flow + concurrency, "block at {at:?}");
            assert_eq!(s.block_total_by_rule.flow, flow, "flow blocks at {at:?}");
            assert_eq!(s.block_total_by_rule.concurrency, concurrency, "at {at:?}");
            assert_eq!(s.block_total_by_rule.sum(), s.block_total, "at {at:?}");
            assert_eq!(s.rt_total, rt, "rt at {at:?}");
        }
        assert!(
            flow > 100 && concurrency > 100 && error > 100,
            "{flow} {concurrency} {error}"
        );
        rules::load_flow_rules(vec![]).unwrap();
    }
}
