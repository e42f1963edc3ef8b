//! The adaptive concurrency limit: a latency gradient against a minimum RTT that is re-measured
//! by briefly pinning the limit low (Envoy's adaptive concurrency filter), recomputed once per
//! sample window. See [`AdaptiveConcurrency`] for the rules and the cost.
//!
//! Every exit adds its response time to the window in a few relaxed atomic adds; the entry path
//! reads the limit with one relaxed load. The exit that finds the window over (or a probe done)
//! takes a `try_lock` (never waits: a thread that loses the race leaves the work to the winner)
//! and recomputes the limit. No timer runs: a probe whose calls never finish is ended by the
//! next call it blocks after its deadline ([`AdaptiveLimit::on_block`]).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Mutex;

use crate::kinds::flow::adaptive_rule::AdaptiveConcurrency;

/// How an admitted call ended, for the limit. A call cancelled half-way is not reported, unless
/// it was cut after the timeout (a drop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It finished.
    Success,
    /// It failed (an overload signal: an error, a panic), or took longer than the timeout.
    Dropped,
}

/// A window whose RTT is within this share above the minimum RTT shows no queueing: the calls
/// themselves measure the minimum, and the limit may grow by `queue_size` on top.
const NO_QUEUE_MARGIN: f64 = 1.05;
/// A window whose RTT is under this share of the minimum RTT is a clear fall: the downstream got
/// faster. The minimum takes it at once, and a probe follows to measure the new floor exactly.
const CLEAR_FALL: f64 = 0.9;
/// What a window with drops keeps of the limit.
const DROP_BACKOFF: f64 = 0.9;
/// The gradient's bounds (Envoy's): one window at most halves or doubles the smoothed target.
const GRADIENT_MIN: f64 = 0.5;
const GRADIENT_MAX: f64 = 2.0;
/// A cut of the calls inside by at least this share that leaves the RTT within [`STEADY_RTT`]
/// of the previous window's says the latency is not a queue of ours: the downstream got slower.
const SIGNIFICANT_CUT: f64 = 0.95;
const STEADY_RTT: f64 = 0.98;
/// Windows at `min_limit` with the latency over the target before a probe (Envoy's 5).
const WINDOWS_AT_MIN: u32 = 5;
/// A probe lasts at most this many sample windows (or three RTTs if that is longer)...
const PROBE_WINDOWS: u64 = 10;
/// ...and the next periodic one waits at least this many times as long as the last one took:
/// probes take at most 1/50 of the time.
const PERIODIC_SPACING: u64 = 50;
/// A probe asked for by what a window saw (a fall, a slower downstream) waits this many times
/// as long as the last one took (and at least [`PROBE_WINDOWS`] sample windows).
const EVENT_SPACING: u64 = 10;

/// The window's samples, added to by every exit. During a probe, it holds the probe's samples.
#[derive(Debug, Default)]
struct Window {
    start: AtomicU64,
    samples: AtomicU64,
    rtt_sum_ns: AtomicU64,
    drops: AtomicU64,
    max_inside: AtomicU64,
}

impl Window {
    /// Empties the window, which starts at `now`.
    fn reset(&self, now: u64) {
        self.start.store(now.max(1), Relaxed);
        self.samples.store(0, Relaxed);
        self.rtt_sum_ns.store(0, Relaxed);
        self.drops.store(0, Relaxed);
        self.max_inside.store(0, Relaxed);
    }
}

/// What the recomputation keeps between windows.
#[derive(Debug)]
struct State {
    /// The limit outside probes (a probe pins the published one lower and restores this).
    limit: f64,
    /// The minimum (no-load) RTT in nanoseconds: 0 before the first window.
    min_rtt: f64,
    /// The previous window's most calls inside and RTT, to tell a queue from a slower
    /// downstream.
    previous: Option<(u64, f64)>,
    /// Consecutive windows at `min_limit` with the latency over the target.
    at_min: u32,
    /// When the next periodic probe is due.
    next_probe: u64,
    /// A window saw something only a probe can settle (a fall, a slower downstream).
    probe_wanted: bool,
    /// When the last probe ended, and how long it took.
    last_probe_end: u64,
    last_probe_length: u64,
    /// The jitter's random state, and when the first window closed (times are mixed into the
    /// state relative to it, so that the jitter is the same in every run on the mock clock).
    rng: u64,
    origin: u64,
}

