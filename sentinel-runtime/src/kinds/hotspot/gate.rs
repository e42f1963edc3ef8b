//! The hotspot check: one [`HotspotGate`] per hotspot rule in force, limiting each value of one
//! parameter separately through a bounded [`ParamTable`].

use std::sync::Arc;
use std::time::Duration;

use crate::error::{BlockError, BlockKind};
use crate::kinds::hotspot::cluster::ClusterHot;
use crate::kinds::hotspot::hot_top::{BlockedTop, Counted};
use crate::kinds::hotspot::rule::{
    interval_nanos, strict_interval_nanos, HotspotMetric, HotspotRule,
};
use crate::param::Params;
use crate::slot::param_table::{Full, Kind, Located, ParamTable, Place, RateDecision};

/// What makes two hotspot rules need different tables. Everything else (thresholds, burst,
/// window, wait, exceptions) is per gate: a reload builds a new gate on the table in force, so
/// every value's state is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HotspotShape {
    param_index: usize,
    metric: HotspotMetric,
    capacity: usize,
}

impl HotspotShape {
    pub(crate) fn of(rule: &HotspotRule) -> HotspotShape {
        HotspotShape {
            param_index: rule.param_index,
            metric: rule.metric,
            capacity: rule.capacity,
        }
    }
}

/// Which gate of `old` each of `rules` takes over (its index in `old`; `None`: a new table), so
/// that every value keeps its state across a reload: the gate of an identical rule (a rule kept,
/// wherever it moved in the list), then a gate of the same [shape](HotspotShape) counting over
/// the same window (a threshold or exceptions change: the values' debts mean the same), then
/// any gate of the same shape (a window change). So a 100/min rule does not take over a 10/s
/// sibling's table (a second's debt at most) when the 10/s rule is dropped.
pub(crate) fn successions(old: &[HotspotGate], rules: &[HotspotRule]) -> Vec<Option<usize>> {
    crate::slot::succession::assign(
        old,
        rules,
        &[
            |gate, rule| gate.is_of(rule),
            |gate, rule| gate.fits(&HotspotShape::of(rule)) && gate.counts_over_window_of(rule),
            |gate, rule| gate.fits(&HotspotShape::of(rule)),
        ],
    )
}

/// The GCRA parameters of a threshold: emission interval and tolerance, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pace {
    /// `window / threshold`, rounded up (never faster than the rule), at least 1;
    /// `u64::MAX` for a threshold of 0 (nothing passes).
    interval: u64,
    /// `(max(floor(threshold), 1) + burst - 1) x interval`: from idle, `threshold + burst`
    /// calls pass at once.
    tolerance: u64,
}

impl Pace {
    /// The default pace, or the strict one: interval `window / (floor(threshold) - burst)`
    /// (below a threshold of 1, `window / threshold`) and tolerance `burst x interval`, so that
    /// `1 + burst` calls pass at once from idle and no interval of `window`'s length holds more
    /// than the threshold's whole calls.
    fn of(threshold: f64, burst: u32, window: Duration, strict: bool) -> Pace {
        if threshold <= 0.0 {
            return Pace {
                interval: u64::MAX,
                tolerance: 0,
            };
        }
        let clamp = |n: u128| n.min(u128::from(u64::MAX)) as u64;
        if strict {
            let interval = strict_interval_nanos(threshold, burst, window);
            // (A threshold below 1 has no burst: validation refuses one.)
            return Pace {
                interval: clamp(interval),
                tolerance: clamp(u128::from(burst) * interval),
            };
        }
        let interval = interval_nanos(threshold, window);
        let calls = (threshold.floor() as u128).max(1) + u128::from(burst) - 1;
        Pace {
            interval: clamp(interval),
            tolerance: clamp(calls * interval),
        }
    }
}

