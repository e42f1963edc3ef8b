//! The circuit-breaker check: an atomic state machine per rule.
//!
//! The whole state is one word: `[state:2][generation:30][probes admitted:16][probes succeeded:16]`.
//! Admitting a probe is a CAS on it, so no number of threads gets more than `probes` calls
//! through in half-open. Changing state (and generation) happens under the breaker's
//! `transitions` lock, which also runs the listeners, so they see the transitions in order; the
//! hot path (a closed breaker) never takes it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::breaker::{self, CircuitState, StateChange};
use crate::error::{BlockError, BlockKind};
use crate::kinds::circuit_breaker::rule::{BreakerStrategy, CircuitBreakerRule};
use crate::stat::{LeapArray, MetricEvent};

const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const GEN_MASK: u64 = (1 << 30) - 1;
const ADMITTED: u64 = 1 << 16;
const COUNT_MASK: u64 = 0xFFFF;

fn word(state: u64, generation: u64) -> u64 {
    (state << 62) | ((generation & GEN_MASK) << 32)
}
fn state_of(w: u64) -> u64 {
    w >> 62
}
fn generation_of(w: u64) -> u64 {
    (w >> 32) & GEN_MASK
}
fn admitted_of(w: u64) -> u64 {
    (w >> 16) & COUNT_MASK
}
fn succeeded_of(w: u64) -> u64 {
    w & COUNT_MASK
}
fn public(state: u64) -> CircuitState {
    match state {
        CLOSED => CircuitState::Closed,
        OPEN => CircuitState::Open,
        _ => CircuitState::HalfOpen,
    }
}

/// A probe ticket: which generation of half-open admitted the call.
pub(crate) type Probe = u32;

/// One circuit-breaker rule in force on a node: the rule and what is read from it, over a
/// [`Counts`] it may share with the breaker of the rule it replaced.
#[derive(Debug)]
pub(crate) struct CircuitBreaker {
    pub(crate) rule: CircuitBreakerRule,
    /// The state and the window: shared with the breaker this one succeeded, if its rule had
    /// the same strategy kind, window and bucket count ([`CircuitBreaker::succeeding`]).
    counts: Arc<Counts>,
    recovery_nanos: u64,
    /// Response time above which a call is slow, in microseconds (slow-ratio rules).
    slow_above_us: Option<u64>,
    /// The breaker is in a chain's shadow part: its transitions say so (a promoted breaker
    /// keeps its state and reports as enforced from then on).
    shadow: AtomicBool,
}

/// What a breaker has seen: its state word and its window. A rule reloaded with the same
/// strategy kind, window and bucket count keeps it (sentinel-golang reuses a breaker's
/// statistics on the same terms).
#[derive(Debug)]
struct Counts {
    /// Names this breaker in probe tickets (unique in the process, never 0); a successor
    /// keeps it, so probes admitted before a reload are matched after it.
    id: u32,
    state: CachePadded<AtomicU64>,
    /// When the current generation began (written before it is published).
    since: AtomicU64,
    /// Finished calls (Complete) and failed or slow ones (Error) while closed.
    stats: LeapArray,
    /// The window counts only periods from this one on (the breaker's last close).
    floor: AtomicU64,
    transitions: Mutex<()>,
}

impl CircuitBreaker {
    /// A closed breaker for a validated `rule`.
    pub(crate) fn new(rule: &CircuitBreakerRule, now: u64) -> CircuitBreaker {
        let window_ms = rule.window.as_millis() as u64;
        let sample_count = rule.sample_count.max(1);
        let bucket = (window_ms * 1_000_000 / u64::from(sample_count)).max(1);
        static NEXT_ID: AtomicU32 = AtomicU32::new(1);
        // Wraps after 4 billion breakers; 0 is skipped (it means "no probe").
        let id = NEXT_ID.fetch_add(1, Relaxed).max(1);
        let counts = Counts {
            id,
            state: CachePadded::new(AtomicU64::new(word(CLOSED, 0))),
            since: AtomicU64::new(now),
            stats: LeapArray::from_parts(bucket, sample_count),
            floor: AtomicU64::new(0),
            transitions: Mutex::new(()),
        };
        CircuitBreaker::with_counts(rule, Arc::new(counts))
    }

