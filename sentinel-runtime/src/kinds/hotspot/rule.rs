//! [`HotspotRule`]: plain, validated data for per-parameter-value limits.

use std::hash::Hash;
use std::time::Duration;

use crate::error::RuleError;
use crate::kinds::flow::rule::{MAX_THRESHOLD, MAX_WAIT_LIMIT};
use crate::param::MAX_PARAMS;
use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};

/// How many values a hotspot rule tracks unless told otherwise.
pub const DEFAULT_HOTSPOT_CAPACITY: usize = 16_384;
/// The most values one hotspot rule may track (a table of about 896 MiB: see
/// [`HotspotRule`]'s memory).
pub const MAX_HOTSPOT_CAPACITY: usize = 16_777_216;
/// A rule may list at most `capacity / MAX_PINNED_SHARE` exceptions (each is pinned: a table
/// with a quarter of its capacity pinned holds an eighth of its slots pinned).
const MAX_PINNED_SHARE: usize = 4;
/// The most hotspot rules one resource can have.
pub const MAX_HOTSPOT_RULES_PER_RESOURCE: usize = 8;
/// The longest window a hotspot rule accepts.
pub const MAX_HOTSPOT_WINDOW: Duration = Duration::from_secs(24 * 3_600);

/// The most debt, in nanoseconds, a value may be allowed from idle (`threshold + burst` calls'
/// worth): 2^63, so that it fits in the clock's `u64` nanoseconds with 292 years to spare for
/// the clock itself.
const MAX_DEBT_NANOS: u128 = 1 << 63;

/// The nanoseconds between two calls of one value at `threshold` (> 0) per `window`:
/// `window / threshold`, rounded up (never faster than the rule), at least 1.
pub(crate) fn interval_nanos(threshold: f64, window: Duration) -> u128 {
    let window = window.as_nanos();
    if threshold.fract() == 0.0 {
        // Exact in integers.
        window.div_ceil(threshold as u128)
    } else {
        (window as f64 / threshold).ceil() as u128
    }
    .max(1)
}

/// The strict mode's nanoseconds between two calls of one value at `threshold` (> 0) per
/// `window` with `burst` (below the threshold's whole calls, at least 1): `window / (floor(threshold) -
/// burst)`, rounded up; below a threshold of 1, `window / threshold` (one call at a time).
pub(crate) fn strict_interval_nanos(threshold: f64, burst: u32, window: Duration) -> u128 {
    let whole = threshold.floor() as u128;
    if whole == 0 {
        return interval_nanos(threshold, window);
    }
    let spaced = whole.saturating_sub(u128::from(burst)).max(1);
    window.as_nanos().div_ceil(spaced).max(1)
}

/// How many calls of one value at `threshold` (> 0) per `window` may be owed at once: a value
/// admits `max(floor(threshold), 1) + burst` from idle, which must not exceed it.
fn calls_that_fit(threshold: f64, window: Duration) -> u128 {
    MAX_DEBT_NANOS / interval_nanos(threshold, window)
}

/// What a hotspot rule limits per value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HotspotMetric {
    /// Calls per window, per value (GCRA: `threshold` per `window`, evenly spaced, after a
    /// burst of `threshold + burst` from idle).
    Qps,
    /// Calls inside at once, per value.
    Concurrency,
}

/// A per-value threshold for one listed value (e.g. a VIP user), matched by the value's hash.
///
/// The value's text is kept where it is known (a rule file's exceptions,
/// [`HotspotRule::exception_str`]), so the rule can be written back to a rule file. An exception
/// given by [`HotspotRule::exception`] (any `Hash` type) keeps only the hash: it is written as
/// `{ value_hash, hash_key, threshold }`, which only this process can read back (see
/// the rule-file format, `rules::files`).
///
/// Two exceptions are equal when their hashes and thresholds are: the text only describes the
/// value the hash was taken of.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HotspotException {
    /// The keyed hash of the value (see [`HotspotRule::exception`]).
    pub value_hash: u64,
    /// The value's own threshold.
    pub threshold: f64,
    /// The value as text, when it was given as a string (`None` for a value given only by its
    /// hash).
    pub value: Option<String>,
}