/// A hotspot rule in force on a node: its table, shared with the gates of earlier and later
/// loads of a rule of the same [shape](HotspotShape), and the rule's paces, fixed for the gate's
/// life (a reload builds a new gate; entries exit through the gate they entered by).
#[derive(Clone, Debug)]
pub(crate) struct HotspotGate {
    /// The rule's parameter, metric and capacity (read on every call).
    shape: HotspotShape,
    /// The rule: its threshold as given, for the error, and to find its table again at a
    /// reload ([`is_of`](Self::is_of)).
    rule: HotspotRule,
    table: Arc<ParamTable>,
    pace: Pace,
    max_wait: u64,
    /// The concurrency limit per value.
    limit: u64,
    /// The listed values with their own pace (or limit); each is pinned in the table.
    exceptions: Vec<Exception>,
    /// The values blocked most in the last minute, shared with the gates of later loads on
    /// the same table (written only when a call is blocked).
    blocked: Arc<BlockedTop>,
    /// The rule's cluster part (a QPS rule marked `cluster`): leased tokens per value.
    cluster: Option<ClusterHot>,
}

/// A value's quota under a hotspot rule, for a RateLimit header ([`HotspotGate::quota_of`]).
#[cfg(feature = "tower")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HotQuota {
    /// The value's hash.
    pub(crate) key: u64,
    /// Calls allowed per window.
    pub(crate) quota: u64,
    pub(crate) window_secs: u64,
    /// Calls that would pass at once now (at most `quota`).
    pub(crate) remaining: u64,
    /// Nanoseconds until one more would (0: the quota is whole).
    pub(crate) next_in: u64,
}

/// What a hotspot rule blocked most in the last minute (see [`HotspotGate::blocked_top`]).
#[derive(Debug)]
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) struct BlockedValues {
    /// The rule's parameter.
    pub(crate) param_index: usize,
    /// The rule's threshold.
    pub(crate) threshold: f64,
    /// The values, most blocked first, with their text where the rule lists them as
    /// exceptions with a text.
    pub(crate) top: Vec<(Counted, Option<String>)>,
    /// Blocks not recorded (another block held the summary at that instant).
    pub(crate) missed: u64,
}

/// A listed value of a gate.
#[derive(Clone, Debug)]
struct Exception {
    key: u64,
    pace: Pace,
    limit: u64,
    /// Its threshold as given, for the error.
    given: f64,
}

/// A hotspot gate's admission of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HotPass {
    /// The rule does not apply (the call has no such parameter).
    Free,
    /// Counted in the value's rate; `turn` is when the call may pass (0: now).
    Rate { key: u64, turn: u64 },
    /// Took a place in the value's concurrency counter.
    Inside(Place),
}

/// What the hotspot gates admitted, by gate index in the chain: the first inline (a resource
/// rarely has more than one hotspot rule, and a call's passes must not cost an allocation), any
/// more on the heap.
#[derive(Debug, Default)]
pub(crate) struct HotPasses {
    first: Option<(usize, HotPass)>,
    /// Boxed: an absent one is a single null word to set and to drop on every entry (an empty
    /// `Vec` is three words to write and a capacity to test); the extra allocation is only for
    /// a call passing two or more hotspot rules.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<(usize, HotPass)>>>,
}

impl HotPasses {
    pub(crate) fn push(&mut self, gate: usize, pass: HotPass) {
        if self.first.is_none() {
            self.first = Some((gate, pass));
        } else {
            self.more
                .get_or_insert_with(Box::default)
                .push((gate, pass));
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Whether a pass took a place in a concurrency counter.
    #[inline]
    pub(crate) fn holds_places(&self) -> bool {
        // The first pass looked at directly: on the path of every entry, where an iterator
        // chain over both parts is not folded away.
        let inside = |(_, pass): &(usize, HotPass)| matches!(pass, HotPass::Inside(_));
        self.first.as_ref().is_some_and(inside)
            || self
                .more
                .as_ref()
                .is_some_and(|more| more.iter().any(inside))
    }

    /// Every pass, in the order the gates admitted them.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(usize, HotPass)> + '_ {
        self.first
            .iter()
            .chain(self.more.iter().flat_map(|more| more.iter()))
    }

    /// Takes every pass out, the latest first (the order to give them back in).
    pub(crate) fn drain_latest_first(&mut self) -> impl Iterator<Item = (usize, HotPass)> + use<> {
        let more = self.more.take().map_or_else(Vec::new, |more| *more);
        more.into_iter().rev().chain(self.first.take())
    }
}

impl HotspotGate {
    /// The gate of a validated `rule`, on a new table.
    pub(crate) fn new(rule: &HotspotRule) -> HotspotGate {
        let table = Arc::new(ParamTable::new(rule.capacity, Full::Evict));
        Self::on(table, &[], rule, Arc::default())
    }

