//! The adaptive concurrency limit: Gradient2's latency gradient, recomputed once per sample
//! window, with its reported flaws fixed (see [`AdaptiveConcurrency`] for the rules).
//!
//! Every exit adds its response time to the window in a few relaxed atomic adds; the entry path
//! reads the limit with one relaxed load. The exit that finds the window over takes a
//! `try_lock` (never waits: a thread that loses the race leaves the window to the winner) and
//! recomputes the limit.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use crate::rules::adaptive::AdaptiveConcurrency;

/// How an admitted call ended, for the limit. A call cancelled half-way is not reported, unless
/// it was cut after the timeout (a drop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It finished.
    Success,
    /// It failed (an overload signal: an error, a panic), or took longer than the timeout.
    Dropped,
}

/// Short RTTs within this share above the long one count as no queueing.
const NO_QUEUE_MARGIN: f64 = 1.05;
/// A short RTT under this share of the long one is a clear fall, taken at once.
const CLEAR_FALL: f64 = 0.9;
/// What a window with drops keeps of the limit.
const DROP_BACKOFF: f64 = 0.9;
/// A cut of the calls inside by at least this share that leaves the response time within
/// [`STEADY_RTT`] of the previous window's says the latency is not a queue of ours.
const SIGNIFICANT_CUT: f64 = 0.95;
const STEADY_RTT: f64 = 0.95;

/// The window's samples, added to by every exit.
#[derive(Debug, Default)]
struct Window {
    start: AtomicU64,
    samples: AtomicU64,
    rtt_sum_ns: AtomicU64,
    drops: AtomicU64,
    max_inside: AtomicU64,
}

/// What the recomputation keeps between windows.
#[derive(Debug)]
struct State {
    limit: f64,
    /// The no-load response time, in nanoseconds (0 before the first window).
    long: f64,
    /// The previous window's most calls inside and short RTT, to tell a queue from a slower
    /// downstream.
    previous: Option<(u64, f64)>,
}

/// One adaptive concurrency limit in force on a resource.
#[derive(Debug)]
pub(crate) struct AdaptiveLimit {
    config: AdaptiveConcurrency,
    limit: AtomicU64,
    window: Window,
    state: Mutex<State>,
}