impl PartialEq for HotspotException {
    fn eq(&self, other: &HotspotException) -> bool {
        self.value_hash == other.value_hash && self.threshold == other.threshold
    }
}

impl HotspotException {
    /// An exception for the string `value` (hashed as a `&str`), keeping its text.
    pub fn from_str_value(value: &str, threshold: f64) -> HotspotException {
        HotspotException {
            value_hash: crate::param::hash(value),
            threshold,
            value: Some(value.to_owned()),
        }
    }
}

/// A hotspot (hot-parameter) rule: a limit applied to each distinct value of one parameter of a
/// resource separately, e.g. "at most 10 requests a second per user id". Sentinel calls it
/// `ParamFlowRule`; governor calls it a keyed limiter.
///
/// Parameters are the values an entry carries, in call order
/// ([`EntryBuilder::param`](crate::EntryBuilder::param)): `param_index` 0 is the first. A call
/// without that parameter is not limited by the rule.
///
/// # What a QPS rule admits
///
/// Each value is paced on its own by the GCRA: one theoretical arrival time per value, in
/// nanoseconds, the spacing computed in 128-bit arithmetic (a million per second is paced
/// exactly). Below, `N = max(floor(threshold), 1)`, and a batch of `n`
/// ([`EntryBuilder::acquire`](crate::EntryBuilder::acquire)) counts as `n` calls.
///
/// * **Default (Sentinel's token-bucket meaning).** From idle a value admits `N + burst` calls
///   at once, then one every `T = window / threshold` (rounded up to the nanosecond). In any
///   interval of length `L` (both ends included) at most **`N + burst + floor(L / T)`** calls of
///   one value pass: up to `2 x N + burst - 1` in an interval shorter than the window
///   (`HotspotRule::qps("profiles", 0, 10.0)` lets one value through 19 times in 0.9 s: 10 at
///   once, then one every 100 ms), and `(k + 1) x N + burst` in `k` windows. Sustained:
///   `threshold` per `window`.
/// * **Strict** ([`strict(true)`](Self::strict)). **Any interval of `window`'s length admits at
///   most `floor(threshold)` calls of one value** (a half-open interval `[t, t + window)`; a
///   threshold below 1: one call in any interval of `window / threshold`). From idle a value
///   admits `1 + burst` calls at once, then one every `T = window / (floor(threshold) - burst)`
///   (rounded up): in any interval of length `L`, at most `1 + burst + floor(L / T)` calls.
///   Sustained: `floor(threshold) - burst` per `window`, so `burst` trades the sustained rate
///   for calls at once, and must be below the whole threshold (of each exception too). A batch
///   of more than `1 + burst` calls never passes. It does not combine with
///   [`throttle`](Self::throttle).
///
/// With [`throttle`](Self::throttle) (default mode), a call whose turn is within `max_wait`
/// waits for it instead of being blocked; the bound above then holds for the times calls pass
/// (their turns), as long as no batch is larger than `N + burst` (a larger one that waits
/// passes whole at its last call's turn). A block is
/// [`BlockKind::HotParam`](crate::BlockKind::HotParam) and says when to retry
/// ([`BlockError::retry_after`](crate::BlockError::retry_after)).
///
/// A value forgotten by a full table while it still owed time (see below) owes it when it comes
/// back, so the bounds hold for every value however many others a client sends.
///
/// # Memory
///
/// Each rule tracks at most [`capacity`](Self::capacity) values (default 16 384) in a table
/// allocated once, when the rule is loaded: about 56 bytes per value of capacity (896 KiB by
/// default, 896 MiB at [`MAX_HOTSPOT_CAPACITY`]), which never grows. The tables of the loaded
/// rules together have a budget ([`set_max_hotspot_memory`](crate::rules::set_max_hotspot_memory),
/// 1 GiB by default): a load beyond it is refused, naming `capacity`. A value whose next slot is
/// already free is indistinguishable from a value never seen, so such values are forgotten
/// first; if the table is full of values being limited right now, the one closest to being
/// free is forgotten (counted in the metrics, `sentinel_hotspot_live_evictions_total`), and
/// what it still owes is kept in a fixed sketch of the table (8 of the 56 bytes: a cell per
/// value of capacity, in four rows; a value has one cell in each row, which holds the latest
/// time owed by the values evicted into it): a value that comes back
/// starts from the smallest of its cells, never from less than it owed. The only error is that
/// a new value whose four cells each hold a later time, owed by others, is held back until
/// then. Measured with a rule of 1 per window, new values arriving once each while `k x
/// capacity` values owe time at once (`examples/hotspot_flood.rs`, default capacity): none
/// held back at `k = 1`, 0.07% at 2, 69% at 10 and 96% at 100 (a fixed memory cannot tell
/// that many apart: it holds back rather than forget); a value held back takes no slot. Exception
/// values are never forgotten; a value of a concurrency rule is never forgotten while calls are
/// inside. A reload of a rule for the same parameter, metric and capacity keeps every value's
/// state (whatever else it changes: thresholds, burst, window, wait, exceptions).
///
/// ```
/// use sentinel_runtime::rules::HotspotRule;
/// use std::time::Duration;
///
/// let per_user = HotspotRule::qps("api", 0, 10.0).burst(5).exception(&"vip-7", 100.0);
/// let per_ip = HotspotRule::qps("login", 1, 5.0)
///     .window(Duration::from_secs(60))
///     .throttle(Duration::from_millis(200));
/// let per_tenant_inside = HotspotRule::concurrency("reports", 0, 2);
/// # assert!(per_user.validate().is_ok() && per_ip.validate().is_ok());
/// # assert!(per_tenant_inside.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HotspotRule {
    /// The resource the rule applies to.
    pub resource: String,
    /// Which parameter of the entry: 0 is the first (`0..MAX_PARAMS`). A rule that names its
    /// parameter instead ([`param`](Self::param)) has [`PARAM_BY_NAME`] here: give one of the
    /// two (in rule files, `param_index` or `param`).
    pub param_index: usize,
    /// The parameter's name, instead of its index: `"client_ip"` for the tower layer's
    /// `client_ip`, a name given to its `named_param`, an argument of the attribute's
    /// `params = [...]`, or one of [`EntryBuilder::param_names`](crate::EntryBuilder::param_names).
    ///
    /// The name becomes an index when the rule is put in force on a resource whose parameter
    /// names are known: a resource learns them on its first entry through the attribute (which
    /// also tells a resource without `params` that it has none), through a tower layer with
    /// named params, or through an `EntryBuilder` with `param_names`. Once they are known, a
    /// load is refused, by the field `param`, if the rule names a parameter the resource does
    /// not supply (the previous rules stay). Before that the rule is kept, and resolved when
    /// the resource is first entered; if the resource then turns out not to supply the name,
    /// the rule stays out of force (the resource is unlimited by it) until a load replaces it.
    /// Positional entries (`EntryBuilder::param` without names) never resolve names.
    pub param: Option<String>,
    /// What the rule limits per value.
    pub metric: HotspotMetric,
    /// Calls per window (QPS) or calls inside (concurrency), per value: finite,
    /// `0..=MAX_THRESHOLD`, fractions rounded down for concurrency.
    pub threshold: f64,
    /// Extra calls a value may make at once from idle (QPS). Default 0. With the threshold, at
    /// most what a value may owe: `max(threshold, 1) + burst` calls of `window / threshold`
    /// each must not pass 2^63 ns (292 years; only absurdly slow rules come near it).
    pub burst: u32,
    /// The window `threshold` counts over (QPS): whole milliseconds, at most a day. Default 1 s.
    pub window: Duration,
    /// The strict mode (QPS): any interval of `window`'s length admits at most `threshold`
    /// calls of one value (see the type's docs). Default `false`.
    pub strict: bool,
    /// Wait up to this long for a slot instead of being blocked (QPS). Default none.
    pub max_wait: Option<Duration>,
    /// Values with their own threshold.
    pub exceptions: Vec<HotspotException>,
    /// How many values the rule tracks (`1..=MAX_HOTSPOT_CAPACITY`). Default 16 384.
    pub capacity: usize,
    /// Share each value's threshold across the service's instances (QPS rules): see
    /// [`cluster`](Self::cluster). Default none: the rule is per process.
    pub cluster: Option<ClusterThreshold>,
    /// What a cluster rule does while the cluster's store cannot be reached. Default
    /// [`ClusterFallback::Local`].
    pub cluster_fallback: ClusterFallback,
    /// Shadow mode: the rule is evaluated with its own state as if it were enforced, and a call
    /// it would refuse is counted ([`ResourceStats::shadow_block_total`]) but goes on. Default
    /// false. See [`HotspotRule::shadow`].
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub shadow: bool,
}