    /// The gate of a validated `rule` that takes over from `self` (a rule of the same shape,
    /// [`fits`](Self::fits)): on the same table, so that every value keeps its state (its TAT,
    /// or its calls inside) under the new rule. Values no longer listed are unpinned, newly
    /// listed ones pinned.
    pub(crate) fn succeed(&self, rule: &HotspotRule) -> HotspotGate {
        let listed: Vec<u64> = rule.exceptions.iter().map(|e| e.value_hash).collect();
        for old in &self.exceptions {
            if !listed.contains(&old.key) {
                self.table.unpin(old.key, self.kind());
            }
        }
        let pinned: Vec<u64> = self.exceptions.iter().map(|e| e.key).collect();
        Self::on(
            Arc::clone(&self.table),
            &pinned,
            rule,
            Arc::clone(&self.blocked),
        )
    }

    /// Whether `self` and `other` count on the same table (one is the other's successor, or a
    /// view of it for a succession search).
    pub(crate) fn shares_table(&self, other: &HotspotGate) -> bool {
        Arc::ptr_eq(&self.table, &other.table)
    }

    /// The gate of `rule` on `table`, where the values `pinned` are pinned already.
    fn on(
        table: Arc<ParamTable>,
        pinned: &[u64],
        rule: &HotspotRule,
        blocked: Arc<BlockedTop>,
    ) -> HotspotGate {
        let pace = |threshold| Pace::of(threshold, rule.burst, rule.window, rule.strict);
        let mut exceptions: Vec<Exception> = Vec::with_capacity(rule.exceptions.len());
        for e in &rule.exceptions {
            // A value listed twice: the later threshold wins (as the rule's builder reads).
            exceptions.retain(|kept| kept.key != e.value_hash);
            exceptions.push(Exception {
                key: e.value_hash,
                pace: pace(e.threshold),
                limit: e.threshold.floor() as u64,
                given: e.threshold,
            });
        }
        for e in &exceptions {
            // A value that finds no slot to pin (its 16 slots pinned, or held by calls inside:
            // not with the exceptions validation allows, short of a contrived set) keeps its
            // threshold but may be evicted like any other, losing only idle or least-debt
            // state.
            if !pinned.contains(&e.key) {
                table.pin(e.key);
            }
        }
        HotspotGate {
            shape: HotspotShape::of(rule),
            rule: rule.clone(),
            table,
            pace: pace(rule.threshold),
            max_wait: rule
                .max_wait
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            limit: rule.threshold.floor() as u64,
            exceptions,
            blocked,
            cluster: ClusterHot::of(rule),
        }
    }

    /// Whether this gate's table can serve a rule of `shape` (then [`succeed`](Self::succeed)
    /// builds its gate).
    pub(crate) fn fits(&self, shape: &HotspotShape) -> bool {
        self.shape == *shape
    }

    /// Whether this gate enforces `rule` exactly (a reload that keeps the rule, in any place of
    /// the list).
    pub(crate) fn is_of(&self, rule: &HotspotRule) -> bool {
        self.rule == *rule
    }

    /// Whether this gate's rule counts over `rule`'s window (its values' debts mean the same
    /// under `rule`).
    pub(crate) fn counts_over_window_of(&self, rule: &HotspotRule) -> bool {
        self.rule.window == rule.window
    }

    /// The kind of value the table holds.
    fn kind(&self) -> Kind {
        match self.shape.metric {
            HotspotMetric::Qps => Kind::Rate,
            HotspotMetric::Concurrency => Kind::Inflight,
        }
    }

    #[inline(always)]
    fn exception(&self, key: u64) -> Option<&Exception> {
        // Tested first: a rule without exceptions (the common one) skips the search's set-up.
        if self.exceptions.is_empty() {
            return None;
        }
        self.exceptions.iter().find(|e| e.key == key)
    }

    /// Whether every admission of this gate is a rate pass with no wait (a QPS rule without
    /// `max_wait` or a cluster part): what a chain's lone-gate shortcut takes.
    pub(crate) fn is_plain_rate(&self) -> bool {
        self.shape.metric == HotspotMetric::Qps && self.max_wait == 0 && self.cluster.is_none()
    }

