//! The statistics through the `metrics` facade (feature `metrics`, metrics 0.24):
//! [`report_every`] starts a thread that, once a period, adds each resource's new calls to
//! the recorder the application installed (Prometheus, StatsD, Datadog exporters...).
//! Nothing is recorded on the call path for it.
//!
//! | counter | labels | what |
//! |---|---|---|
//! | `sentinel_calls_total` | `resource`, `outcome`, and on blocks `block_kind` | calls, by outcome |
//!
//! `outcome` is `pass` (admitted), `block` (refused) or `error` (admitted, then failed: counted
//! under `pass` too, as the Prometheus totals count it); `block_kind` is the kind of rule that
//! refused, named as the Prometheus `rule` label is (`flow`, `hotspot`, `circuit_breaker`...).
//!
//! The reporter sends **increments** only: each report adds what was counted since the last
//! one (the first, everything since start), so the recorder's counter equals the runtime's
//! total and a running total is never added twice. A period without calls adds nothing. Keep
//! one reporter per process: two would each add every call. Dropping the [`Reporter`] stops the
//! thread after one last report (nothing counted before the drop is lost) and joins it.
//!
//! ```
//! use std::time::Duration;
//!
//! // After the application installed its recorder (`metrics::set_global_recorder`, or an
//! // exporter's `install()`):
//! let reporter = sentinel_runtime::metrics::facade::report_every(Duration::from_secs(10));
//! // ... serve ...
//! drop(reporter); // one last report, then the thread is joined
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ::metrics::{Key, Label, Level, Metadata};

/// The counter's name.
pub const CALLS_TOTAL: &str = "sentinel_calls_total";

/// The shortest period [`report_every`] takes (a shorter one is raised to it).
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// Keeps the reporter of [`report_every`] running; dropping it makes one last report, stops
/// the thread and joins it.
#[derive(Debug)]
#[must_use = "the reporter stops as soon as its guard is dropped"]
pub struct Reporter {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    reports: Arc<AtomicU64>,
}

impl Reporter {
    /// How many reports the thread has made so far (one a period, whether or not there was
    /// anything to add).
    pub fn reports(&self) -> u64 {
        self.reports.load(Ordering::Acquire)
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        // Closing the channel wakes the thread at once.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic in the recorder ended the thread already: nothing more to stop.
            let _ = thread.join();
        }
    }
}

/// Starts a thread (`sentinel-metrics`) that adds every resource's new calls to the
/// application's recorder every `period` (at least [`MIN_PERIOD`]); see the
/// [module docs](self). If the thread cannot be started, the guard holds none and nothing is
/// reported (the failure is the operating system's: out of threads).
pub fn report_every(period: Duration) -> Reporter {
    let period = period.max(MIN_PERIOD);
    let (stop, stopped) = mpsc::channel::<()>();
    let reports = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&reports);
    let thread = std::thread::Builder::new()
        .name("sentinel-metrics".into())
        .spawn(move || {
            let mut last = Totals::new();
            loop {
                let done = match stopped.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => false,
                    // The guard was dropped (the only sender), or sent a stop.
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
                };
                report(&mut last);
                counted.fetch_add(1, Ordering::Release);
                if done {
                    return;
                }
            }
        })
        .ok();
    Reporter {
        stop: Some(stop),
        thread,
        reports,
    }
}

/// The totals reported so far, by series: (resource, outcome, block kind).
type Totals = HashMap<(String, &'static str, &'static str), u64>;

/// Adds to the recorder what each series counted since `last`, and remembers the new totals.
fn report(last: &mut Totals) {
    for (name, stats) in super::all() {
        let mut series = vec![
            ("pass", "", stats.pass_total),
            ("error", "", stats.error_total),
        ];
        for (kind, n) in stats.block_total_by_rule.by_rule() {
            series.push(("block", kind, n));
        }
        for (outcome, kind, total) in series {
            let seen = last.entry((name.clone(), outcome, kind)).or_insert(0);
            // Totals only grow; a smaller one (never seen) adds nothing.
            let delta = total.saturating_sub(*seen);
            *seen = (*seen).max(total);
            if delta > 0 {
                increment(&name, outcome, kind, delta);
            }
        }
    }
}

/// Adds `delta` to the series' counter in the application's recorder.
fn increment(resource: &str, outcome: &'static str, kind: &'static str, delta: u64) {
    let mut labels = vec![
        Label::new("resource", resource.to_owned()),
        Label::new("outcome", outcome),
    ];
    if !kind.is_empty() {
        labels.push(Label::new("block_kind", kind));
    }
    let key = Key::from_parts(CALLS_TOTAL, labels);
    let metadata = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));
    ::metrics::with_recorder(|recorder| recorder.register_counter(&key, &metadata))
        .increment(delta);
}

