//! The statistics as OpenTelemetry metrics (feature `opentelemetry`): observable instruments
//! whose callbacks read every resource's running totals when the SDK collects, as the
//! Prometheus collector does at scrape time. Nothing is recorded on the call path for them.
//!
//! | instrument | kind | attributes | what |
//! |---|---|---|---|
//! | `sentinel.calls` | monotonic sum (observable counter), `{call}` | `sentinel.resource`, `sentinel.outcome`, and on blocks `sentinel.block.kind` | calls since start, by outcome |
//! | `sentinel.concurrency` | gauge, `{call}` | `sentinel.resource` | calls inside now |
//!
//! `sentinel.outcome` is `pass` (admitted), `block` (refused) or `error` (admitted, then
//! failed: such a call is counted under `pass` too, as the Prometheus totals count it).
//! `sentinel.block.kind` is the kind of rule that refused, named as the Prometheus `rule`
//! label is (`flow`, `concurrency`, `circuit_breaker`, `hotspot`, `system`, `authority`,
//! `outlier`, `custom`, `cluster`); kinds that refused nothing are left out. The counts are
//! cumulative: a collection reads them, it does not reset them.
//!
//! Written against the `opentelemetry` crate 0.33's metrics API (its [`Meter`] is in
//! [`register`]'s signature), re-exported as [`api`]: any SDK of that version (and its
//! exporters) reads these instruments.
//!
//! ```
//! use sentinel_runtime::metrics::opentelemetry::{self, api};
//!
//! // With an SDK: `let meter = sdk_meter_provider.meter("my-service");`
//! let meter = api::global::meter("my-service");
//! opentelemetry::register(&meter);
//! ```

use opentelemetry::metrics::{AsyncInstrument, Meter};
use opentelemetry::KeyValue;

/// The `opentelemetry` crate (0.33) whose [`Meter`] [`register`] takes, re-exported so that a
/// user's version always matches.
pub use opentelemetry as api;

/// The name of the calls instrument.
pub const CALLS: &str = "sentinel.calls";
/// The name of the concurrency instrument.
pub const CONCURRENCY: &str = "sentinel.concurrency";

/// Registers `sentinel.calls` and `sentinel.concurrency` with `meter`. Register them once per
/// meter provider: twice would report every series twice.
pub fn register(meter: &Meter) {
    meter
        .u64_observable_counter(CALLS)
        .with_description("Calls since start, by outcome (an error is a pass that failed).")
        .with_unit("{call}")
        .with_callback(observe_calls)
        .build();
    meter
        .u64_observable_gauge(CONCURRENCY)
        .with_description("Calls inside now.")
        .with_unit("{call}")
        .with_callback(observe_concurrency)
        .build();
}

/// Observes every resource's calls by outcome.
fn observe_calls(observer: &dyn AsyncInstrument<u64>) {
    for (name, stats) in super::all() {
        let resource = KeyValue::new("sentinel.resource", name);
        let outcome = |o: &'static str| KeyValue::new("sentinel.outcome", o);
        observer.observe(stats.pass_total, &[resource.clone(), outcome("pass")]);
        observer.observe(stats.error_total, &[resource.clone(), outcome("error")]);
        for (kind, n) in stats.block_total_by_rule.by_rule() {
            if n > 0 {
                let attributes = [
                    resource.clone(),
                    outcome("block"),
                    KeyValue::new("sentinel.block.kind", kind),
                ];
                observer.observe(n, &attributes);
            }
        }
    }
}

/// Observes every resource's calls inside.
fn observe_concurrency(observer: &dyn AsyncInstrument<u64>) {
    for (name, stats) in super::all() {
        observer.observe(
            stats.concurrency,
            &[KeyValue::new("sentinel.resource", name)],
        );
    }
}

#[cfg(test)]
mod tests {
    //! A meter whose instruments keep their callbacks, run them on `collect` as an SDK does at
    //! collection time, and keep what they observe: the API's own contract, without an SDK.

    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use opentelemetry::metrics::{
        AsyncInstrumentBuilder, Callback, InstrumentProvider, ObservableCounter, ObservableGauge,
    };