    /// Starts loading the table lines that [`try_enter`](Self::try_enter) will read for this
    /// call's parameter: a hint, to be given before the work that precedes the checks.
    #[inline]
    pub(crate) fn prefetch(&self, params: &Params) {
        if let Some(key) = params.get(self.shape.param_index) {
            self.table.prefetch_key(key);
        }
    }

    /// The entry's value of this gate's parameter (`None`: the entry has no such parameter)
    /// and where it lives in the table: found once, for the prefetch and the admission.
    #[inline(always)]
    pub(crate) fn locate(&self, params: &Params) -> Option<(u64, Located)> {
        let key = params.get(self.shape.param_index)?;
        Some((key, self.table.locate(key)))
    }

    /// Starts loading the table lines of a value [`locate`](Self::locate) found.
    #[inline(always)]
    pub(crate) fn prefetch_located(&self, k: &Located) {
        self.table.prefetch(k);
    }

    /// Admits `count` calls of the entry's value at `now` (`now` is also the start of a wait),
    /// or blocks them.
    #[inline]
    pub(crate) fn try_enter(
        &self,
        resource: &'static str,
        params: &Params,
        now: u64,
        count: u32,
    ) -> Result<HotPass, BlockError> {
        let Some(key) = params.get(self.shape.param_index) else {
            return Ok(HotPass::Free);
        };
        self.try_enter_key(&resource, key, None, now, count)
    }

    /// [`try_enter`](Self::try_enter) of the value `key`, [located](Self::locate) as `located`
    /// if the caller found it already. `resource` by reference: its name is read only where a
    /// block or a cluster names it, not on every pass.
    #[inline(always)]
    pub(crate) fn try_enter_key(
        &self,
        resource: &&'static str,
        key: u64,
        located: Option<&Located>,
        now: u64,
        count: u32,
    ) -> Result<HotPass, BlockError> {
        let exception = self.exception(key);
        let given = exception.map_or(self.rule.threshold, |e| e.given);
        match self.shape.metric {
            HotspotMetric::Qps => {
                let mut pace = exception.map_or(self.pace, |e| e.pace);
                // A cluster rule: leased tokens, else its local share (listed values keep their
                // own threshold, per instance).
                if let Some(cluster) = self.cluster.as_ref().filter(|_| exception.is_none()) {
                    let (r, n) = (&self.rule, f64::from(cluster.local_divisor()));
                    pace = Pace::of(given / n, r.burst, r.window, r.strict);
                    let local = (pace.interval, pace.tolerance);
                    if let Some(decided) =
                        cluster.check(resource, &self.table, key, count, now, local)
                    {
                        return decided.map(|()| HotPass::Free);
                    }
                }
                // Borrowed, not copied, when the caller located the value.
                let fresh;
                let located = match located {
                    Some(k) => k,
                    None => {
                        fresh = self.table.locate(key);
                        &fresh
                    }
                };
                match self.table.acquire_rate_located(
                    located,
                    now,
                    count,
                    pace.interval,
                    pace.tolerance,
                    self.max_wait,
                ) {
                    RateDecision::Pass => Ok(HotPass::Rate { key, turn: 0 }),
                    RateDecision::Wait(wait) => Ok(HotPass::Rate {
                        key,
                        turn: now.saturating_add(wait),
                    }),
                    RateDecision::Block { retry_after } => {
                        let err = BlockError::hot_param(
                            resource,
                            given,
                            self.shape.param_index,
                            // `u64::MAX`: never (a batch too large for the rule, a threshold
                            // of 0) or unknown (no room in the table): no hint.
                            (retry_after != u64::MAX).then(|| Duration::from_nanos(retry_after)),
                        );
                        // A cluster rule limiting locally (no cluster started, or its values'
                        // key split): a cluster refusal, as a flow rule's is.
                        Err(
                            match self.cluster.as_ref().filter(|_| exception.is_none()) {
                                Some(cluster) => cluster.local_block(err),
                                None => err,
                            },
                        )
                    }
                }
            }
            HotspotMetric::Concurrency => {
                let limit = exception.map_or(self.limit, |e| e.limit);
                match self.table.acquire_inflight(key, limit) {
                    Ok(slot) => Ok(HotPass::Inside(slot)),
                    Err(()) => Err(BlockError::hot_param(
                        resource,
                        given,
                        self.shape.param_index,
                        None,
                    )),
                }
            }
        }
    }