/// [`HotspotRule::param_index`] of a rule that names its parameter ([`HotspotRule::param`]).
pub const PARAM_BY_NAME: usize = usize::MAX;

impl HotspotRule {
    /// At most `threshold` calls per second for each value of parameter `param_index`.
    pub fn qps(resource: impl Into<String>, param_index: usize, threshold: f64) -> HotspotRule {
        HotspotRule {
            resource: resource.into(),
            param_index,
            param: None,
            metric: HotspotMetric::Qps,
            threshold,
            burst: 0,
            window: Duration::from_secs(1),
            strict: false,
            max_wait: None,
            exceptions: Vec::new(),
            capacity: DEFAULT_HOTSPOT_CAPACITY,
            cluster: None,
            cluster_fallback: ClusterFallback::Local,
            shadow: false,
        }
    }

    /// Puts the rule in shadow mode (`true`) or in force (`false`, the default). A shadow rule
    /// is evaluated with its own state (windows, tables, breaker state) but never blocks,
    /// delays or takes anything from an enforced rule: a call it would refuse is counted in
    /// [`ResourceStats::shadow_block_total`] and goes on. Turning it to `false` later (a
    /// reload of the same rule) keeps its state: what it watched is what it enforces. Not with
    /// `cluster` (a shadow rule must not spend the tokens the instances share).
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub fn shadow(mut self, shadow: bool) -> HotspotRule {
        self.shadow = shadow;
        self
    }