/// One adaptive concurrency limit in force on a resource.
#[derive(Debug)]
pub(crate) struct AdaptiveLimit {
    config: AdaptiveConcurrency,
    limit: AtomicU64,
    window: Window,
    /// When the probe in progress started (0: none); calls admitted before it are not samples.
    probe_epoch: AtomicU64,
    /// When the probe in progress ends at the latest.
    probe_deadline: AtomicU64,
    /// The minimum RTT in nanoseconds (0: not measured yet), and when it was measured.
    min_rtt: AtomicU64,
    min_rtt_at: AtomicU64,
    state: Mutex<State>,
}

impl AdaptiveLimit {
    /// A limit at `config.initial_limit` (validated settings).
    pub(crate) fn new(config: AdaptiveConcurrency) -> AdaptiveLimit {
        AdaptiveLimit {
            config,
            limit: AtomicU64::new(u64::from(config.initial_limit)),
            window: Window::default(),
            probe_epoch: AtomicU64::new(0),
            probe_deadline: AtomicU64::new(0),
            min_rtt: AtomicU64::new(0),
            min_rtt_at: AtomicU64::new(0),
            state: Mutex::new(State {
                limit: f64::from(config.initial_limit),
                min_rtt: 0.0,
                previous: None,
                at_min: 0,
                next_probe: 0,
                probe_wanted: false,
                last_probe_end: 0,
                last_probe_length: 0,
                rng: 0,
                origin: 0,
            }),
        }
    }

    /// The settings.
    pub(crate) fn config(&self) -> &AdaptiveConcurrency {
        &self.config
    }

