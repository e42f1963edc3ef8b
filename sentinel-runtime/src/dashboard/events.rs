//! The events a dashboard streams (`GET /api/events`): a small bounded broadcast per dashboard,
//! fed by the breaker listener (every transition, at once) and by the sampler (blocks
//! aggregated per second, rule loads and refusals by their counters, and what rule watchers
//! said: a source unreachable or without a document, a document that removed every rule).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::breaker::{self, CircuitState, StateChange};
use crate::rules::source::notices;
use crate::stat::BlockTotals;

/// The most resources one `blocks` event lists (the most blocked first; `more` counts the
/// rest), so an event stays small whatever the number of resources.
pub(crate) const MAX_BLOCKED_LISTED: usize = 100;

/// Events buffered per dashboard; a subscriber that falls further behind skips the oldest
/// (and is told how many it missed).
pub(crate) const CAPACITY: usize = 256;

/// Breaker transitions a dashboard remembers for the page (the latest last).
pub(crate) const RECENT_TRANSITIONS: usize = 20;

/// One dashboard's events: JSON text, shared by every subscriber; and the latest breaker
/// transitions, for a page opened after them.
pub(crate) struct Bus {
    tx: broadcast::Sender<Arc<str>>,
    transitions: Mutex<VecDeque<Value>>,
}

/// The buses of the running dashboards, for the breaker listener (registered once per
/// process: listeners cannot be removed).
static BUSES: Mutex<Vec<Weak<Bus>>> = Mutex::new(Vec::new());
static LISTENER: Once = Once::new();

impl Bus {
    /// A bus that also receives every circuit-breaker transition while it lives.
    pub(crate) fn new() -> Arc<Bus> {
        let (tx, _) = broadcast::channel(CAPACITY);
        let bus = Arc::new(Bus {
            tx,
            transitions: Mutex::new(VecDeque::with_capacity(RECENT_TRANSITIONS)),
        });
        let mut buses = BUSES.lock().unwrap_or_else(PoisonError::into_inner);
        buses.retain(|b| b.strong_count() > 0);
        buses.push(Arc::downgrade(&bus));
        drop(buses);
        LISTENER.call_once(|| breaker::on_state_change(on_transition));
        bus
    }

    /// Sends `event` (with its `type`) to every subscriber; none is fine.
    pub(crate) fn send(&self, event: Value) {
        let _ = self.tx.send(Arc::from(event.to_string()));
    }

    /// The latest [`RECENT_TRANSITIONS`] breaker transitions, oldest first.
    pub(crate) fn recent_transitions(&self) -> Vec<Value> {
        let t = self
            .transitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        t.iter().cloned().collect()
    }

    fn remember(&self, transition: &Value) {
        let mut t = self
            .transitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if t.len() == RECENT_TRANSITIONS {
            t.pop_front();
        }
        t.push_back(transition.clone());
    }

    /// A new subscriber, from the next event on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.tx.subscribe()
    }
}

/// The breaker listener: runs on the thread that caused the transition, so it only formats
/// and sends (a broadcast send never waits for subscribers).
fn on_transition(change: &StateChange) {
    let buses: Vec<Arc<Bus>> = BUSES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    // No dashboard running (the listener stays registered): nothing to format.
    if buses.is_empty() {
        return;
    }
    let event = json!({
        "type": "breaker",
        "resource": change.resource,
        "from": state_name(change.from),
        "to": state_name(change.to),
        "figure": change.figure,
        "words": if change.shadow {
            format!("shadow breaker, nothing blocked: {}", super::words::transition(change))
        } else {
            super::words::transition(change)
        },
        "shadow": change.shadow,
        "at_ms": change.at_nanos / 1_000_000,
    });
    for bus in buses {
        bus.remember(&event);
        bus.send(event.clone());
    }
}

/// A breaker state as the API writes it.
pub(crate) fn state_name(state: CircuitState) -> &'static str {
    match state {
        CircuitState::Closed => "closed",
        CircuitState::HalfOpen => "half_open",
        CircuitState::Open => "open",
    }
}

/// What the sampler saw last, to turn running totals into per-second events. Bounded as the
/// registry is: one entry per resource that has been blocked at least once.
#[derive(Default)]
pub(crate) struct Deltas {
    blocks: HashMap<&'static str, [u64; BlockTotals::RULES.len()]>,
    loads: HashMap<(&'static str, bool), u64>,
    /// The number of the last watcher notice seen.
    notices: u64,
    primed: bool,
}

impl Deltas {
    /// The `blocks` event for the blocks since the last call (`None` if there were none), from
    /// each resource's blocks by rule kind. The first call only records the totals.
    pub(crate) fn blocks<'a>(
        &mut self,
        second: u64,
        totals: impl Iterator<Item = (&'static str, &'a BlockTotals)>,
    ) -> Option<Value> {
        let mut resources = Vec::new();
        for (name, by_rule) in totals {
            if by_rule.sum() == 0 {
                continue;
            }
            let now = by_rule.by_rule().map(|(_, n)| n);
            let before = (self.blocks.insert(name, now)).unwrap_or([0; BlockTotals::RULES.len()]);
            let since: Vec<(&str, u64)> = BlockTotals::RULES
                .iter()
                .zip(now.iter().zip(before))
                .map(|(rule, (n, b))| (*rule, n.saturating_sub(b)))
                .filter(|&(_, d)| d > 0)
                .collect();
            if since.is_empty() || !self.primed {
                continue;
            }
            let total: u64 = since.iter().map(|(_, d)| d).sum();
            resources.push((total, name, since));
        }
        if resources.is_empty() {
            return None;
        }
        resources.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let more = resources.len().saturating_sub(MAX_BLOCKED_LISTED);
        let listed: Vec<Value> = resources
            .into_iter()
            .take(MAX_BLOCKED_LISTED)
            .map(|(total, name, since)| {
                let by_rule: serde_json::Map<String, Value> = since
                    .into_iter()
                    .map(|(rule, d)| (rule.to_owned(), json!(d)))
                    .collect();
                json!({ "resource": name, "blocked": total, "by_rule": by_rule })
            })
            .collect();
        let mut event = json!({ "type": "blocks", "second": second, "resources": listed });
        if more > 0 {
            event["more"] = json!(more);
        }
        Some(event)
    }