    /// For a RateLimit header, the entry's value of this gate's parameter at `now` (a QPS
    /// rule over whole seconds without a cluster part: `None` otherwise, or for an entry
    /// without the parameter): the value, the calls allowed per window (its threshold, or its
    /// exception's), the window in seconds, the calls that would pass at once now (at most the
    /// quota), and in how many nanoseconds one more would (0: the quota is whole).
    #[cfg(feature = "tower")]
    pub(crate) fn quota_of(&self, params: &Params, now: u64) -> Option<HotQuota> {
        let key = params.get(self.shape.param_index)?;
        let window = self.rule.window;
        if self.shape.metric != HotspotMetric::Qps
            || self.cluster.is_some()
            || window.subsec_nanos() != 0
            || window.as_secs() == 0
        {
            return None;
        }
        let exception = self.exception(key);
        let pace = exception.map_or(self.pace, |e| e.pace);
        let quota = exception.map_or(self.limit, |e| e.limit);
        if pace.interval == u64::MAX {
            return Some(HotQuota {
                key,
                quota,
                window_secs: window.as_secs(),
                remaining: 0,
                next_in: 0,
            });
        }
        let tat = self.table.rate_tat(key).unwrap_or(now).max(now);
        // Calls that pass at once: while `start + n * interval - now <= tolerance + interval`.
        let room = (now
            .saturating_add(pace.tolerance)
            .saturating_add(pace.interval))
        .saturating_sub(tat);
        let at_once = room / pace.interval;
        let (remaining, next_in) = if at_once >= quota {
            (quota, 0)
        } else {
            // One more passes once the room reaches `(at_once + 1) * interval`.
            let more = (at_once + 1).saturating_mul(pace.interval);
            (at_once, more.saturating_sub(room))
        };
        Some(HotQuota {
            key,
            quota,
            window_secs: window.as_secs(),
            remaining,
            next_in,
        })
    }

    /// Undoes an admission of `count` calls by this gate (a later check blocked the call, or
    /// its future was dropped while waiting), at the pace it was charged at.
    pub(crate) fn cancel(&self, pass: HotPass, count: u32) {
        match pass {
            HotPass::Free => {}
            HotPass::Rate { key, .. } => {
                let pace = self.exception(key).map_or(self.pace, |e| e.pace);
                self.table.cancel_rate(key, count, pace.interval);
            }
            HotPass::Inside(slot) => self.table.release_inflight(slot),
        }
    }

    /// The exit of a call that took a place ([`HotPass::Inside`]).
    pub(crate) fn exit(&self, slot: Place) {
        self.table.release_inflight(slot);
    }

    /// Records that [`try_enter`](Self::try_enter) blocked `count` calls of the entry's value
    /// at `now`, in the rule's most-blocked values: called by the block path only, so that
    /// `try_enter` itself (and an admitted call) is unchanged.
    #[cold]
    #[inline(never)]
    pub(crate) fn note_block(&self, params: &Params, now: u64, count: u32) {
        if let Some(key) = params.get(self.shape.param_index) {
            self.blocked.record(key, now, count);
        }
    }

    /// The values this rule blocked most in the last minute as of `now`.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn blocked_top(&self, now: u64) -> BlockedValues {
        let (top, missed) = self.blocked.top(now);
        let text = |key: u64| {
            self.rule
                .exceptions
                .iter()
                .rev()
                .find(|e| e.value_hash == key)
                .and_then(|e| e.value.clone())
        };
        BlockedValues {
            param_index: self.shape.param_index,
            threshold: self.rule.threshold,
            top: top.into_iter().map(|c| (c, text(c.key))).collect(),
            missed,
        }
    }

    /// Live values forgotten because the table was full (for metrics).
    pub(crate) fn live_evictions(&self) -> u64 {
        self.table.live_evictions()
    }
}