    /// A breaker for a validated `rule` over `old`'s counts and state: for a rule with the same
    /// strategy kind, window and bucket count as `old`'s ([`CircuitBreaker::keeps_counts_of`],
    /// which the caller asks first).
    pub(crate) fn succeeding(rule: &CircuitBreakerRule, old: &CircuitBreaker) -> CircuitBreaker {
        CircuitBreaker::with_counts(rule, Arc::clone(&old.counts))
    }

    fn with_counts(rule: &CircuitBreakerRule, counts: Arc<Counts>) -> CircuitBreaker {
        CircuitBreaker {
            rule: rule.clone(),
            counts,
            recovery_nanos: u64::try_from(rule.recovery.as_nanos()).unwrap_or(u64::MAX),
            slow_above_us: match rule.strategy {
                BreakerStrategy::SlowRequestRatio { max_rt, .. } => {
                    Some(u64::try_from(max_rt.as_micros()).unwrap_or(u64::MAX))
                }
                _ => None,
            },
            shadow: AtomicBool::new(false),
        }
    }

    /// This breaker and `other` share one state and window (one succeeded the other).
    pub(crate) fn shares_counts_with(&self, other: &CircuitBreaker) -> bool {
        Arc::ptr_eq(&self.counts, &other.counts)
    }

    /// A breaker of `rule` may keep this one's counts: the same resource, strategy kind,
    /// window and bucket count (the thresholds, `max_rt`, `min_requests`, `recovery` and
    /// `probes` may differ).
    pub(crate) fn keeps_counts_of(&self, rule: &CircuitBreakerRule) -> bool {
        let old = &self.rule;
        old.resource == rule.resource
            && std::mem::discriminant(&old.strategy) == std::mem::discriminant(&rule.strategy)
            && old.window == rule.window
            && old.sample_count == rule.sample_count
    }

    /// The breaker's id, for probe tickets.
    #[inline]
    pub(crate) fn id(&self) -> u32 {
        self.counts.id
    }

    /// The breaker's state now.
    pub(crate) fn state(&self) -> CircuitState {
        public(state_of(self.counts.state.load(Acquire)))
    }

    fn threshold(&self) -> f64 {
        match self.rule.strategy {
            BreakerStrategy::SlowRequestRatio { threshold, .. }
            | BreakerStrategy::ErrorRatio { threshold } => threshold,
            BreakerStrategy::ErrorCount { threshold } => f64::from(threshold),
        }
    }

    /// A block of a call at `now`; with `hint`, it says when the breaker lets calls through
    /// again (the end of the recovery time: half-open, or a new round of probes).
    fn blocked(
        &self,
        resource: &'static str,
        why: &'static str,
        now: u64,
        hint: bool,
    ) -> BlockError {
        let reopens = self
            .counts
            .since
            .load(Acquire)
            .saturating_add(self.recovery_nanos);
        let retry_after = hint.then(|| Duration::from_nanos(reopens.saturating_sub(now)));
        BlockError::circuit_breaker(resource, self.threshold(), why).with_retry_after(retry_after)
    }

    fn expired(&self, now: u64) -> bool {
        now.saturating_sub(self.counts.since.load(Acquire)) >= self.recovery_nanos
    }

    /// Admits the call (`Ok(None)`), admits it as a probe (`Ok(Some(ticket))`), or blocks it.
    /// A call already probing another breaker is not made a probe here too.
    #[inline]
    pub(crate) fn try_enter(
        &self,
        resource: &'static str,
        now: u64,
        already_probing: bool,
    ) -> Result<Option<Probe>, BlockError> {
        loop {
            let w = self.counts.state.load(Acquire);
            match state_of(w) {
                CLOSED => return Ok(None),
                OPEN if self.expired(now) => {
                    let open_ms = now.saturating_sub(self.counts.since.load(Acquire)) as f64 / 1e6;
                    self.transition(resource, w, HALF_OPEN, now, open_ms);
                }
                OPEN => return Err(self.blocked(resource, "open", now, true)),
                _ if already_probing => {
                    return Err(self.blocked(
                        resource,
                        "half-open, probing another breaker",
                        now,
                        false,
                    ))
                }
                _ if admitted_of(w) < u64::from(self.rule.probes) => {
                    if self
                        .counts
                        .state
                        .compare_exchange_weak(w, w + ADMITTED, AcqRel, Acquire)
                        .is_ok()
                    {
                        return Ok(Some(generation_of(w) as Probe));
                    }
                }
                // Every probe is out and none decided within `recovery`: start a new round, so
                // a probe that never reports cannot keep the breaker half-open forever.
                _ if self.expired(now) => {
                    self.transition(resource, w, HALF_OPEN, now, 0.0);
                }
                _ => return Err(self.blocked(resource, "half-open, all probes taken", now, true)),
            }
        }
    }