    /// The current limit.
    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        self.limit.load(Relaxed)
    }

    /// The minimum RTT in nanoseconds and when it was measured (runtime clock), once measured.
    pub(crate) fn min_rtt(&self) -> Option<(u64, u64)> {
        match self.min_rtt.load(Relaxed) {
            0 => None,
            rtt => Some((rtt, self.min_rtt_at.load(Relaxed))),
        }
    }

    /// Whether a call of `rtt_nanos` took longer than the timeout (a drop).
    #[inline]
    pub(crate) fn timed_out(&self, rtt_nanos: u64) -> bool {
        self.config
            .timeout
            .is_some_and(|t| u128::from(rtt_nanos) > t.as_nanos())
    }

    /// A call blocked by this limit at `now`: ends a probe past its deadline whose calls did
    /// not finish (no exit would end it).
    #[cold]
    pub(crate) fn on_block(&self, now: u64) {
        if self.probe_epoch.load(Acquire) != 0
            && now >= self.probe_deadline.load(Relaxed)
            && let Ok(mut state) = self.state.try_lock()
        {
            self.end_probe(&mut state, now);
        }
    }

    /// One finished call at `now`, `rtt_nanos` after it was admitted, with `inside` calls inside
    /// as it finished (itself included).
    pub(crate) fn on_sample(&self, now: u64, rtt_nanos: u64, inside: u64, outcome: Outcome) {
        let w = &self.window;
        let dropped = outcome == Outcome::Dropped || self.timed_out(rtt_nanos);
        if self.probe_epoch.load(Acquire) != 0 {
            return self.probe_sample(now, rtt_nanos, dropped);
        }
        // A sample at or after the window's end closes it first: it belongs to the next one.
        let start = w.start.load(Relaxed);
        let length = self.config.sample_window.as_nanos() as u64;
        if start == 0 {
            let _ = w.start.compare_exchange(0, now.max(1), Relaxed, Relaxed);
        } else if now.saturating_sub(start) >= length
            && w.samples.load(Relaxed) >= u64::from(self.config.min_samples)
        {
            if let Ok(mut state) = self.state.try_lock() {
                // Another thread may have started a probe since the load above.
                if self.probe_epoch.load(Relaxed) == 0 {
                    self.close_window(&mut state, now);
                }
            }
            if self.probe_epoch.load(Acquire) != 0 {
                // The window just closed started a probe.
                return self.probe_sample(now, rtt_nanos, dropped);
            }
        }
        if dropped {
            w.drops.fetch_add(1, Relaxed);
        } else {
            w.rtt_sum_ns.fetch_add(rtt_nanos, Relaxed);
        }
        w.samples.fetch_add(1, Relaxed);
        w.max_inside.fetch_max(inside, Relaxed);
    }

    /// A finished call while a probe runs: only calls admitted since it started say what the
    /// RTT is without a queue. (A sample racing the probe's start may land in it: one of
    /// `probe_samples`.)
    fn probe_sample(&self, now: u64, rtt_nanos: u64, dropped: bool) {
        let w = &self.window;
        let epoch = self.probe_epoch.load(Acquire);
        if !dropped && now.saturating_sub(rtt_nanos) >= epoch {
            w.rtt_sum_ns.fetch_add(rtt_nanos, Relaxed);
            w.samples.fetch_add(1, Relaxed);
        }
        let enough = w.samples.load(Relaxed) >= u64::from(self.config.probe_samples);
        if (enough || now >= self.probe_deadline.load(Relaxed))
            && let Ok(mut state) = self.state.try_lock()
        {
            self.end_probe(&mut state, now);
        }
    }

    /// Takes the window's samples and recomputes the limit; starts a probe if one is due.
    fn close_window(&self, state: &mut State, now: u64) {
        let w = &self.window;
        let start = w.start.swap(now.max(1), Relaxed);
        let samples = w.samples.swap(0, Relaxed);
        let rtt_sum = w.rtt_sum_ns.swap(0, Relaxed);
        let drops = w.drops.swap(0, Relaxed);
        let inside = w.max_inside.swap(0, Relaxed);
        if samples == 0 {
            return;
        }
        let measured = Measured {
            samples,
            drops,
            rtt_sum,
            inside,
            duration: now.saturating_sub(start),
        };
        let c = &self.config;
        let before = state.min_rtt;
        let next = step(c, state, measured);
        // (Every input is finite and the minimum RTT positive; a limit never becomes NaN.)
        let next = if next.is_finite() { next } else { state.limit };
        state.limit = next.clamp(f64::from(c.min_limit), f64::from(c.max_limit));
        self.limit.store(state.limit.round() as u64, Relaxed);
        if state.min_rtt != before {
            self.publish_min_rtt(state.min_rtt, now);
        }
        if state.next_probe == 0 {
            // The first window's RTT is the minimum until the first periodic probe.
            state.origin = now;
            state.next_probe = now.saturating_add(self.periodic_gap(state));
        }
        if self.probe_due(state, now, measured) {
            self.start_probe(state, now);
        }
    }

    /// Whether a probe starts after the window just closed at `now`.
    fn probe_due(&self, state: &State, now: u64, m: Measured) -> bool {
        let since_last = now.saturating_sub(state.last_probe_end);
        let window = self.config.sample_window.as_nanos() as u64;
        if state.probe_wanted {
            let gap = state
                .last_probe_length
                .saturating_mul(EVENT_SPACING)
                .max(window.saturating_mul(PROBE_WINDOWS));
            return state.last_probe_end == 0 || since_last >= gap;
        }
        // Periodic, unless the window showed no queueing (its calls measured the minimum
        // themselves) or failures (the latency then says nothing).
        let queueing = m.drops == 0
            && m.samples > 0
            && state
                .previous
                .is_some_and(|(_, rtt)| rtt > state.min_rtt * NO_QUEUE_MARGIN);
        now >= state.next_probe && queueing
    }

    /// The time to the next periodic probe: the interval (at least [`PERIODIC_SPACING`] times
    /// the last probe's length), plus up to `min_rtt_jitter` of it at random.
    fn periodic_gap(&self, state: &mut State) -> u64 {
        let base = (self.config.min_rtt_interval.as_nanos() as u64)
            .max(state.last_probe_length.saturating_mul(PERIODIC_SPACING));
        let jitter =
            (base as f64 * self.config.min_rtt_jitter * unit_random(&mut state.rng)) as u64;
        base.saturating_add(jitter)
    }

    /// Pins the limit at `probe_limit` (or lower, if the limit is) until the calls admitted
    /// from `now` on have measured the RTT without a queue.
    fn start_probe(&self, state: &mut State, now: u64) {
        let c = &self.config;
        let pinned = u64::from(c.probe_limit).min(state.limit.round() as u64);
        // Long enough for the calls inside to drain and a few admitted in it to finish.
        let rtt = state
            .previous
            .map_or(0.0, |(_, rtt)| rtt)
            .max(state.min_rtt);
        let length = (c.sample_window.as_nanos() as u64)
            .saturating_mul(PROBE_WINDOWS)
            .max((rtt * 3.0) as u64)
            .min(c.min_rtt_interval.as_nanos() as u64);
        state.probe_wanted = false;
        state.rng ^= now.wrapping_sub(state.origin);
        self.window.reset(now);
        self.probe_deadline
            .store(now.saturating_add(length), Relaxed);
        // Release: whoever sees the probe sees its deadline and its empty window.
        self.probe_epoch.store(now.max(1), Release);
        self.limit.store(pinned, Relaxed);
    }

    /// Ends the probe in progress (if any) at `now`: the minimum RTT is the average of its
    /// samples (kept if it has none), and the limit is back where it was.
    fn end_probe(&self, state: &mut State, now: u64) {
        let epoch = self.probe_epoch.load(Relaxed);
        if epoch == 0 {
            return;
        }
        let w = &self.window;
        let samples = w.samples.load(Relaxed);
        let sum = w.rtt_sum_ns.load(Relaxed);
        state.rng ^= sum;
        if samples > 0 && sum > 0 {
            state.min_rtt = sum as f64 / samples as f64;
            self.publish_min_rtt(state.min_rtt, now);
        }
        state.previous = None;
        state.at_min = 0;
        state.last_probe_end = now;
        state.last_probe_length = now.saturating_sub(epoch);
        state.next_probe = now.saturating_add(self.periodic_gap(state));
        w.reset(now);
        self.probe_epoch.store(0, Release);
        self.limit.store(state.limit.round() as u64, Relaxed);
    }

    fn publish_min_rtt(&self, min_rtt: f64, now: u64) {
        self.min_rtt.store((min_rtt as u64).max(1), Relaxed);
        self.min_rtt_at.store(now, Relaxed);
    }
}