impl BlockError {
    /// A rejection by a hotspot rule on parameter `param_index`, whose blocked value may retry
    /// after `retry_after`.
    pub(crate) fn hot_param(
        resource: &'static str,
        threshold: f64,
        param_index: usize,
        retry_after: Option<Duration>,
    ) -> BlockError {
        BlockError::new(resource, BlockKind::HotParam, threshold)
            .with_param_index(param_index)
            .with_retry_after(retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::{Just, Strategy};

    proptest::proptest! {
        /// Against a plain `Vec` of the same pushes: the same passes in the same order, given
        /// back latest first, and `holds_places` as the `Vec` would say.
        #[test]
        fn hot_passes_keep_what_a_vec_keeps(
            pushes in proptest::collection::vec((0usize..8, 0u8..3, 0u64..100), 0..6),
        ) {
            let pass = |kind: u8, n: u64| match kind {
                0 => HotPass::Free,
                1 => HotPass::Rate { key: n, turn: n },
                _ => HotPass::Inside(crate::slot::param_table::Place::arbitrary(n as u32)),
            };
            let mut passes = HotPasses::default();
            let mut model = Vec::new();
            for &(gate, kind, n) in &pushes {
                passes.push(gate, pass(kind, n));
                model.push((gate, pass(kind, n)));
            }
            proptest::prop_assert_eq!(passes.is_empty(), model.is_empty());
            proptest::prop_assert_eq!(
                passes.holds_places(),
                model.iter().any(|(_, p)| matches!(p, HotPass::Inside(_)))
            );
            proptest::prop_assert_eq!(passes.iter().copied().collect::<Vec<_>>(), model.clone());
            let drained: Vec<_> = passes.drain_latest_first().collect();
            model.reverse();
            proptest::prop_assert_eq!(drained, model);
            proptest::prop_assert!(passes.is_empty());
        }
    }

    /// One step of [`reloads_keep_state_like_an_unbounded_model`].
    #[derive(Clone, Debug)]
    enum Op {
        Call {
            value: u64,
            count: u32,
        },
        Advance {
            ms: u64,
        },
        /// Gives back the `n`th admission not yet given back (modulo their number).
        Cancel {
            n: usize,
        },
        Reload {
            threshold: u64,
            burst: u32,
            window_s: u64,
            exceptions: Vec<(u64, u64)>,
        },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0u64..6, 1u32..3).prop_map(|(value, count)| Op::Call { value, count }),
            2 => (0u64..400).prop_map(|ms| Op::Advance { ms }),
            1 => (0usize..64).prop_map(|n| Op::Cancel { n }),
            1 => (
                1u64..20,
                0u32..4,
                1u64..3,
                proptest::collection::vec((0u64..6, 0u64..30), 0..4)
            )
                .prop_map(|(threshold, burst, window_s, exceptions)| Op::Reload {
                    threshold,
                    burst,
                    window_s,
                    exceptions,
                }),
        ]
    }

    fn rule(threshold: u64, burst: u32, window_s: u64, exceptions: &[(u64, u64)]) -> HotspotRule {
        let mut rule = HotspotRule::qps("hot-model", 0, threshold as f64)
            .burst(burst)
            .window(Duration::from_secs(window_s))
            .capacity(1_024);
        for &(value, threshold) in exceptions {
            rule = rule.exception(&value, threshold as f64);
        }
        rule
    }