    /// At most `max` calls inside at once for each value of parameter `param_index`.
    pub fn concurrency(resource: impl Into<String>, param_index: usize, max: u32) -> HotspotRule {
        HotspotRule {
            metric: HotspotMetric::Concurrency,
            ..HotspotRule::qps(resource, param_index, f64::from(max))
        }
    }

    /// At most `threshold` calls per second for each value of the parameter named `param`
    /// (see [`param`](Self::param) for when the name is resolved).
    ///
    /// ```
    /// use sentinel_runtime::rules::HotspotRule;
    /// let per_client = HotspotRule::qps_by_name("GET:/login", "client_ip", 10.0);
    /// # assert!(per_client.validate().is_ok());
    /// ```
    pub fn qps_by_name(
        resource: impl Into<String>,
        param: impl Into<String>,
        threshold: f64,
    ) -> HotspotRule {
        HotspotRule::qps(resource, 0, threshold).param_name(param)
    }

    /// At most `max` calls inside at once for each value of the parameter named `param`.
    pub fn concurrency_by_name(
        resource: impl Into<String>,
        param: impl Into<String>,
        max: u32,
    ) -> HotspotRule {
        HotspotRule::concurrency(resource, 0, max).param_name(param)
    }

    /// Limits the parameter named `param` instead of one by index (see [`param`](Self::param)).
    pub fn param_name(mut self, param: impl Into<String>) -> HotspotRule {
        self.param = Some(param.into());
        self.param_index = PARAM_BY_NAME;
        self
    }

    /// Lets a value make `burst` extra calls at once from idle.
    pub fn burst(mut self, burst: u32) -> HotspotRule {
        self.burst = burst;
        self
    }

    /// Counts `threshold` calls per `window` instead of per second.
    pub fn window(mut self, window: Duration) -> HotspotRule {
        self.window = window;
        self
    }

    /// Chooses the strict mode (any interval of `window`'s length admits at most `threshold`
    /// calls of one value; from idle, `1 + burst` of them at once) or the default one
    /// (`threshold + burst` at once from idle, then `threshold` per `window`): see the type's
    /// docs. QPS rules only; not with [`throttle`](Self::throttle).
    pub fn strict(mut self, strict: bool) -> HotspotRule {
        self.strict = strict;
        self
    }

