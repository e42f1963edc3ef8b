//! [`FlowRule`]: plain, validated data.

use std::time::Duration;

use crate::error::RuleError;
pub use crate::kinds::flow::adaptive_rule::AdaptiveConcurrency;
pub use crate::kinds::flow::origin_rule::FlowOrigin;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};

/// The largest threshold a flow rule accepts (passes per window, or calls inside).
pub const MAX_THRESHOLD: f64 = 2_147_483_647.0;
pub use crate::rule_data::window::MAX_SAMPLE_COUNT;
/// The window a flow rule uses unless told otherwise: one second...
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);
/// ...in ten buckets of 100 ms, so a boundary burst is bounded by a tenth of the window.
pub const DEFAULT_SAMPLE_COUNT: u32 = 10;
/// The largest `cold_factor` a warm-up accepts: a larger one would start so cold that it admits
/// nothing for the whole warm-up period.
pub const MAX_COLD_FACTOR: f64 = 100.0;
/// The longest `max_wait` a throttling rule accepts.
pub const MAX_WAIT_LIMIT: Duration = Duration::from_secs(3_600);
/// The longest warm-up period a rule accepts.
pub const MAX_WARM_UP: Duration = Duration::from_secs(24 * 3_600);

/// Sentinel's cold start: after a period of low traffic the allowed rate starts at
/// `threshold / cold_factor` and rises to the threshold over `period`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmUp {
    /// How long the rate takes to rise from cold to the threshold (positive, whole
    /// milliseconds).
    pub period: Duration,
    /// How much lower the cold rate is: `threshold / cold_factor` (finite, > 1; Sentinel's
    /// default is 3).
    pub cold_factor: f64,
}

/// What a flow rule counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlowMetric {
    /// Passes per window (QPS with the default one-second window).
    Qps,
    /// Calls inside at once.
    Concurrency,
    /// Calls inside at once, under a limit that follows the measured latency
    /// ([`FlowRule::adaptive_concurrency`]).
    AdaptiveConcurrency,
}