    /// One `rule_load` event per kind whose loads (or refusals) grew since the last call, then
    /// one `rule_source` event per notice of a rule watcher since the last call (`seq`: its
    /// number, `source`: the source's name, `words`: what happened).
    pub(crate) fn rule_loads(&mut self, counts: Vec<(&'static str, bool, u64)>) -> Vec<Value> {
        let mut out = self.load_counts(counts);
        let (last, notices) = notices::since(self.notices);
        self.notices = last;
        if self.primed {
            out.extend(
                notices.into_iter().map(
                    |n| json!({ "type": "rule_source", "seq": n.seq, "source": n.source, "words": n.words }),
                ),
            );
        }
        out
    }

    fn load_counts(&mut self, counts: Vec<(&'static str, bool, u64)>) -> Vec<Value> {
        let mut out = Vec::new();
        for (kind, loaded, n) in counts {
            let before = self.loads.insert((kind, loaded), n).unwrap_or(0);
            if self.primed && n > before {
                out.push(json!({
                    "type": "rule_load",
                    "kind": kind,
                    "loaded": loaded,
                    "count": n - before,
                }));
            }
        }
        out
    }

    /// Marks the end of a sample: from now on, differences are events.
    pub(crate) fn prime(&mut self) {
        self.primed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_the_differences_after_the_first_sample() {
        let mut d = Deltas::default();
        let t1 = BlockTotals {
            flow: 3,
            ..BlockTotals::default()
        };
        assert!(d.blocks(1, [("a", &t1)].into_iter()).is_none());
        d.prime();
        assert!(d.blocks(2, [("a", &t1)].into_iter()).is_none());
        let t2 = BlockTotals {
            flow: 5,
            circuit_breaker: 1,
            ..BlockTotals::default()
        };
        let e = d.blocks(3, [("a", &t2)].into_iter()).unwrap();
        assert_eq!(
            e,
            json!({"type": "blocks", "second": 3, "resources": [
                {"resource": "a", "blocked": 3, "by_rule": {"flow": 2, "circuit_breaker": 1}}
            ]})
        );
    }

    #[test]
    fn a_blocks_event_lists_the_most_blocked_100() {
        let mut d = Deltas::default();
        let names: Vec<&'static str> = (0..150)
            .map(|i| &*Box::leak(format!("r{i:03}").into_boxed_str()))
            .collect();
        let zero = BlockTotals::default();
        let _ = d.blocks(1, names.iter().map(|n| (*n, &zero)));
        d.prime();
        let totals: Vec<BlockTotals> = (0..150u64)
            .map(|i| BlockTotals {
                flow: i + 1,
                ..BlockTotals::default()
            })
            .collect();
        let e = d
            .blocks(2, names.iter().copied().zip(totals.iter()))
            .unwrap();
        let listed = e["resources"].as_array().unwrap();
        assert_eq!(listed.len(), MAX_BLOCKED_LISTED);
        assert_eq!(listed[0]["resource"], "r149");
        assert_eq!(listed[0]["blocked"], 150);
        assert_eq!(listed[99]["resource"], "r050");
        assert_eq!(e["more"], 50);
    }

    #[test]
    fn watcher_notices_are_events_from_the_first_sample_on() {
        notices::keep(std::path::Path::new("events-unit-before"), "said before");
        let mut d = Deltas::default();
        let _ = d.rule_loads(Vec::new());
        d.prime();
        let (before, _) = notices::since(u64::MAX);
        notices::keep(std::path::Path::new("events-unit-after"), "said after");
        let events = d.rule_loads(Vec::new());
        let mine: Vec<&Value> = events
            .iter()
            .filter(|e| {
                e["source"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("events-unit"))
            })
            .collect();
        assert_eq!(mine.len(), 1, "{events:?}");
        let seq = mine[0]["seq"].as_u64().expect("a number");
        assert!(seq > before, "{seq} after {before}");
        assert_eq!(
            *mine[0],
            json!({"type": "rule_source", "seq": seq, "source": "events-unit-after",
                   "words": "said after"})
        );
        assert!(d
            .rule_loads(Vec::new())
            .iter()
            .all(|e| e["source"] != "events-unit-after"));
    }

    #[test]
    fn rule_loads_report_what_grew() {
        let mut d = Deltas::default();
        assert!(d.load_counts(vec![("flow", true, 2)]).is_empty());
        d.prime();
        assert!(d.load_counts(vec![("flow", true, 2)]).is_empty());
        let e = d.load_counts(vec![("flow", true, 2), ("rule_set", false, 1)]);
        assert_eq!(
            e,
            vec![json!({"type": "rule_load", "kind": "rule_set", "loaded": false, "count": 1})]
        );
    }
}