    /// A probe admitted by this breaker did not run (a later check blocked it, or its future
    /// was dropped): give its place back without a verdict.
    pub(crate) fn release_probe(&self, probe: Probe) {
        let mut w = self.counts.state.load(Acquire);
        while state_of(w) == HALF_OPEN && generation_of(w) == u64::from(probe) && admitted_of(w) > 0
        {
            match self
                .counts
                .state
                .compare_exchange_weak(w, w - ADMITTED, AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(seen) => w = seen,
            }
        }
    }

    /// Records the exit of a call this breaker admitted.
    pub(crate) fn on_exit(
        &self,
        resource: &'static str,
        now: u64,
        rt_us: u64,
        failed: bool,
        abandoned: bool,
        probe: Option<Probe>,
    ) {
        let slow = self.slow_above_us.is_some_and(|max| rt_us > max);
        // An abandoned call (its future dropped) says nothing if a client went away, unless it
        // was already slow when dropped: then it was slow, whatever cut it short (an outer
        // timeout drops exactly the slowest calls, which must not hide them from this breaker).
        let abandoned = abandoned && !slow;
        let bad = failed || slow;
        if let Some(probe) = probe {
            if abandoned {
                self.release_probe(probe);
            } else {
                self.probe_finished(resource, probe, bad, now, rt_us);
            }
            return;
        }
        if abandoned {
            return;
        }
        self.counts.stats.add(now, MetricEvent::Complete, 1);
        if bad {
            self.counts.stats.add(now, MetricEvent::Error, 1);
        }
        let w = self.counts.state.load(Acquire);
        if state_of(w) != CLOSED {
            return;
        }
        let floor = self.counts.floor.load(Acquire);
        let total = self
            .counts
            .stats
            .sum_from(now, MetricEvent::Complete, floor);
        if total < u64::from(self.rule.min_requests) {
            return;
        }
        let bad_calls = self.counts.stats.sum_from(now, MetricEvent::Error, floor);
        let (figure, reached) = match self.rule.strategy {
            BreakerStrategy::SlowRequestRatio { threshold, .. }
            | BreakerStrategy::ErrorRatio { threshold } => {
                let ratio = bad_calls as f64 / total as f64;
                (ratio, ratio >= threshold)
            }
            BreakerStrategy::ErrorCount { threshold } => {
                (bad_calls as f64, bad_calls >= u64::from(threshold))
            }
        };
        if reached {
            self.transition(resource, w, OPEN, now, figure);
        }
    }