/// A flow rule: at most `threshold` passes per `window` (QPS), or at most `threshold` calls
/// inside at once (concurrency).
///
/// # Admission is exact
///
/// A pass is reserved with one atomic add and rolled back if it overshoots, so no number of
/// threads gets more than the threshold through: for a QPS rule, the passes counted in the
/// window never exceed `floor(threshold)`; for a concurrency rule, never more than
/// `floor(threshold)` callers are inside.
///
/// # Window modes (QPS rules)
///
/// The window of length `W` is split into `N = sample_count` buckets of `W / N`.
///
/// * **Default (Sentinel's semantics).** A call passes if the current bucket plus the previous
///   `N - 1` hold fewer than `threshold` passes. Any true interval of length `W` overlaps at most
///   `N + 1` buckets, so it sees at most `threshold` passes plus those of one bucket: the bound
///   is **`2 x threshold`** in the worst case (all passes at the end of one bucket, then all
///   again at the start of the bucket `N` later, which no longer counts the first).
/// * **Strict** (`.strict(true)`). A call passes if the current bucket plus the previous `N`
///   hold fewer than `threshold` passes. Every true interval of length `W` lies within `N + 1`
///   consecutive buckets, all counted when its last call was admitted, so **any interval of
///   length `W` holds at most `threshold` passes**. The price: sustained throughput can be up to
///   `1/N` lower, since one extra bucket is always counted.
///
/// # Control behaviours (QPS rules)
///
/// * **Reject** (default): a call over the threshold is blocked at once.
/// * **Warm-up** (`.warm_up(period, cold_factor)`): Sentinel's token model, in Sentinel's
///   whole tokens. With `warning = floor(floor(period_s * threshold) / (cold_factor - 1))`,
///   `max = warning + floor(2 * period_s * threshold / (1 + cold_factor))` and
///   `slope = (cold_factor - 1) / threshold / (max - warning)`, the stored tokens start at `max`
///   (cold); once a second they are refilled at `threshold` per second (rounded down) while
///   below `warning`, or while the previous second passed fewer than
///   `max(floor(floor(threshold) / cold_factor), 1)` calls, capped at `max`, and reduced by the
///   previous second's passes. Above `warning` the allowed rate is
///   `1 / ((tokens - warning) * slope + 1 / threshold)` (one ulp up, as Sentinel's
///   `Math.nextUp`); below it, the threshold; never below one call a second (for a threshold of
///   at least 1). So under full load each second admits what Sentinel's `WarmUpController`
///   admits, and the threshold is reached within about `1.5 x period`. Sentinel differs where
///   `threshold < cold_factor`: its cold rate admits nothing, and it never warms up. Needs the
///   default one-second window.
/// * **Throttling** (`.throttle(max_wait)`): calls pass at evenly spaced times, `window /
///   threshold` apart (1 / QPS), kept in nanoseconds. A call whose turn is more than `max_wait`
///   away is blocked; otherwise the caller waits for its turn (a thread sleeps, an `async fn`
///   awaits a timer). Each turn is taken with a CAS, so no two callers share one.
/// * **Warm-up + throttling**: both; the spacing follows the warm-up rate.
///
/// # Related resource (QPS rules)
///
/// `.relate("writes")` makes the rule count the *other* resource's passes per second instead of
/// this one's, e.g. to throttle reads while writes are heavy: a call is blocked while `writes`
/// passed at least `threshold` calls in its last second. If the related resource has no node
/// yet, calls pass. Not combined with warm-up or throttling; needs the default window.
///
/// ```
/// use sentinel_runtime::rules::FlowRule;
/// use std::time::Duration;
///
/// let api = FlowRule::qps("api", 100.0).strict(true);
/// let cold_start = FlowRule::qps("search", 200.0).warm_up(Duration::from_secs(10), 3.0);
/// let paced = FlowRule::qps("mailer", 20.0).throttle(Duration::from_millis(500));
/// let reads = FlowRule::qps("reads", 50.0).relate("writes");
/// let db = FlowRule::concurrency("db", 8);
/// let per_minute = FlowRule::qps("report", 10.0).window(Duration::from_secs(60), 60);
/// # let _ = (api, db, per_minute, cold_start, paced, reads);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FlowRule {
    /// The resource the rule applies to.
    pub resource: String,
    /// What the rule counts.
    pub metric: FlowMetric,
    /// Passes per window ([`FlowMetric::Qps`]) or calls inside ([`FlowMetric::Concurrency`]);
    /// finite, `0..=MAX_THRESHOLD`. Fractions are rounded down; `0` rejects every call.
    pub threshold: f64,
    /// The window's length (QPS rules): a whole number of milliseconds. Default one second.
    pub window: Duration,
    /// Buckets in the window (QPS rules): `1..=MAX_SAMPLE_COUNT`, dividing the window's
    /// milliseconds. Default 10.
    pub sample_count: u32,
    /// Use the strict window (QPS rules): see the type's docs.
    pub strict: bool,
    /// Warm up from cold (QPS rules): see the type's docs.
    pub warm_up: Option<WarmUp>,
    /// Throttle (pace) instead of rejecting, queueing a call at most this long (QPS rules).
    pub max_wait: Option<Duration>,
    /// Count this other resource's passes instead (QPS rules).
    pub relate: Option<String>,
    /// The adaptive limit's settings ([`FlowMetric::AdaptiveConcurrency`] rules; their defaults
    /// if none).
    pub adaptive: Option<AdaptiveConcurrency>,
    /// Share the threshold across the service's instances (QPS rules): see
    /// [`cluster`](Self::cluster). Default none: the rule is per process.
    pub cluster: Option<ClusterThreshold>,
    /// What a cluster rule does while the cluster's store cannot be reached. Default
    /// [`ClusterFallback::Local`].
    pub cluster_fallback: ClusterFallback,
    /// Which callers the rule limits (Sentinel's `limitApp`): see [`FlowOrigin`]. Default
    /// [`FlowOrigin::All`], every caller counted together.
    pub origin: FlowOrigin,
    /// Shadow mode: the rule is evaluated with its own state as if it were enforced, and a call
    /// it would refuse is counted ([`ResourceStats::shadow_block_total`]) but goes on. Default
    /// false. See [`FlowRule::shadow`].
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub shadow: bool,
}