    /// Gives `value` its own threshold. The value matches a call's parameter when both hash
    /// alike (hash the same type: `"vip"` and `String::from("vip")` match, `7u64` and `"7"` do
    /// not). A value listed twice takes the later threshold.
    ///
    /// Only the value's hash is kept: the rule set is then written to a rule file (and shown by
    /// the dashboard) with the hash in place of the value, which only this process can read
    /// back. For a string value prefer [`exception_str`](Self::exception_str), which keeps the
    /// text.
    pub fn exception(mut self, value: &(impl Hash + ?Sized), threshold: f64) -> HotspotRule {
        self.exceptions.push(HotspotException {
            value_hash: crate::param::hash(value),
            threshold,
            value: None,
        });
        self
    }

    /// Gives the string `value` its own threshold, as [`exception`](Self::exception) does, and
    /// keeps its text, so the rule can be written to a rule file. It matches a parameter passed
    /// as a `&str` or a `String`.
    pub fn exception_str(mut self, value: &str, threshold: f64) -> HotspotRule {
        self.exceptions
            .push(HotspotException::from_str_value(value, threshold));
        self
    }

    /// Waits up to `max_wait` for a value's next slot instead of blocking.
    pub fn throttle(mut self, max_wait: Duration) -> HotspotRule {
        self.max_wait = Some(max_wait);
        self
    }

    /// Tracks at most `capacity` values, in a table of about 56 bytes per value allocated when
    /// the rule is put in force; the loaded rules' tables together stay within
    /// [`max_hotspot_memory`](crate::rules::max_hotspot_memory). A rule may list at most
    /// `capacity / 4` [exceptions](Self::exception): they keep their place in the table for
    /// good.
    pub fn capacity(mut self, capacity: usize) -> HotspotRule {
        self.capacity = capacity;
        self
    }

    /// Makes each value's limit hold across every instance of the service (QPS rules): with a
    /// started `cluster::Cluster` (Cargo feature `redis`), the instances share one limit per
    /// value kept in Redis; without one, or while Redis cannot be reached, the rule limits
    /// locally as its [`cluster_fallback`](Self::cluster_fallback) says. A resource has at most
    /// one cluster rule per parameter and window (loading a second is refused).
    pub fn cluster(mut self, threshold: ClusterThreshold) -> HotspotRule {
        self.cluster = Some(threshold);
        self
    }

    /// What the cluster rule does while the cluster's store cannot be reached.
    pub fn cluster_fallback(mut self, fallback: ClusterFallback) -> HotspotRule {
        self.cluster_fallback = fallback;
        self
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
        if self.cluster.is_some() && self.metric != HotspotMetric::Qps {
            return err(
                "cluster",
                "applies to QPS rules only, not to concurrency rules".into(),
            );
        }
        self.validate_param()?;
        threshold(self.threshold).or_else(|m| err("threshold", m))?;
        for e in &self.exceptions {
            threshold(e.threshold).or_else(|m| err("exceptions", m))?;
        }
        if self.capacity == 0 || self.capacity > MAX_HOTSPOT_CAPACITY {
            return err(
                "capacity",
                format!(
                    "must be in 1..={MAX_HOTSPOT_CAPACITY}, got {}",
                    self.capacity
                ),
            );
        }
        // Exceptions are pinned in the table (never evicted): too many of them could fill every
        // slot an ordinary value may take, and block that value for good.
        if self.exceptions.len() > self.capacity / MAX_PINNED_SHARE {
            return err(
                "exceptions",
                format!(
                    "at most capacity / {MAX_PINNED_SHARE} = {} values (they are pinned in the \
                     rule's table of {} values), got {}; raise `capacity`",
                    self.capacity / MAX_PINNED_SHARE,
                    self.capacity,
                    self.exceptions.len()
                ),
            );
        }
        match self.metric {
            HotspotMetric::Qps => self.validate_qps(),
            HotspotMetric::Concurrency => self.validate_concurrency(),
        }
    }