#[cfg(test)]
mod tests {
    //! A recorder of our own, installed once for the test binary: it keeps every increment it
    //! is given, per series.

    use std::sync::{Mutex, OnceLock};
    use std::time::Instant;

    use ::metrics::{Counter, CounterFn, Gauge, Histogram, KeyName, Recorder, SharedString, Unit};

    use super::*;
    use crate::rules::{self, FlowRule};

    type Increments = Arc<Mutex<Vec<(Vec<(String, String)>, u64)>>>;

    struct Keeping(Increments);

    struct Series(Vec<(String, String)>, Increments);

    impl CounterFn for Series {
        fn increment(&self, value: u64) {
            self.1.lock().unwrap().push((self.0.clone(), value));
        }
        fn absolute(&self, _: u64) {
            panic!("the reporter only adds increments");
        }
    }

    impl Recorder for Keeping {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.push(("__name__".into(), key.name().to_owned()));
            labels.sort();
            Counter::from_arc(Arc::new(Series(labels, Arc::clone(&self.0))))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    fn installed() -> &'static Increments {
        static KEPT: OnceLock<Increments> = OnceLock::new();
        KEPT.get_or_init(|| {
            let kept = Increments::default();
            ::metrics::set_global_recorder(Keeping(Arc::clone(&kept)))
                .unwrap_or_else(|_| panic!("a recorder was installed already"));
            kept
        })
    }

    /// The increments given for `resource`'s series, summed per series, and how many there
    /// were.
    fn of(kept: &Increments, resource: &str) -> (HashMap<Vec<(String, String)>, u64>, usize) {
        let mut sums = HashMap::new();
        let mut n = 0;
        for (labels, value) in kept.lock().unwrap().iter() {
            if labels.contains(&("resource".into(), resource.into())) {
                *sums.entry(labels.clone()).or_insert(0) += value;
                n += 1;
            }
        }
        (sums, n)
    }

    fn series(resource: &str, outcome: &str, kind: Option<&str>) -> Vec<(String, String)> {
        let mut labels = vec![
            ("__name__".to_owned(), CALLS_TOTAL.to_owned()),
            ("resource".to_owned(), resource.to_owned()),
            ("outcome".to_owned(), outcome.to_owned()),
        ];
        if let Some(kind) = kind {
            labels.push(("block_kind".to_owned(), kind.to_owned()));
        }
        labels.sort();
        labels
    }

    /// Waits (bounded, real time) until `reporter` has made `n` more reports.
    fn await_reports(reporter: &Reporter, n: u64) {
        let target = reporter.reports() + n;
        let deadline = Instant::now() + Duration::from_secs(10);
        while reporter.reports() < target {
            assert!(Instant::now() < deadline, "the reporter stopped reporting");
            std::thread::yield_now();
        }
    }

    #[test]
    fn increments_add_up_to_the_totals_and_an_idle_period_adds_nothing() {
        let clock = crate::clock::MockClock::install();
        let kept = installed();
        let resource = "facade-calls";
        rules::load_flow_rules(vec![FlowRule::qps(resource, 3.0)]).unwrap();
        let reporter = report_every(Duration::from_millis(2));

        for round in 0..3 {
            for i in 0..5 {
                if let Ok(entry) = crate::entry(resource)
                    && i == 0
                {
                    entry.set_error();
                }
            }
            // A report in between: increments, not totals again.
            await_reports(&reporter, 2);
            let (sums, _) = of(kept, resource);
            let rounds = round + 1;
            assert_eq!(
                sums.get(&series(resource, "pass", None)),
                Some(&(3 * rounds))
            );
            assert_eq!(sums.get(&series(resource, "error", None)), Some(&rounds));
            assert_eq!(
                sums.get(&series(resource, "block", Some("flow"))),
                Some(&(2 * rounds))
            );
            assert_eq!(sums.len(), 3, "no other series: {sums:?}");
            // The next round's window.
            clock.advance(Duration::from_secs(1));
        }
        // No calls: several reports, not one increment.
        let (_, before) = of(kept, resource);
        await_reports(&reporter, 5);
        assert_eq!(of(kept, resource).1, before, "an idle period adds nothing");

        // Calls just before the drop are in its last report; the thread is joined.
        assert!(crate::entry(resource).is_ok());
        drop(reporter);
        let (sums, _) = of(kept, resource);
        assert_eq!(sums.get(&series(resource, "pass", None)), Some(&10));
        rules::load_flow_rules(vec![]).unwrap();
    }
}