    /// The reference: one TAT per value in a map (0: never seen), the GCRA with the pace the
    /// rule in force gives the value (the later of a value's listed thresholds), computed here
    /// on its own: interval `ceil(window / threshold)`, tolerance
    /// `(threshold + burst - 1) x interval`, nothing for a threshold of 0.
    fn model_pace(threshold: u64, burst: u32, window_s: u64) -> Option<(u64, u64)> {
        (threshold > 0).then(|| {
            let interval = (window_s * 1_000_000_000).div_ceil(threshold);
            (interval, (threshold + u64::from(burst) - 1) * interval)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Gates that succeed each other over reloads (thresholds, burst, window, exceptions
        /// added, retuned and removed) decide exactly as an unbounded model that never forgets
        /// a value's TAT; a give-back returns what the admission was charged, whichever gate is
        /// in force by then.
        #[test]
        fn reloads_keep_state_like_an_unbounded_model(
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let mut now = 3_600 * 1_000_000_000u64;
            let mut gates = vec![HotspotGate::new(&rule(10, 0, 1, &[]))];
            let mut model_rule = (10u64, 0u32, 1u64, Vec::<(u64, u64)>::new());
            let mut tats: std::collections::HashMap<u64, u64> = Default::default();
            // (gate, pass, count; the model's value and interval charged)
            let mut admitted: Vec<(usize, HotPass, u32, u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Call { value, count } => {
                        let hashes = [crate::param::hash(&value)];
                        let params = Params::of(&hashes);
                        let (threshold, burst, window_s, exceptions) = &model_rule;
                        let threshold = exceptions
                            .iter()
                            .rev()
                            .find(|(v, _)| *v == value)
                            .map_or(*threshold, |&(_, t)| t);
                        let got = gates
                            .last()
                            .unwrap()
                            .try_enter("hot-model", &params, now, count);
                        let tat = tats.get(&value).copied().unwrap_or(0);
                        let expected = model_pace(threshold, *burst, *window_s).and_then(
                            |(interval, tolerance)| {
                                let new = tat.max(now) + u64::from(count) * interval;
                                (new - now <= tolerance + interval).then_some((new, interval))
                            },
                        );
                        match (got, expected) {
                            (Ok(pass @ HotPass::Rate { turn: 0, .. }), Some((new, interval))) => {
                                tats.insert(value, new);
                                admitted.push((gates.len() - 1, pass, count, value, interval));
                            }
                            (Err(e), None) => {
                                proptest::prop_assert_eq!(e.kind(), crate::BlockKind::HotParam);
                            }
                            (got, expected) => proptest::prop_assert!(
                                false,
                                "value {value} x{count} at {now}: {got:?}, model {expected:?}"
                            ),
                        }
                    }
                    Op::Advance { ms } => now += ms * 1_000_000,
                    Op::Cancel { n } => {
                        if !admitted.is_empty() {
                            let (gate, pass, count, value, interval) =
                                admitted.remove(n % admitted.len());
                            gates[gate].cancel(pass, count);
                            let tat = tats.entry(value).or_insert(0);
                            *tat = tat.saturating_sub(u64::from(count) * interval);
                        }
                    }
                    Op::Reload { threshold, burst, window_s, exceptions } => {
                        let rule = rule(threshold, burst, window_s, &exceptions);
                        let last = gates.last().unwrap();
                        proptest::prop_assert!(last.fits(&HotspotShape::of(&rule)));
                        let next = last.succeed(&rule);
                        gates.push(next);
                        model_rule = (threshold, burst, window_s, exceptions);
                    }
                }
            }
        }
    }

    /// The passes (time, calls) of one value under `rule`: calls of `count` arriving at
    /// `arrivals` (ns after the start), passing at their turn.
    fn passes(rule: &HotspotRule, arrivals: &[(u64, u32)]) -> Vec<(u64, u32)> {
        let gate = HotspotGate::new(rule);
        let hashes = [crate::param::hash("one value")];
        let params = Params::of(&hashes);
        let t0 = 3_600 * 1_000_000_000u64;
        let mut passed = Vec::new();
        for &(at, count) in arrivals {
            let now = t0 + at;
            if let Ok(HotPass::Rate { turn, .. }) =
                gate.try_enter("strict-model", &params, now, count)
            {
                passed.push((if turn == 0 { now } else { turn } - t0, count));
            }
        }
        passed
    }

    /// The reference: the most calls that pass in any half-open interval `[t, t + len)`
    /// (the busiest one starts at a pass).
    fn busiest(passed: &[(u64, u32)], len: u64) -> u64 {
        passed
            .iter()
            .map(|&(start, _)| {
                passed
                    .iter()
                    .filter(|&&(t, _)| t >= start && t - start < len)
                    .map(|&(_, n)| u64::from(n))
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    fn arrival() -> impl proptest::strategy::Strategy<Value = (u64, u32)> {
        use proptest::prelude::*;
        // Gaps of 0 to 400 ms in steps of 1 ms or less; mostly single calls.
        (
            prop_oneof![Just(0u64), 0u64..1_000, 0u64..400_000_000],
            prop_oneof![4 => Just(1u32), 1 => 1u32..6],
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// Strict: whatever the arrivals (bursts, batches, gaps), no interval of the
        /// window's length holds more than the threshold's whole calls (one, below 1), against
        /// a reference that counts the passes of every such interval; from idle `1 + burst`
        /// pass at once.
        #[test]
        fn strict_admits_at_most_the_threshold_in_any_window(
            gaps in proptest::collection::vec(arrival(), 1..120),
            threshold in proptest::prop_oneof![1u32..12, 12u32..200].prop_map(f64::from),
            fraction in proptest::prop_oneof![Just(0.0), 0.0f64..1.0],
            burst_share in 0.0f64..1.0,
            window_ms in proptest::prop_oneof![Just(1_000u64), 1u64..3_000],
        ) {
            let threshold = (threshold + fraction).max(0.2);
            let whole = (threshold.floor() as u32).max(1);
            let burst = ((f64::from(whole - 1)) * burst_share) as u32;
            let window = Duration::from_millis(window_ms);
            let rule = HotspotRule::qps("strict-model", 0, threshold)
                .burst(burst)
                .window(window)
                .strict(true)
                .capacity(16);
            proptest::prop_assert_eq!(rule.validate(), Ok(()));
            let mut at = 0;
            let arrivals: Vec<(u64, u32)> = gaps
                .iter()
                .map(|&(gap, count)| {
                    at += gap;
                    (at, count)
                })
                .collect();
            let passed = passes(&rule, &arrivals);
            let span = if threshold < 1.0 {
                (window.as_nanos() as f64 / threshold) as u64
            } else {
                window.as_nanos() as u64
            };
            let most = if threshold < 1.0 { 1 } else { u64::from(threshold.floor() as u32) };
            let seen = busiest(&passed, span);
            proptest::prop_assert!(
                seen <= most,
                "{} passes in an interval of {} ns, threshold {} burst {}: {:?}",
                seen, span, threshold, burst, passed
            );
            // From idle, `1 + burst` single calls pass at once.
            let at_once: Vec<(u64, u32)> = (0..=burst + 1).map(|_| (0, 1)).collect();
            let first = passes(&rule, &at_once);
            proptest::prop_assert_eq!(first.len() as u32, burst + 1);
        }
    }

    /// Every arrival pattern of single calls on a 1 ms grid over 12 ms, for a strict 3 per
    /// 10 ms (burst 0 and 1) and 2 per 5 ms: 2^12 patterns each, every window-length interval
    /// counted.
    #[test]
    fn strict_holds_for_every_pattern_on_a_grid() {
        for (threshold, burst, window_ms) in [(3.0, 0, 10), (3.0, 1, 10), (3.0, 2, 10), (2.0, 0, 5)]
        {
            let rule = HotspotRule::qps("strict-grid", 0, threshold)
                .burst(burst)
                .window(Duration::from_millis(window_ms))
                .strict(true)
                .capacity(16);
            for pattern in 0u32..1 << 12 {
                let arrivals: Vec<(u64, u32)> = (0..12u64)
                    .filter(|ms| pattern & (1 << ms) != 0)
                    .map(|ms| (ms * 1_000_000, 1))
                    .collect();
                let passed = passes(&rule, &arrivals);
                let seen = busiest(&passed, window_ms * 1_000_000);
                assert!(
                    seen <= threshold as u64,
                    "{threshold} per {window_ms} ms, burst {burst}, pattern {pattern:#b}: \
                     {seen} in one window: {passed:?}"
                );
            }
        }
    }

    #[test]
    fn pace_is_exact_in_integers_and_never_faster_than_the_rule() {
        let second = Duration::from_secs(1);
        assert_eq!(Pace::of(1e6, 0, second, false).interval, 1_000);
        assert_eq!(Pace::of(5_000.0, 0, second, false).interval, 200_000);
        assert_eq!(Pace::of(1_001.0, 0, second, false).interval, 999_001);
        assert!(1_001 * Pace::of(1_001.0, 0, second, false).interval >= 1_000_000_000);
        let p = Pace::of(10.0, 5, second, false);
        assert_eq!((p.interval, p.tolerance), (100_000_000, 14 * 100_000_000));
        assert_eq!(Pace::of(0.0, 3, second, false).interval, u64::MAX);
        assert_eq!(Pace::of(0.5, 0, second, false).interval, 2_000_000_000);
        // Strict: `1 + burst` at once, then `floor(threshold) - burst` per window.
        let p = Pace::of(10.0, 4, second, true);
        assert_eq!((p.interval, p.tolerance), (166_666_667, 4 * 166_666_667));
        let p = Pace::of(10.9, 0, second, true);
        assert_eq!((p.interval, p.tolerance), (100_000_000, 0));
        assert_eq!(Pace::of(0.5, 0, second, true).interval, 2_000_000_000);
    }
}