    use super::*;
    use crate::rules::{self, FlowRule};

    type Series = BTreeMap<Vec<(String, String)>, u64>;

    #[derive(Default)]
    struct Provider {
        counters: Mutex<Vec<(String, Callback<u64>)>>,
        gauges: Mutex<Vec<(String, Callback<u64>)>>,
    }

    impl InstrumentProvider for Provider {
        fn u64_observable_counter(
            &self,
            builder: AsyncInstrumentBuilder<'_, ObservableCounter<u64>, u64>,
        ) -> ObservableCounter<u64> {
            let mut counters = self.counters.lock().unwrap();
            for callback in builder.callbacks {
                counters.push((builder.name.to_string(), callback));
            }
            ObservableCounter::new()
        }

        fn u64_observable_gauge(
            &self,
            builder: AsyncInstrumentBuilder<'_, ObservableGauge<u64>, u64>,
        ) -> ObservableGauge<u64> {
            let mut gauges = self.gauges.lock().unwrap();
            for callback in builder.callbacks {
                gauges.push((builder.name.to_string(), callback));
            }
            ObservableGauge::new()
        }
    }

    struct Observed(Mutex<Series>);

    impl AsyncInstrument<u64> for Observed {
        fn observe(&self, value: u64, attributes: &[KeyValue]) {
            let mut key: Vec<(String, String)> = attributes
                .iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect();
            key.sort();
            let previous = self.0.lock().unwrap().insert(key.clone(), value);
            assert!(previous.is_none(), "one observation per series: {key:?}");
        }
    }

    /// Runs every callback of the instrument `name`.
    fn collect(list: &Mutex<Vec<(String, Callback<u64>)>>, name: &str) -> Series {
        let observed = Observed(Mutex::new(Series::new()));
        for (n, callback) in list.lock().unwrap().iter() {
            if n == name {
                callback(&observed);
            }
        }
        observed.0.into_inner().unwrap()
    }

    fn of(series: &Series, resource: &str) -> Series {
        series
            .iter()
            .filter(|(k, _)| k.contains(&("sentinel.resource".into(), resource.into())))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    fn key(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut key: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        key.sort();
        key
    }

    #[test]
    fn calls_and_concurrency_are_observed_exactly_and_again_unchanged() {
        let _clock = crate::clock::MockClock::install();
        let resource = "otel-calls";
        rules::load_flow_rules(vec![FlowRule::qps(resource, 3.0)]).unwrap();
        let provider = Arc::new(Provider::default());
        register(&Meter::new(provider.clone()));

        let mut inside = Vec::new();
        for i in 0..5 {
            match crate::entry(resource) {
                Ok(entry) if i == 0 => {
                    entry.set_error();
                    drop(entry);
                }
                Ok(entry) => inside.push(entry),
                Err(_) => {}
            }
        }
        let calls = of(&collect(&provider.counters, CALLS), resource);
        let expected: Series = [
            (
                key(&[
                    ("sentinel.resource", resource),
                    ("sentinel.outcome", "pass"),
                ]),
                3,
            ),
            (
                key(&[
                    ("sentinel.resource", resource),
                    ("sentinel.outcome", "error"),
                ]),
                1,
            ),
            (
                key(&[
                    ("sentinel.resource", resource),
                    ("sentinel.outcome", "block"),
                    ("sentinel.block.kind", "flow"),
                ]),
                2,
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(calls, expected);
        assert_eq!(
            of(&collect(&provider.counters, CALLS), resource),
            expected,
            "a second collection reads the same totals"
        );
        let gauge = of(&collect(&provider.gauges, CONCURRENCY), resource);
        assert_eq!(
            gauge,
            [(key(&[("sentinel.resource", resource)]), 2)]
                .into_iter()
                .collect::<Series>()
        );
        drop(inside);
        let gauge = of(&collect(&provider.gauges, CONCURRENCY), resource);
        assert_eq!(gauge.values().copied().collect::<Vec<_>>(), [0]);
        rules::load_flow_rules(vec![]).unwrap();
    }
}