    /// The parameter: by index or by name, one of them.
    fn validate_param(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        match (&self.param, self.param_index) {
            (Some(_), i) if i != PARAM_BY_NAME => {
                return err(
                    "param",
                    format!("give `param` or `param_index`, not both (`param_index` is {i})"),
                );
            }
            (Some(name), _) if name.is_empty() => {
                return err("param", "must not be empty".into());
            }
            (None, PARAM_BY_NAME) => {
                return err(
                    "param_index",
                    "missing: give `param_index` (0 is the first parameter) or `param` (its \
                     name)"
                        .into(),
                );
            }
            _ => {}
        }
        if self.param.is_none() && self.param_index >= MAX_PARAMS {
            return err(
                "param_index",
                format!("must be below {MAX_PARAMS}, got {}", self.param_index),
            );
        }
        Ok(())
    }

    /// The fields of a QPS rule: the window, the burst and what a value may owe from idle, the
    /// strict mode and the wait.
    fn validate_qps(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        let w = self.window;
        if w.is_zero() || !w.subsec_nanos().is_multiple_of(1_000_000) || w > MAX_HOTSPOT_WINDOW {
            return err(
                "window",
                format!(
                    "must be a positive whole number of milliseconds, at most \
                     {MAX_HOTSPOT_WINDOW:?}, got {w:?}"
                ),
            );
        }
        if f64::from(self.burst) > MAX_THRESHOLD {
            return err(
                "burst",
                format!("must be at most {MAX_THRESHOLD}, got {}", self.burst),
            );
        }
        // A value's debt from idle, `threshold + burst` calls of window / threshold
        // each, must fit in the clock's nanoseconds, or the value would quietly admit
        // fewer calls than promised (none, for a threshold too slow for one call).
        let years = MAX_DEBT_NANOS / 1_000_000_000 / 31_557_600;
        /// What a value at one threshold may owe from idle.
        enum Debt {
            Fits,
            /// Not even one call's worth fits.
            NoCall,
            /// The burst is over the most that fits.
            BurstOver(u128),
        }
        let debt = |t: f64| {
            if t <= 0.0 {
                return Debt::Fits;
            }
            let (fit, own) = (calls_that_fit(t, w), (t.floor() as u128).max(1));
            if fit == 0 {
                Debt::NoCall
            } else if own + u128::from(self.burst) > fit {
                Debt::BurstOver(fit - own)
            } else {
                Debt::Fits
            }
        };
        let slow =
            |t: f64| format!("must be 0 or at least one call per {years} years, got {t} per {w:?}");
        let owes = |most: u128, whose: &str, t: f64| {
            format!(
                "must be at most {most} with {whose} threshold of {t} per {w:?} (a value \
                 may owe at most {years} years from idle), got {}",
                self.burst
            )
        };
        match debt(self.threshold) {
            Debt::NoCall => return err("threshold", slow(self.threshold)),
            Debt::BurstOver(most) => return err("burst", owes(most, "a", self.threshold)),
            Debt::Fits => {}
        }
        for e in &self.exceptions {
            let why = match debt(e.threshold) {
                Debt::NoCall => format!("an exception's threshold {}", slow(e.threshold)),
                Debt::BurstOver(most) => {
                    format!("the burst {}", owes(most, "an exception's", e.threshold))
                }
                Debt::Fits => continue,
            };
            return err("exceptions", why);
        }
        if self.strict {
            self.strict_fits().or_else(|(field, m)| err(field, m))?;
            if self.max_wait.is_some() {
                // A batch that waited would pass all at its last call's turn, more at
                // once than the bound allows; refusing it would cost the path of every
                // call a check.
                return err(
                    "max_wait",
                    "does not combine with `strict` (calls are admitted or refused at \
                     once)"
                        .into(),
                );
            }
        }
        if let Some(max_wait) = self.max_wait
            && max_wait > MAX_WAIT_LIMIT
        {
            return err(
                "max_wait",
                format!("must be at most {MAX_WAIT_LIMIT:?}, got {max_wait:?}"),
            );
        }
        Ok(())
    }

    /// A concurrency rule takes none of the QPS rules' fields.
    fn validate_concurrency(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        if self.strict {
            return err("strict", "applies to QPS hotspot rules only".into());
        }
        if self.burst != 0 {
            return err("burst", "applies to QPS hotspot rules only".into());
        }
        if self.max_wait.is_some() {
            return err("max_wait", "applies to QPS hotspot rules only".into());
        }
        Ok(())
    }
}