    fn probe_finished(
        &self,
        resource: &'static str,
        probe: Probe,
        bad: bool,
        now: u64,
        rt_us: u64,
    ) {
        loop {
            let w = self.counts.state.load(Acquire);
            if state_of(w) != HALF_OPEN || generation_of(w) != u64::from(probe) {
                return; // a verdict or a new round came first: this result is stale
            }
            if bad {
                self.transition(resource, w, OPEN, now, rt_us as f64 / 1_000.0);
                return;
            }
            let succeeded = succeeded_of(w) + 1;
            if succeeded >= u64::from(self.rule.probes) {
                self.transition(resource, w, CLOSED, now, succeeded as f64);
                return;
            }
            if self
                .counts
                .state
                .compare_exchange_weak(w, w + 1, AcqRel, Acquire)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Marks the breaker as a shadow one (or an enforced one), for its transitions.
    pub(crate) fn set_shadow(&self, shadow: bool) {
        self.shadow.store(shadow, Relaxed);
    }

    /// Moves from the state and generation of `expected` to `to` (a new generation), unless
    /// another transition came first. Listeners run under the lock, in transition order.
    #[cold]
    fn transition(&self, resource: &'static str, expected: u64, to: u64, now: u64, figure: f64) {
        let _serialised = self
            .counts
            .transitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut w = self.counts.state.load(Acquire);
        loop {
            // Only transitions change state and generation, and they hold this lock.
            if state_of(w) != state_of(expected) || generation_of(w) != generation_of(expected) {
                return;
            }
            self.counts.since.store(now, Release);
            if to == CLOSED {
                // The window starts afresh: what happened before the breaker opened is gone.
                self.counts
                    .floor
                    .store(self.counts.stats.period(now), Release);
            }
            let next = word(to, generation_of(w) + 1);
            match self.counts.state.compare_exchange(w, next, AcqRel, Acquire) {
                Ok(_) => break,
                Err(seen) => w = seen,
            }
        }
        if to != state_of(expected) {
            breaker::notify(&StateChange {
                resource,
                from: public(state_of(expected)),
                to: public(to),
                figure,
                at_nanos: now,
                shadow: self.shadow.load(Relaxed),
            });
        }
    }
}

/// A probe admitted by a circuit breaker: `breaker id << 32 | probe`, or 0 for none. One 8-byte
/// word, so it is written and read back whole (a struct with narrower fields is written in
/// pieces and read back as one word, which stalls store forwarding on the entry path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeTicket(u64);

impl ProbeTicket {
    pub(crate) fn new(breaker: &CircuitBreaker, probe: Probe) -> ProbeTicket {
        ProbeTicket((u64::from(breaker.id()) << 32) | u64::from(probe))
    }

    pub(crate) fn is_some(self) -> bool {
        self.0 != 0
    }

    /// The probe, if `breaker` admitted it.
    #[inline]
    pub(crate) fn for_breaker(self, breaker: &CircuitBreaker) -> Option<Probe> {
        (self.is_some() && self.0 >> 32 == u64::from(breaker.id())).then_some(self.0 as Probe)
    }
}

impl BlockError {
    /// A rejection by a circuit breaker in `state` (its words: open, or half-open with its
    /// probes taken) whose threshold is `threshold`.
    pub(crate) fn circuit_breaker(
        resource: &'static str,
        threshold: f64,
        state: &'static str,
    ) -> BlockError {
        BlockError::new(resource, BlockKind::CircuitBreaker, threshold).because(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    fn breaker(rule: CircuitBreakerRule) -> CircuitBreaker {
        CircuitBreaker::new(&rule.recovery(Duration::from_secs(5)), T0)
    }

    fn call(b: &CircuitBreaker, at: u64, failed: bool) -> Result<(), BlockError> {
        let probe = b.try_enter("r", at, false)?;
        b.on_exit("r", at, 0, failed, false, probe);
        Ok(())
    }

    /// sentinel-golang's `TestRuleIsStatReusable`: the resource, the strategy kind, the window
    /// and the bucket count decide; the other fields do not.
    #[test]
    fn a_rule_keeps_the_counts_of_the_same_strategy_kind_window_and_bucket_count() {
        let base = || {
            CircuitBreakerRule::error_count("r", 5)
                .window(Duration::from_secs(10), 10)
                .recovery(Duration::from_secs(3))
        };
        let b = CircuitBreaker::new(&base(), T0);
        let slow = |max_ms| {
            CircuitBreakerRule::slow_request_ratio("r", Duration::from_millis(max_ms), 0.5)
                .recovery(Duration::from_secs(3))
        };
        let kept = [
            base(),
            CircuitBreakerRule::error_count("r", 9)
                .window(Duration::from_secs(10), 10)
                .recovery(Duration::from_secs(3)),
            base().recovery(Duration::from_secs(5)),
            base().min_requests(1).probes(3),
        ];
        for rule in kept {
            assert!(b.keeps_counts_of(&rule), "{rule:?}");
        }
        let fresh = [
            CircuitBreakerRule::error_count("other", 5)
                .window(Duration::from_secs(10), 10)
                .recovery(Duration::from_secs(3)),
            CircuitBreakerRule::error_ratio("r", 0.5)
                .window(Duration::from_secs(10), 10)
                .recovery(Duration::from_secs(3)),
            base().window(Duration::from_secs(20), 10),
            base().window(Duration::from_secs(10), 5),
        ];
        for rule in fresh {
            assert!(!b.keeps_counts_of(&rule), "{rule:?}");
        }
        let b = CircuitBreaker::new(&slow(100), T0);
        assert!(b.keeps_counts_of(&slow(200)), "another max_rt keeps them");
    }

    #[test]
    fn error_count_opens_exactly_at_the_threshold_and_not_before_min_requests() {
        let b = breaker(CircuitBreakerRule::error_count("r", 3).min_requests(4));
        for _ in 0..3 {
            call(&b, T0, true).unwrap();
        }
        assert_eq!(
            b.state(),
            CircuitState::Closed,
            "3 errors but only 3 < 4 calls"
        );
        call(&b, T0, false).unwrap();
        assert_eq!(b.state(), CircuitState::Open, "4 calls, 3 errors");
        assert_eq!(
            call(&b, T0 + 4_999 * MS, false).unwrap_err().kind(),
            crate::BlockKind::CircuitBreaker
        );
    }

    #[test]
    fn a_block_says_when_the_breaker_lets_calls_through_again() {
        let b = breaker(CircuitBreakerRule::error_count("r", 1).min_requests(1));
        call(&b, T0, true).unwrap();
        assert_eq!(b.state(), CircuitState::Open);
        let retry = |at| call(&b, at, false).unwrap_err().retry_after();
        assert_eq!(retry(T0), Some(Duration::from_secs(5)));
        assert_eq!(retry(T0 + 3_500 * MS), Some(Duration::from_millis(1_500)));
        // Half-open with its one probe out: the probes' round ends with the recovery time.
        let probe = b.try_enter("r", T0 + 5_000 * MS, false).unwrap();
        assert!(probe.is_some());
        assert_eq!(retry(T0 + 6_000 * MS), Some(Duration::from_secs(4)));
        // Probing another breaker: this one cannot tell.
        let other = b.try_enter("r", T0 + 6_000 * MS, true).unwrap_err();
        assert_eq!(other.retry_after(), None);
    }

    #[test]
    fn half_open_admits_exactly_the_probes_then_closes_on_success() {
        let b = breaker(
            CircuitBreakerRule::error_ratio("r", 0.5)
                .min_requests(2)
                .probes(2),
        );
        call(&b, T0, true).unwrap();
        call(&b, T0, true).unwrap();
        assert_eq!(b.state(), CircuitState::Open);
        let later = T0 + 5_000 * MS;
        let p1 = b.try_enter("r", later, false).unwrap();
        let p2 = b.try_enter("r", later, false).unwrap();
        assert!(p1.is_some() && p2.is_some());
        assert!(
            b.try_enter("r", later, false).is_err(),
            "a third probe is refused"
        );
        b.on_exit("r", later, 0, false, false, p1);
        assert_eq!(b.state(), CircuitState::HalfOpen);
        b.on_exit("r", later, 0, false, false, p2);
        assert_eq!(b.state(), CircuitState::Closed);
        // The window started afresh: one more error does not reopen it.
        call(&b, later, true).unwrap();
        assert_eq!(b.state(), CircuitState::Closed);
    }

    #[test]
    fn an_abandoned_probe_gives_its_place_back_and_a_silent_one_expires() {
        let b = breaker(CircuitBreakerRule::error_count("r", 1).min_requests(1));
        call(&b, T0, true).unwrap();
        let later = T0 + 5_000 * MS;
        let probe = b.try_enter("r", later, false).unwrap();
        b.on_exit("r", later, 0, false, true, probe);
        let again = b.try_enter("r", later, false).unwrap();
        assert!(again.is_some(), "the dropped probe's place was given back");
        // This probe never reports: after `recovery` a new round starts.
        assert!(b.try_enter("r", later + 4_999 * MS, false).is_err());
        let next_round = b.try_enter("r", later + 5_000 * MS, false).unwrap();
        assert!(next_round.is_some());
        // The stale probe's late success decides nothing.
        b.on_exit("r", later + 5_001 * MS, 0, false, false, again);
        assert_eq!(b.state(), CircuitState::HalfOpen);
        b.on_exit("r", later + 5_001 * MS, 0, false, false, next_round);
        assert_eq!(b.state(), CircuitState::Closed);
    }

    #[test]
    fn slow_calls_count_against_a_slow_ratio_breaker() {
        let rule = CircuitBreakerRule::slow_request_ratio("r", Duration::from_millis(100), 0.5)
            .min_requests(4);
        let b = breaker(rule);
        for rt_ms in [50, 150, 90, 100] {
            let p = b.try_enter("r", T0, false).unwrap();
            b.on_exit("r", T0, rt_ms * 1_000, false, false, p);
        }
        assert_eq!(
            b.state(),
            CircuitState::Closed,
            "1 slow of 4 (100 ms is not slower than max)"
        );
        let p = b.try_enter("r", T0, false).unwrap();
        b.on_exit("r", T0, 101_000, false, false, p);
        assert_eq!(b.state(), CircuitState::Closed, "2 of 5 = 0.4");
        let p = b.try_enter("r", T0, false).unwrap();
        b.on_exit("r", T0, 500_000, false, false, p);
        assert_eq!(b.state(), CircuitState::Open, "3 of 6 = 0.5");
    }

    #[test]
    fn a_call_abandoned_after_it_was_already_slow_counts_as_slow() {
        // An outer timeout drops the slow calls: they still say the resource is slow.
        let rule = CircuitBreakerRule::slow_request_ratio("r", Duration::from_millis(100), 0.5)
            .min_requests(2);
        let b = breaker(rule);
        // Abandoned within max_rt (a client went away): says nothing.
        for _ in 0..4 {
            let p = b.try_enter("r", T0, false).unwrap();
            b.on_exit("r", T0, 100_000, false, true, p);
        }
        assert_eq!(b.state(), CircuitState::Closed);
        let p = b.try_enter("r", T0, false).unwrap();
        b.on_exit("r", T0, 20_000, false, false, p);
        let p = b.try_enter("r", T0, false).unwrap();
        b.on_exit("r", T0, 200_000, false, true, p);
        assert_eq!(
            b.state(),
            CircuitState::Open,
            "1 slow of 2 (the 4 say nothing)"
        );
        // A probe abandoned after max_rt decides: the breaker opens again.
        let later = T0 + 5_000 * MS;
        let probe = b.try_enter("r", later, false).unwrap();
        assert!(probe.is_some());
        b.on_exit("r", later, 200_000, false, true, probe);
        assert_eq!(b.state(), CircuitState::Open);
        // An error-ratio breaker has no max_rt: an abandoned call is never a verdict.
        let b = breaker(CircuitBreakerRule::error_ratio("r", 0.5).min_requests(1));
        let p = b.try_enter("r", T0, false).unwrap();
        b.on_exit("r", T0, 60_000_000, true, true, p);
        assert_eq!(b.state(), CircuitState::Closed);
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use std::time::Duration;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    #[test]
    fn ratio_counts_every_call_in_a_multi_second_window() {
        let rule = CircuitBreakerRule::error_ratio("r", 0.5)
            .min_requests(4)
            .window(Duration::from_secs(2), 10)
            .recovery(Duration::from_secs(3));
        let b = CircuitBreaker::new(&rule, T0);
        for (i, failed) in [false, false, false, false, true].into_iter().enumerate() {
            // Calls at 0, 500, 1000, 1500 and 2000 ms; the last fails.
            let at = T0 + i as u64 * 500 * MS;
            let probe = b.try_enter("r", at, false).unwrap();
            b.on_exit("r", at, 0, failed, false, probe);
        }
        let at = T0 + 2_000 * MS;
        assert_eq!(
            b.counts.stats.sum_from(at, MetricEvent::Complete, 0),
            4,
            "calls at 500..=2000 ms"
        );
        assert_eq!(
            b.state(),
            CircuitState::Closed,
            "1 failure in 4 calls of the window"
        );
        let fail = || {
            let probe = b.try_enter("r", at, false).unwrap();
            b.on_exit("r", at, 0, true, false, probe);
        };
        fail();
        assert_eq!(
            b.state(),
            CircuitState::Closed,
            "2 failures in 5 calls: 0.4"
        );
        fail();
        assert_eq!(b.state(), CircuitState::Open, "3 failures in 6 calls: 0.5");
    }
}