impl FlowRule {
    /// At most `threshold` passes per second on `resource`.
    pub fn qps(resource: impl Into<String>, threshold: f64) -> FlowRule {
        FlowRule {
            resource: resource.into(),
            metric: FlowMetric::Qps,
            threshold,
            window: DEFAULT_WINDOW,
            sample_count: DEFAULT_SAMPLE_COUNT,
            strict: false,
            warm_up: None,
            max_wait: None,
            relate: None,
            adaptive: None,
            cluster: None,
            cluster_fallback: ClusterFallback::Local,
            origin: FlowOrigin::All,
            shadow: false,
        }
    }

    /// Limits only the calls whose origin is `origin` (trimmed, ignoring ASCII case), against
    /// their own threshold: Sentinel's `limitApp: "appA"`. QPS rules only.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, FlowRule};
    /// use sentinel_runtime::{BlockKind, EntryBuilder};
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    ///
    /// rules::load_flow_rules(vec![FlowRule::qps("doc-origin", 1.0).origin("appA")])?;
    /// let call = |app: &str| EntryBuilder::new("doc-origin").origin(app).enter();
    /// assert!(call("appA").is_ok());
    /// assert_eq!(call("appA").unwrap_err().kind(), BlockKind::Flow);
    /// assert!(call("appB").is_ok() && call("appB").is_ok(), "appB is not limited");
    /// # rules::load_flow_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    pub fn origin(mut self, origin: impl Into<String>) -> FlowRule {
        self.origin = FlowOrigin::Named(origin.into());
        self
    }

    /// Limits each origin that no other flow rule of the resource names, each against its own
    /// threshold: Sentinel's `limitApp: "other"`. QPS rules that reject over the threshold
    /// only; see [`FlowOrigin::Other`].
    pub fn other_origins(mut self) -> FlowRule {
        self.origin = FlowOrigin::Other;
        self
    }

    /// At most `max` calls inside `resource` at once.
    pub fn concurrency(resource: impl Into<String>, max: u32) -> FlowRule {
        FlowRule {
            metric: FlowMetric::Concurrency,
            ..FlowRule::qps(resource, f64::from(max))
        }
    }

    /// A concurrency limit on `resource` that finds itself: it moves with the measured latency
    /// against a minimum RTT it re-measures now and then (as Envoy's adaptive concurrency
    /// filter: see [`AdaptiveConcurrency`]), from 20 up to 200 calls inside by default. A call over the
    /// current limit is blocked with [`BlockKind::Concurrency`](crate::BlockKind::Concurrency);
    /// [`metrics::snapshot`](crate::metrics::snapshot) shows the limit
    /// (`ResourceStats::concurrency_limit`). A call that fails
    /// ([`Entry::set_error`](crate::Entry::set_error), a panic, the tower layer's 5xx) or takes
    /// longer than the settings' `timeout` counts as a drop and lowers the limit; a cancelled
    /// call (a future dropped half-way) counts as neither success nor failure.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, AdaptiveConcurrency, FlowRule};
    ///
    /// let db = FlowRule::adaptive_concurrency("db");
    /// let tuned = FlowRule::adaptive_concurrency("search").adaptive(AdaptiveConcurrency {
    ///     max_limit: 500,
    ///     ..AdaptiveConcurrency::default()
    /// });
    /// rules::load_flow_rules(vec![db, tuned])?;
    /// # rules::load_flow_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    pub fn adaptive_concurrency(resource: impl Into<String>) -> FlowRule {
        // The settings stay `None` (the defaults) until `adaptive` gives some, as in files.
        let initial = AdaptiveConcurrency::default().initial_limit;
        FlowRule {
            metric: FlowMetric::AdaptiveConcurrency,
            ..FlowRule::qps(resource, f64::from(initial))
        }
    }

    /// The adaptive limit's settings (for [`adaptive_concurrency`](Self::adaptive_concurrency)
    /// rules).
    pub fn adaptive(mut self, settings: AdaptiveConcurrency) -> FlowRule {
        self.adaptive = Some(settings);
        self
    }

    /// The adaptive settings in force for this rule: its own, else the defaults.
    pub(crate) fn adaptive_settings(&self) -> AdaptiveConcurrency {
        self.adaptive.unwrap_or_default()
    }

    /// Counts passes over `window` split into `sample_count` buckets; the threshold is then per
    /// `window`.
    pub fn window(mut self, window: Duration, sample_count: u32) -> FlowRule {
        self.window = window;
        self.sample_count = sample_count;
        self
    }

    /// Chooses the strict window (any interval of the window's length holds at most
    /// `threshold` passes) or the default one.
    pub fn strict(mut self, strict: bool) -> FlowRule {
        self.strict = strict;
        self
    }

    /// Warms up from cold over `period`, starting at `threshold / cold_factor`.
    pub fn warm_up(mut self, period: Duration, cold_factor: f64) -> FlowRule {
        self.warm_up = Some(WarmUp {
            period,
            cold_factor,
        });
        self
    }

    /// Paces calls evenly instead of rejecting them, queueing each at most `max_wait`.
    pub fn throttle(mut self, max_wait: Duration) -> FlowRule {
        self.max_wait = Some(max_wait);
        self
    }

    /// Counts `resource`'s passes per second instead of this rule's own resource's.
    pub fn relate(mut self, resource: impl Into<String>) -> FlowRule {
        self.relate = Some(resource.into());
        self
    }

    /// Makes the rule hold across every instance of the service (QPS rules): with a started
    /// `cluster::Cluster` (Cargo feature `redis`), the instances share one limit kept in Redis;
    /// without one, or while Redis cannot be reached, the rule limits locally as its
    /// [`cluster_fallback`](Self::cluster_fallback) says. A resource has at most one cluster
    /// rule per window (a second would share the first's limit: loading it is refused). Not
    /// with warm-up, throttling or `relate`.
    pub fn cluster(mut self, threshold: ClusterThreshold) -> FlowRule {
        self.cluster = Some(threshold);
        self
    }

    /// What the cluster rule does while the cluster's store cannot be reached.
    pub fn cluster_fallback(mut self, fallback: ClusterFallback) -> FlowRule {
        self.cluster_fallback = fallback;
        self
    }

    /// Puts the rule in shadow mode (`true`) or in force (`false`, the default). A shadow rule
    /// is evaluated with its own state (windows, tables, breaker state) but never blocks,
    /// delays or takes anything from an enforced rule: a call it would refuse is counted in
    /// [`ResourceStats::shadow_block_total`] and goes on. Turning it to `false` later (a
    /// reload of the same rule) keeps its state: what it watched is what it enforces. Not with
    /// `cluster` (a shadow rule must not spend the tokens the instances share).
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub fn shadow(mut self, shadow: bool) -> FlowRule {
        self.shadow = shadow;
        self
    }

    /// The window in whole milliseconds (valid rules only).
    pub(crate) fn window_ms(&self) -> u64 {
        self.window.as_millis() as u64
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        crate::rule_data::resource::validate(&self.resource)?;
        if self.shadow && self.cluster.is_some() {
            return err(
                "cluster",
                "is not available on a shadow rule: a cluster rule spends the tokens the \
                 service's instances share, so a shadow one would take them from the enforced \
                 rules of other instances; watch the rule per process first (without `cluster`)"
                    .into(),
            );
        }
        let t = self.threshold;
        if !t.is_finite() {
            return err("threshold", format!("must be a finite number, got {t}"));
        }
        if t < 0.0 {
            return err("threshold", format!("must be >= 0, got {t}"));
        }
        if t > MAX_THRESHOLD {
            return err(
                "threshold",
                format!("must be at most {MAX_THRESHOLD}, got {t}"),
            );
        }
        crate::rule_data::window::validate(&self.resource, self.window, self.sample_count)?;
        match (self.metric, &self.adaptive) {
            (FlowMetric::AdaptiveConcurrency, settings) => {
                settings.unwrap_or_default().validate(&self.resource)?
            }
            (_, Some(_)) => {
                return err(
                    "adaptive",
                    "applies to adaptive concurrency rules only (FlowRule::adaptive_concurrency)"
                        .into(),
                )
            }
            (_, None) => {}
        }
        self.validate_behaviour()
    }

    /// The control behaviour and relation: QPS rules only, and only in combinations that mean
    /// something.
    fn validate_behaviour(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        let qps_only = |field: &'static str| {
            err(
                field,
                "applies to QPS rules only, not to concurrency rules".into(),
            )
        };
        if self.cluster.is_some() && self.metric != FlowMetric::Qps {
            return qps_only("cluster");
        }
        validate_origin(self)?;
        if self.cluster.is_some()
            && (self.warm_up.is_some() || self.max_wait.is_some() || self.relate.is_some())
        {
            return err(
                "cluster",
                "applies to rules that reject over the threshold, not with warm_up, max_wait \
                 (throttling) or relate"
                    .into(),
            );
        }
        let default_window = self.window == DEFAULT_WINDOW;
        if let Some(w) = self.warm_up {
            if self.metric != FlowMetric::Qps {
                return qps_only("warm_up");
            }
            if w.period.is_zero()
                || w.period.subsec_nanos() % 1_000_000 != 0
                || w.period > MAX_WARM_UP
            {
                return err(
                    "warm_up",
                    format!(
                        "must be a positive whole number of milliseconds, at most {MAX_WARM_UP:?}, \
                         got {:?}",
                        w.period
                    ),
                );
            }
            if !w.cold_factor.is_finite() || w.cold_factor <= 1.0 || w.cold_factor > MAX_COLD_FACTOR
            {
                return err(
                    "cold_factor",
                    format!(
                        "must be greater than 1 and at most {MAX_COLD_FACTOR}, got {}",
                        w.cold_factor
                    ),
                );
            }
            if !default_window {
                return err(
                    "window",
                    "must be the default 1 s with warm_up (the warm-up curve is per second)".into(),
                );
            }
        }
        if let Some(max_wait) = self.max_wait {
            if self.metric != FlowMetric::Qps {
                return qps_only("max_wait");
            }
            if max_wait > MAX_WAIT_LIMIT {
                return err(
                    "max_wait",
                    format!("must be at most {MAX_WAIT_LIMIT:?}, got {max_wait:?}"),
                );
            }
        }
        if let Some(related) = &self.relate {
            if self.metric != FlowMetric::Qps {
                return qps_only("relate");
            }
            if related.trim().is_empty() {
                return err("relate", "must name a resource (not blank)".into());
            }
            if self.warm_up.is_some() || self.max_wait.is_some() {
                return err(
                    "relate",
                    "cannot be combined with warm_up or max_wait".into(),
                );
            }
            if !default_window {
                return err(
                    "window",
                    "must be the default 1 s with relate (the related resource's passes per \
                     second are counted)"
                        .into(),
                );
            }
        }
        Ok(())
    }
}