/// A number in `[0, 1)` from a splitmix64 step (the jitter: the state mixes in times since the
/// first window and the probes' response times, which differ between processes and resources).
fn unit_random(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// What one window measured.
#[derive(Clone, Copy, Debug)]
struct Measured {
    samples: u64,
    drops: u64,
    /// Response times of the calls that did not fail, added up.
    rtt_sum: u64,
    /// The most calls inside.
    inside: u64,
    duration: u64,
}

/// The next limit (before clamping) after a window, updating the minimum RTT and asking for a
/// probe when the window saw something only a probe can settle.
fn step(c: &AdaptiveConcurrency, state: &mut State, m: Measured) -> f64 {
    let limit = state.limit;
    // Failures: back off, learn nothing about latency.
    if m.drops > 0 && m.drops.saturating_mul(100) >= m.samples {
        state.previous = None;
        return limit * DROP_BACKOFF;
    }
    let finished = m.samples - m.drops;
    if finished == 0 {
        return limit;
    }
    let rtt = m.rtt_sum as f64 / finished as f64;
    if !(rtt.is_finite() && rtt > 0.0) {
        return limit;
    }
    if state.min_rtt <= 0.0 {
        state.min_rtt = rtt;
    } else if rtt < state.min_rtt * CLEAR_FALL {
        // The downstream got faster: this window's RTT is an upper bound of the new floor (it
        // may hold a queue); a probe measures the floor itself.
        state.min_rtt = rtt;
        state.probe_wanted = true;
    }
    let ratio = rtt / state.min_rtt;
    let target = c.rtt_tolerance;
    if ratio > target {
        // Over the target. If cutting the calls inside did not lower the RTT, or the limit
        // cannot go lower, the latency is the downstream's own: it got slower, and the minimum
        // RTT is stale. Only a probe tells.
        if let Some((inside_before, rtt_before)) = state.previous {
            let cut = (m.inside as f64) <= inside_before as f64 * SIGNIFICANT_CUT;
            let steady = rtt >= rtt_before * STEADY_RTT;
            if cut && steady && m.duration as f64 >= 2.0 * rtt {
                state.probe_wanted = true;
            }
        }
        if limit <= f64::from(c.min_limit) {
            state.at_min += 1;
            if state.at_min >= WINDOWS_AT_MIN {
                state.probe_wanted = true;
            }
        } else {
            state.at_min = 0;
        }
    } else {
        state.at_min = 0;
    }
    state.previous = Some((m.inside, rtt));
    let gradient = (target / ratio).clamp(GRADIENT_MIN, GRADIENT_MAX);
    if gradient > 1.0 && (m.inside as f64) < limit / 2.0 {
        // Room to grow, but the limit is not being used (app-limited): hold.
        return limit;
    }
    let mut next = limit + c.smoothing * (limit * gradient - limit);
    if ratio <= NO_QUEUE_MARGIN {
        next += f64::from(c.queue_size);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    /// Feeds `n` samples of `rtt` with `inside` calls inside over one window starting at `t`.
    fn window(l: &AdaptiveLimit, t: &mut u64, n: u64, rtt: u64, inside: u64, outcome: Outcome) {
        for i in 0..n {
            l.on_sample(*t + i * 100 * MS / n, rtt, inside, outcome);
        }
        *t += 100 * MS;
    }

    fn limit(config: AdaptiveConcurrency) -> AdaptiveLimit {
        AdaptiveLimit::new(config)
    }

    /// Settings without periodic probes in the first hour.
    fn no_periodic(c: AdaptiveConcurrency) -> AdaptiveConcurrency {
        AdaptiveConcurrency {
            min_rtt_interval: Duration::from_secs(3_600),
            ..c
        }
    }

    // A window closes when the first sample of the next one arrives: each assertion below
    // sees the windows before the last one fed.

    #[test]
    fn grows_without_queueing_only_when_the_limit_is_used() {
        let l = limit(no_periodic(AdaptiveConcurrency::default()));
        let mut t = 1_000 * MS;
        window(&l, &mut t, 50, 10 * MS, 20, Outcome::Success);
        window(&l, &mut t, 50, 10 * MS, 20, Outcome::Success);
        // gradient 1.2 (no queue), smoothed by 0.2: +4%, plus queue_size
        assert_eq!(l.limit(), 25, "used, no queueing: 20 x 1.04 + 4");
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        let grown = l.limit();
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        assert_eq!(l.limit(), grown, "app-limited: holds");
        assert_eq!(
            l.min_rtt(),
            Some((10 * MS, 1_100 * MS)),
            "the first window's RTT"
        );
    }

    #[test]
    fn converges_on_the_tolerance_and_shrinks_beyond() {
        let l = limit(no_periodic(AdaptiveConcurrency {
            initial_limit: 100,
            ..AdaptiveConcurrency::default()
        }));
        let mut t = 1_000 * MS;
        window(&l, &mut t, 100, 10 * MS, 100, Outcome::Success); // the minimum RTT
        window(&l, &mut t, 100, 12 * MS, 100, Outcome::Success);
        let start = l.limit();
        for _ in 0..600 {
            window(&l, &mut t, 100, 12 * MS, 100, Outcome::Success);
        }
        assert_eq!(
            l.limit(),
            start,
            "60 s at exactly the tolerance (1.2x the minimum RTT): no drift"
        );
        window(&l, &mut t, 100, 30 * MS, 100, Outcome::Success);
        window(&l, &mut t, 100, 30 * MS, 100, Outcome::Success);
        // gradient 1.2 / 3 = 0.4, bounded to 0.5, smoothed by 0.2: -10%
        assert_eq!(
            l.limit(),
            (start as f64 * 0.9).round() as u64,
            "3x: shrinks"
        );
    }

    #[test]
    fn drops_and_timeouts_shrink_and_cancellations_are_not_samples() {
        let l = limit(no_periodic(AdaptiveConcurrency {
            initial_limit: 100,
            min_limit: 10,
            timeout: Some(Duration::from_millis(500)),
            ..AdaptiveConcurrency::default()
        }));
        let mut t = 1_000 * MS;
        window(&l, &mut t, 100, 10 * MS, 100, Outcome::Dropped);
        window(&l, &mut t, 100, 10 * MS, 100, Outcome::Dropped);
        assert_eq!(l.limit(), 90, "a window of failures: -10%");
        window(&l, &mut t, 100, 600 * MS, 100, Outcome::Success);
        window(&l, &mut t, 100, 600 * MS, 100, Outcome::Success);
        assert_eq!(
            l.limit(),
            73,
            "another failed window, then one slower than the timeout"
        );
        // One failure in 200 calls (under 1%) is not an overload signal.
        l.on_sample(t, 10 * MS, 100, Outcome::Success); // closes the slow window
        let before = l.limit();
        assert_eq!(before, 66);
        for i in 1..200 {
            let outcome = if i == 1 {
                Outcome::Dropped
            } else {
                Outcome::Success
            };
            l.on_sample(t + i * MS / 2, 10 * MS, 100, outcome);
        }
        t += 100 * MS;
        window(&l, &mut t, 100, 10 * MS, 100, Outcome::Success);
        assert!(l.limit() >= before, "{} < {before}", l.limit());
        for _ in 0..100 {
            window(&l, &mut t, 100, 10 * MS, 100, Outcome::Dropped);
        }
        assert_eq!(l.limit(), 10, "never under min_limit");
    }

    /// Feeds one window of a downstream with `workers` that take `service` each, saturated by
    /// the limit: `limit` calls inside, each waiting behind `limit / workers` service times.
    fn saturated(l: &AdaptiveLimit, t: &mut u64, workers: u64, service: u64) {
        let inside = l.limit();
        let rtt = service * inside.max(workers) / workers;
        // Calls admitted during a probe see no queue (its limit is under the workers).
        window(l, t, 100, rtt, inside, Outcome::Success);
    }

    #[test]
    fn a_downstream_that_got_slower_is_re_measured_by_a_probe() {
        let l = limit(no_periodic(AdaptiveConcurrency {
            initial_limit: 40,
            ..AdaptiveConcurrency::default()
        }));
        let mut t = 1_000 * MS;
        for _ in 0..30 {
            saturated(&l, &mut t, 40, 10 * MS);
        }
        assert_eq!(l.min_rtt().map(|m| m.0), Some(10 * MS));
        assert!((46..=50).contains(&l.limit()), "settled at {}", l.limit());
        // From now on 40 ms: the limit first shrinks, sees that fewer calls inside did not
        // help, and probes.
        let mut lowest = u64::MAX;
        for _ in 0..30 {
            saturated(&l, &mut t, 40, 40 * MS);
            lowest = lowest.min(l.limit());
        }
        assert_eq!(l.min_rtt().map(|m| m.0), Some(40 * MS), "re-measured");
        assert!(
            lowest >= 25,
            "re-measured only after the limit fell to {lowest}"
        );
        for _ in 0..30 {
            saturated(&l, &mut t, 40, 40 * MS);
        }
        assert!((46..=50).contains(&l.limit()), "settled at {}", l.limit());
    }

    #[test]
    fn a_probe_without_samples_ends_at_its_deadline() {
        let l = limit(AdaptiveConcurrency {
            initial_limit: 40,
            min_rtt_interval: Duration::from_secs(1),
            min_rtt_jitter: 0.0,
            ..AdaptiveConcurrency::default()
        });
        let mut t = 1_000 * MS;
        for _ in 0..12 {
            window(&l, &mut t, 100, 20 * MS, 40, Outcome::Success);
        }
        assert_eq!(l.min_rtt().map(|m| m.0), Some(20 * MS));
        assert!(l.limit() > 40, "grown to {}", l.limit());
        // Queueing (30 ms) past the periodic due time: the next window's first sample closes
        // the window, and a probe pins the limit.
        window(&l, &mut t, 100, 30 * MS, 40, Outcome::Success);
        l.on_sample(t, 30 * MS, 40, Outcome::Success);
        assert_eq!(l.limit(), 4, "probing");
        // Only calls admitted before the probe finish: they are not samples. The first call
        // blocked after the deadline (1 s: ten sample windows) ends it; the minimum RTT stays.
        for i in 1..100 {
            l.on_sample(t + i * MS, 2_000 * MS, 40, Outcome::Success);
        }
        l.on_block(t + 500 * MS);
        assert_eq!(l.limit(), 4, "before the deadline");
        l.on_block(t + 1_000 * MS);
        assert!(l.limit() > 40, "restored to {}", l.limit());
        assert_eq!(l.min_rtt().map(|m| m.0), Some(20 * MS));
    }
}