impl AdaptiveLimit {
    /// A limit at `config.initial_limit` (validated settings).
    pub(crate) fn new(config: AdaptiveConcurrency) -> AdaptiveLimit {
        AdaptiveLimit {
            config,
            limit: AtomicU64::new(u64::from(config.initial_limit)),
            window: Window::default(),
            state: Mutex::new(State {
                limit: f64::from(config.initial_limit),
                long: 0.0,
                previous: None,
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

    /// Whether a call of `rtt_nanos` took longer than the timeout (a drop).
    #[inline]
    pub(crate) fn timed_out(&self, rtt_nanos: u64) -> bool {
        self.config
            .timeout
            .is_some_and(|t| u128::from(rtt_nanos) > t.as_nanos())
    }

    /// One finished call at `now`, `rtt_nanos` after it was admitted, with `inside` calls inside
    /// as it finished (itself included).
    pub(crate) fn on_sample(&self, now: u64, rtt_nanos: u64, inside: u64, outcome: Outcome) {
        let w = &self.window;
        // A sample at or after the window's end closes it first: it belongs to the next one.
        let start = w.start.load(Relaxed);
        let length = self.config.sample_window.as_nanos() as u64;
        if start == 0 {
            let _ = w.start.compare_exchange(0, now.max(1), Relaxed, Relaxed);
        } else if now.saturating_sub(start) >= length
            && w.samples.load(Relaxed) >= u64::from(self.config.min_samples)
        {
            if let Ok(mut state) = self.state.try_lock() {
                self.close_window(&mut state, now);
            }
        }
        if outcome == Outcome::Dropped || self.timed_out(rtt_nanos) {
            w.drops.fetch_add(1, Relaxed);
        } else {
            w.rtt_sum_ns.fetch_add(rtt_nanos, Relaxed);
        }
        w.samples.fetch_add(1, Relaxed);
        w.max_inside.fetch_max(inside, Relaxed);
    }

    /// Takes the window's samples and recomputes the limit.
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
        let duration = now.saturating_sub(start);
        let next = step(
            &self.config,
            state,
            Measured {
                samples,
                drops,
                rtt_sum,
                inside,
                duration,
            },
        );
        let c = &self.config;
        state.limit = next.clamp(f64::from(c.min_limit), f64::from(c.max_limit));
        self.limit.store(state.limit.round() as u64, Relaxed);
    }
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

/// The next limit (before clamping) after a window, updating the long RTT.
fn step(c: &AdaptiveConcurrency, state: &mut State, m: Measured) -> f64 {
    let limit = state.limit;
    // Failures: back off, learn nothing about latency (#176, #137).
    if m.drops > 0 && m.drops.saturating_mul(100) >= m.samples {
        state.previous = None;
        return limit * DROP_BACKOFF;
    }
    let finished = m.samples - m.drops;
    if finished == 0 {
        return limit;
    }
    let short = m.rtt_sum as f64 / finished as f64;
    if !(short.is_finite() && short > 0.0) {
        return limit;
    }
    // The long RTT falls with the short one: at once after a clear fall (the latency dropped:
    // a recovered downstream), else weighted by the samples seen...
    let weight = (finished as f64 / f64::from(c.long_window)).min(1.0);
    if state.long <= 0.0 || short < state.long * CLEAR_FALL {
        state.long = short;
    } else if short < state.long {
        state.long += (short - state.long) * weight;
    } else if let Some((inside_before, short_before)) = state.previous {
        // ...and rises only when fewer calls inside did not make calls faster: the latency
        // is the downstream's own. (Only when the window spans a few response times, so that
        // it saw the effect of the previous one.)
        let cut = (m.inside as f64) <= inside_before as f64 * SIGNIFICANT_CUT;
        let steady = short >= short_before * STEADY_RTT;
        if cut && steady && m.duration as f64 >= 2.0 * short {
            state.long = short;
        }
    }
    state.previous = Some((m.inside, short));
    let ratio = short / state.long;
    if ratio <= NO_QUEUE_MARGIN {
        // No queueing: grow, unless the limit is not being used (app-limited).
        if (m.inside as f64) < limit / 2.0 {
            return limit;
        }
        return limit * (1.0 + c.smoothing) + f64::from(c.queue_size);
    }
    if ratio <= c.rtt_tolerance {
        // Some queueing, within tolerance: hold (Gradient2 grows here: #134).
        return limit;
    }
    let gradient = (c.rtt_tolerance / ratio).clamp(0.5, 1.0);
    limit * (1.0 - c.smoothing) + limit * gradient * c.smoothing
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

    // A window closes when the first sample of the next one arrives: each assertion below
    // sees the windows before the last one fed.

    #[test]
    fn grows_without_queueing_only_when_the_limit_is_used() {
        let l = limit(AdaptiveConcurrency::default());
        let mut t = 1_000 * MS;
        window(&l, &mut t, 50, 10 * MS, 20, Outcome::Success);
        window(&l, &mut t, 50, 10 * MS, 20, Outcome::Success);
        assert_eq!(l.limit(), 28, "used, no queueing: 20 x 1.2 + 4");
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        let grown = l.limit();
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        window(&l, &mut t, 50, 10 * MS, 2, Outcome::Success);
        assert_eq!(l.limit(), grown, "app-limited: holds");
    }

    #[test]
    fn holds_within_tolerance_and_shrinks_beyond() {
        let l = limit(AdaptiveConcurrency {
            initial_limit: 100,
            ..AdaptiveConcurrency::default()
        });
        let mut t = 1_000 * MS;
        window(&l, &mut t, 100, 10 * MS, 200, Outcome::Success); // the no-load RTT
        window(&l, &mut t, 100, 13 * MS, 200, Outcome::Success);
        let start = l.limit();
        for _ in 0..600 {
            window(&l, &mut t, 100, 13 * MS, 200, Outcome::Success);
        }
        assert_eq!(
            l.limit(),
            start,
            "60 s at 1.3x the no-load latency: no drift up (#134)"
        );
        window(&l, &mut t, 100, 30 * MS, 200, Outcome::Success);
        window(&l, &mut t, 100, 30 * MS, 200, Outcome::Success);
        let shrunk = l.limit();
        // gradient 1.5 / 3 = 0.5, smoothed by 0.2: -10%
        assert_eq!(shrunk, (start as f64 * 0.9).round() as u64, "3x: shrinks");
    }

    #[test]
    fn drops_and_timeouts_shrink_and_cancellations_are_not_samples() {
        let l = limit(AdaptiveConcurrency {
            initial_limit: 100,
            min_limit: 10,
            timeout: Some(Duration::from_millis(500)),
            ..AdaptiveConcurrency::default()
        });
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

    #[test]
    fn a_downstream_that_got_slower_for_good_becomes_the_baseline() {
        let l = limit(AdaptiveConcurrency {
            initial_limit: 100,
            ..AdaptiveConcurrency::default()
        });
        let mut t = 1_000 * MS;
        window(&l, &mut t, 100, 10 * MS, 100, Outcome::Success);
        // From now on 40 ms whatever the calls inside: the limit first shrinks...
        let mut inside = 100;
        for _ in 0..20 {
            inside = l.limit();
            window(&l, &mut t, 100, 40 * MS, inside, Outcome::Success);
        }
        // ...then, seeing that fewer calls inside did not help, takes 40 ms as no-load and
        // grows again.
        for _ in 0..20 {
            inside = l.limit();
            window(&l, &mut t, 100, 40 * MS, inside, Outcome::Success);
        }
        assert!(
            l.limit() >= 100,
            "recovered to {} (inside {inside})",
            l.limit()
        );
    }
}