/// Checks a flow rule's `origin`: a name that is not blank nor one of Sentinel's words, on a
/// QPS rule without `relate` or `cluster`; an [`Other`](FlowOrigin::Other) rule rejects over
/// its threshold (no `warm_up`, `max_wait` or `strict`: each origin is paced by its own GCRA).
fn validate_origin(rule: &FlowRule) -> Result<(), RuleError> {
    let err = |message: &str| Err(RuleError::new(&rule.resource, "origin", message.to_owned()));
    if let FlowOrigin::Named(name) = &rule.origin {
        if name.trim().is_empty() {
            return err("must name an origin (not blank); leave it out to limit every caller");
        }
        if ["default", "other"].contains(&name.trim()) {
            return err(
                "is one of Sentinel's words, not an origin's name: \"default\" is every caller \
                 (no origin), \"other\" is FlowRule::other_origins",
            );
        }
    }
    if rule.origin.is_all() {
        return Ok(());
    }
    if rule.metric != FlowMetric::Qps {
        return err("applies to QPS rules only (per-origin concurrency limits are not supported)");
    }
    if rule.relate.is_some() || rule.cluster.is_some() {
        return err("cannot be combined with relate or cluster");
    }
    if rule.origin == FlowOrigin::Other
        && (rule.warm_up.is_some() || rule.max_wait.is_some() || rule.strict)
    {
        return err(
            "other: each origin rejects over its own threshold; warm_up, max_wait and strict \
             are not supported with it",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(rule: FlowRule) -> &'static str {
        rule.validate().expect_err("rule should be invalid").field()
    }

    #[test]
    fn each_bad_field_is_named() {
        assert_eq!(field_of(FlowRule::qps("", 1.0)), "resource");
        assert_eq!(field_of(FlowRule::qps("   ", 1.0)), "resource");
        assert_eq!(field_of(FlowRule::qps("r", 1.0).relate(" \t")), "relate");
        assert_eq!(field_of(FlowRule::qps("r", f64::NAN)), "threshold");
        assert_eq!(field_of(FlowRule::qps("r", f64::INFINITY)), "threshold");
        assert_eq!(field_of(FlowRule::qps("r", -1.0)), "threshold");
        assert_eq!(field_of(FlowRule::qps("r", 3e9)), "threshold");
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).window(DEFAULT_WINDOW, 0)),
            "sample_count"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).window(Duration::ZERO, 1)),
            "window"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).window(Duration::from_micros(1_500), 1)),
            "window"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).window(DEFAULT_WINDOW, 3)),
            "window"
        );
    }

    #[test]
    fn each_bad_behaviour_is_named() {
        let secs = Duration::from_secs;
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).warm_up(Duration::ZERO, 3.0)),
            "warm_up"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).warm_up(secs(10), 1.0)),
            "cold_factor"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).warm_up(secs(10), f64::NAN)),
            "cold_factor"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).warm_up(secs(10), 1e308)),
            "cold_factor"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).warm_up(secs(24 * 3_600 + 1), 3.0)),
            "warm_up"
        );
        assert_eq!(
            field_of(
                FlowRule::qps("r", 1.0)
                    .warm_up(secs(10), 3.0)
                    .window(secs(60), 60)
            ),
            "window"
        );
        assert_eq!(
            field_of(FlowRule::concurrency("r", 1).warm_up(secs(10), 3.0)),
            "warm_up"
        );
        assert_eq!(
            field_of(FlowRule::concurrency("r", 1).throttle(secs(1))),
            "max_wait"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).throttle(secs(7_200))),
            "max_wait"
        );
        assert_eq!(field_of(FlowRule::qps("r", 1.0).relate("")), "relate");
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).relate("w").throttle(secs(1))),
            "relate"
        );
        assert_eq!(
            field_of(FlowRule::qps("r", 1.0).relate("w").window(secs(60), 6)),
            "window"
        );
    }

    #[test]
    fn good_rules_pass() {
        for rule in [
            FlowRule::qps("r", 0.0),
            FlowRule::qps("r", 100.5).strict(true),
            FlowRule::concurrency("r", 4),
            FlowRule::qps("r", 1.0).window(Duration::from_secs(3_600), 60),
            FlowRule::qps("r", 10.0).warm_up(Duration::from_secs(10), 3.0),
            FlowRule::qps("r", 10.0).throttle(Duration::ZERO),
            FlowRule::qps("r", 10.0)
                .warm_up(Duration::from_secs(10), 2.0)
                .throttle(Duration::from_millis(500)),
            FlowRule::qps("r", 10.0).relate("w"),
            FlowRule::qps("r", 10.0)
                .window(Duration::from_secs(60), 60)
                .throttle(Duration::ZERO),
        ] {
            assert_eq!(rule.validate(), Ok(()), "{rule:?}");
        }
    }

    #[test]
    fn error_text_names_rule_field_and_value() {
        let e = FlowRule::qps("orders", -2.0).validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid rule for resource `orders`: field `threshold` must be >= 0, got -2"
        );
    }
}