impl HotspotRule {
    /// The strict mode's own limits: `1 + burst` calls at once must fit in every nonzero
    /// threshold (rule and exceptions), and what a value owes from idle (`1 + burst` intervals)
    /// in the clock's nanoseconds. The field at fault, and why.
    fn strict_fits(&self) -> Result<(), (&'static str, String)> {
        let burst = self.burst;
        for (field, t) in std::iter::once(("threshold", self.threshold))
            .chain(self.exceptions.iter().map(|e| ("exceptions", e.threshold)))
        {
            if t <= 0.0 {
                continue;
            }
            let whole = (t.floor() as u128).max(1);
            let whose = if field == "threshold" {
                "the threshold"
            } else {
                "an exception's threshold"
            };
            if u128::from(burst) >= whole {
                let message = format!(
                    "must be below {whose}'s whole calls ({whole}) with `strict`: at most                      `threshold` calls pass in any window, `1 + burst` of them at once; got                      {burst} with {whose} of {t}"
                );
                return Err((if field == "threshold" { "burst" } else { field }, message));
            }
            let debt = (1 + u128::from(burst)) * strict_interval_nanos(t, burst, self.window);
            if debt > MAX_DEBT_NANOS {
                let years = MAX_DEBT_NANOS / 1_000_000_000 / 31_557_600;
                let message = format!(
                    "with `strict`, {whose} of {t} per {:?} and a burst of {burst} owe {debt} ns                      from idle, more than {years} years; lower `burst` or the window",
                    self.window
                );
                return Err(("burst", message));
            }
        }
        Ok(())
    }
}

fn threshold(t: f64) -> Result<(), String> {
    if !t.is_finite() || !(0.0..=MAX_THRESHOLD).contains(&t) {
        return Err(format!(
            "must be a finite number in 0..={MAX_THRESHOLD}, got {t}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(rule: HotspotRule) -> &'static str {
        rule.validate().expect_err("rule should be invalid").field()
    }

    #[test]
    fn each_bad_field_is_named() {
        assert_eq!(field_of(HotspotRule::qps("", 0, 1.0)), "resource");
        assert_eq!(
            field_of(HotspotRule::qps("r", MAX_PARAMS, 1.0)),
            "param_index"
        );
        assert_eq!(field_of(HotspotRule::qps("r", 0, f64::NAN)), "threshold");
        assert_eq!(field_of(HotspotRule::qps("r", 0, -1.0)), "threshold");
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).exception("v", f64::INFINITY)),
            "exceptions"
        );
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).capacity(0)),
            "capacity"
        );
        assert_eq!(
            field_of(
                HotspotRule::qps("r", 0, 1.0)
                    .capacity(3)
                    .exception("a", 1.0)
            ),
            "exceptions"
        );
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1e-12).burst(5)),
            "threshold"
        );
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).exception("a", 1e-12)),
            "exceptions"
        );
        HotspotRule::qps("r", 0, 1e-9)
            .validate()
            .expect("one call in about 32 years is still a pace");
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).window(Duration::ZERO)),
            "window"
        );
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).window(Duration::from_micros(1_500))),
            "window"
        );
        assert_eq!(
            field_of(HotspotRule::qps("r", 0, 1.0).throttle(Duration::from_secs(7_200))),
            "max_wait"
        );
        assert_eq!(
            field_of(HotspotRule::concurrency("r", 0, 1).burst(2)),
            "burst"
        );
        assert_eq!(
            field_of(HotspotRule::concurrency("r", 0, 1).throttle(Duration::from_secs(1))),
            "max_wait"
        );
    }

    #[test]
    fn good_rules_pass() {
        for rule in [
            HotspotRule::qps("r", 0, 0.0),
            HotspotRule::qps("r", 7, 1e6).burst(5).capacity(100_000),
            HotspotRule::qps("r", 0, 10.0)
                .window(Duration::from_secs(60))
                .throttle(Duration::from_millis(100))
                .exception(&42u64, 1_000.0),
            HotspotRule::concurrency("r", 1, 2),
        ] {
            assert_eq!(rule.validate(), Ok(()), "{rule:?}");
        }
    }
}
