//! [`BlockError`], the error of a rejected call, and [`RuleError`], the error of a bad rule.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Which kind of check rejected a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockKind {
    /// A flow rule counting passes per window (QPS).
    Flow,
    /// A flow rule limiting the calls inside at once.
    Concurrency,
    /// An open (or half-open, probes taken) circuit breaker.
    CircuitBreaker,
    /// A check slot registered by the user ([`crate::slot::register_check_slot`]).
    Custom,
    /// An authority rule: the caller's origin may not enter the resource
    /// ([`crate::rules::AuthorityRule`]).
    Authority,
    /// A hotspot rule: one value of a parameter made too many calls
    /// ([`crate::rules::HotspotRule`]).
    HotParam,
    /// A system rule: the process as a whole is over a limit ([`crate::rules::SystemRule`];
    /// inbound entries only). [`BlockError::reason`] names the limit (`qps`, `concurrency`,
    /// `avg_rt`, `cpu_usage`, `load_per_core`, or `adaptive` while the adaptive check holds on for
    /// a second after the CPU or load came back under its limit).
    System,
    /// An outlier rule: the call's endpoint is ejected for its errors
    /// ([`crate::rules::OutlierRule`]). [`BlockError::reason`] names the endpoint.
    Outlier,
    /// A cluster rule: a flow or hotspot rule marked `cluster`, whose limit the instances of a
    /// service share ([`crate::cluster`]). One kind wherever a refusal is told: this kind, the
    /// `cluster` count of the block totals and metrics, and the dashboard's `cluster`.
    /// [`BlockError::reason`] says the cause (the fleet's budget spent, a window the store
    /// lost counted as spent, or this instance's local share), and a hotspot rule's refusal
    /// has its [`param_index`](BlockError::param_index).
    Cluster,
}

/// The reason a cluster rule's block gives while the instances share the limit: the store
/// said the budget is spent.
pub(crate) const CLUSTER_LIMIT: &str =
    "cluster limit: the instances together used the rule's tokens";
/// The reason a cluster rule's block gives when its budget is short because the store lost
/// its state: the lost window counts as spent.
pub(crate) const CLUSTER_LOST: &str =
    "cluster limit: the store lost the rule's state, and the lost window counts as spent";
/// The reason a cluster rule's block gives while the store answers but the key waits for its
/// lease (or a window after a return from a fallback): this instance's local share is used.
pub(crate) const CLUSTER_SHARE: &str =
    "cluster limit: this instance's local share is used while the rule's lease is on its way";
/// The reason a cluster rule's block gives while it limits locally.
pub(crate) const CLUSTER_LOCAL: &str = "cluster rule limiting locally (no cluster store reachable)";

/// A call was rejected: which resource, by which kind of rule, and that rule's threshold.
///
/// ```
/// # use sentinel_runtime::{rules::{self, FlowRule}, entry, BlockKind};
/// rules::load_flow_rules(vec![FlowRule::qps("doc-block-error", 0.0)]).unwrap();
/// let err = entry("doc-block-error").unwrap_err();
/// assert_eq!(err.kind(), BlockKind::Flow);
/// assert_eq!(err.to_string(), "resource `doc-block-error` blocked by flow rule (qps 0)");
/// # rules::load_flow_rules(vec![]).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BlockError {
    resource: Cow<'static, str>,
    kind: BlockKind,
    threshold: f64,
    window_ms: u64,
    reason: Option<Cow<'static, str>>,
    related: Option<Arc<str>>,
    param_index: Option<usize>,
    retry_after: Option<Duration>,
}

impl BlockError {
    pub(crate) fn flow(resource: &'static str, threshold: f64, window_ms: u64) -> BlockError {
        BlockError {
            resource: Cow::Borrowed(resource),
            kind: BlockKind::Flow,
            threshold,
            window_ms,
            reason: None,
            related: None,
            param_index: None,
            retry_after: None,
        }
    }

    /// The same error, with a hint of when to retry.
    pub(crate) fn with_retry_after(mut self, retry_after: Option<Duration>) -> BlockError {
        self.retry_after = retry_after;
        self
    }

    /// The same error, with why in words.
    pub(crate) fn because(mut self, reason: &'static str) -> BlockError {
        self.reason = Some(Cow::Borrowed(reason));
        self
    }

    /// The same error, as a cluster rule's ([`BlockKind::Cluster`]) whose window is
    /// `window_ms`.
    pub(crate) fn cluster(mut self, window_ms: u64) -> BlockError {
        self.kind = BlockKind::Cluster;
        self.window_ms = window_ms;
        self
    }

    /// The same error, from a rule counting the `related` resource.
    pub(crate) fn because_related(mut self, related: &Arc<str>) -> BlockError {
        self.related = Some(Arc::clone(related));
        self
    }

    pub(crate) fn concurrency(resource: &'static str, limit: f64) -> BlockError {
        BlockError {
            resource: Cow::Borrowed(resource),
            kind: BlockKind::Concurrency,
            threshold: limit,
            window_ms: 0,
            reason: None,
            related: None,
            param_index: None,
            retry_after: None,
        }
    }

    pub(crate) fn circuit_breaker(
        resource: &'static str,
        threshold: f64,
        state: &'static str,
    ) -> BlockError {
        BlockError {
            resource: Cow::Borrowed(resource),
            kind: BlockKind::CircuitBreaker,
            threshold,
            window_ms: 0,
            reason: Some(Cow::Borrowed(state)),
            related: None,
            param_index: None,
            retry_after: None,
        }
    }

    /// A rejection by a user's check slot, with its reason and (if it has one) threshold.
    pub fn custom(
        resource: impl Into<Cow<'static, str>>,
        reason: impl Into<Cow<'static, str>>,
        threshold: f64,
    ) -> BlockError {
        BlockError {
            resource: resource.into(),
            kind: BlockKind::Custom,
            threshold,
            window_ms: 0,
            reason: Some(reason.into()),
            related: None,
            param_index: None,
            retry_after: None,
        }
    }

    /// A rejection by a hotspot rule on parameter `param_index`, whose blocked value may retry
    /// after `retry_after`.
    pub(crate) fn hot_param(
        resource: &'static str,
        threshold: f64,
        param_index: usize,
        retry_after: Option<Duration>,
    ) -> BlockError {
        BlockError {
            param_index: Some(param_index),
            retry_after,
            kind: BlockKind::HotParam,
            ..BlockError::flow(resource, threshold, 0)
        }
    }

    /// A rejection by an authority rule of a call from `origin`.
    pub(crate) fn authority(resource: &'static str, origin: Option<&str>) -> BlockError {
        BlockError {
            kind: BlockKind::Authority,
            reason: Some(Cow::Owned(match origin {
                Some(o) => format!("origin `{o}` not allowed"),
                None => "no origin given".to_owned(),
            })),
            ..BlockError::flow(resource, 0.0, 0)
        }
    }

    /// A rejection by an outlier rule of a call to `endpoint`, ejected for `nanos` more (0: its
    /// probe is out).
    pub(crate) fn outlier(resource: &'static str, endpoint: &str, nanos: u64) -> BlockError {
        BlockError {
            kind: BlockKind::Outlier,
            reason: Some(Cow::Owned(format!("endpoint `{endpoint}` ejected"))),
            retry_after: (nanos > 0).then(|| Duration::from_nanos(nanos)),
            ..BlockError::flow(resource, 0.0, 0)
        }
    }

    /// A system rule's `limit` (its field name) refused an inbound call; `threshold` is the
    /// limit's value (milliseconds for `avg_rt`).
    pub(crate) fn system(
        resource: &'static str,
        limit: &'static str,
        threshold: f64,
    ) -> BlockError {
        BlockError {
            kind: BlockKind::System,
            reason: Some(Cow::Borrowed(limit)),
            ..BlockError::flow(resource, threshold, 0)
        }
    }

    /// The rejected resource's name.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Which kind of check rejected the call.
    pub fn kind(&self) -> BlockKind {
        self.kind
    }

    /// The rejecting rule's threshold: passes per window for [`BlockKind::Flow`], calls inside
    /// for [`BlockKind::Concurrency`].
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The related resource whose traffic the blocking rule counts, if it counts another one.
    pub fn related(&self) -> Option<&str> {
        self.related.as_deref()
    }

    /// Which parameter's value was blocked, for [`BlockKind::HotParam`] (0 is the entry's first
    /// parameter).
    pub fn param_index(&self) -> Option<usize> {
        self.param_index
    }

    /// How long until the call could pass, where the blocking rule can tell: a hotspot rule,
    /// the blocked value's next free slot; a circuit breaker, the end of its recovery time (when
    /// it lets probes through); a QPS flow rule, when enough of the passes it counts have left
    /// its window; a throttling rule, when a turn within its `max_wait` comes. `None` where it
    /// cannot (a concurrency limit, a related resource's rule, a rule that admits nothing).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Why, in words: a custom slot's reason, a circuit breaker's state, or throttling.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether a cluster rule blocked the call: the limit the instances share was spent, or
    /// the rule limited locally while no cluster store was reachable or its lease was on its
    /// way. The same as `kind() == BlockKind::Cluster` (see [`BlockKind::Cluster`]).
    pub fn is_cluster(&self) -> bool {
        self.kind == BlockKind::Cluster
    }
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "resource `{}` blocked by ", self.resource)?;
        match self.kind {
            BlockKind::Flow => {
                if self.window_ms == 1_000 {
                    write!(f, "flow rule (qps {})", self.threshold)?;
                } else {
                    write!(
                        f,
                        "flow rule ({} per {} ms)",
                        self.threshold, self.window_ms
                    )?;
                }
                if let Some(related) = &self.related {
                    write!(f, " counting related resource `{related}`")?;
                }
                match &self.reason {
                    Some(reason) => write!(f, ": {reason}"),
                    None => Ok(()),
                }
            }
            BlockKind::Concurrency => match &self.reason {
                Some(reason) => write!(f, "concurrency rule ({reason} {})", self.threshold),
                None => write!(f, "concurrency rule (limit {})", self.threshold),
            },
            BlockKind::CircuitBreaker => write!(
                f,
                "circuit breaker ({})",
                self.reason.as_deref().unwrap_or("open")
            ),
            BlockKind::Custom => write!(
                f,
                "check slot ({})",
                self.reason.as_deref().unwrap_or("no reason given")
            ),
            BlockKind::Authority => write!(
                f,
                "authority rule ({})",
                self.reason.as_deref().unwrap_or("origin not allowed")
            ),
            BlockKind::Outlier => write!(
                f,
                "outlier rule ({})",
                self.reason.as_deref().unwrap_or("endpoint ejected")
            ),
            BlockKind::System => write!(
                f,
                "system rule ({} {})",
                self.reason.as_deref().unwrap_or("limit"),
                self.threshold
            ),
            BlockKind::Cluster => {
                match self.param_index {
                    Some(i) => write!(
                        f,
                        "cluster hotspot rule on parameter {i} ({}",
                        self.threshold
                    )?,
                    None => write!(f, "cluster flow rule ({}", self.threshold)?,
                }
                if self.window_ms == 1_000 {
                    f.write_str(" per second)")?;
                } else {
                    write!(f, " per {} ms)", self.window_ms)?;
                }
                if let Some(reason) = &self.reason {
                    write!(f, ": {reason}")?;
                }
                if let Some(retry) = self.retry_after.filter(|_| self.param_index.is_some()) {
                    write!(f, " (retry after {retry:?})")?;
                }
                Ok(())
            }
            BlockKind::HotParam => {
                write!(
                    f,
                    "hotspot rule on parameter {}",
                    self.param_index.unwrap_or(0)
                )?;
                if let Some(reason) = &self.reason {
                    write!(f, ": {reason}")?;
                }
                if let Some(retry) = self.retry_after {
                    write!(f, " (retry after {retry:?})")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BlockError {}

/// So that a guarded function returning `std::io::Result` needs no fallback: a block becomes an
/// `io::Error` of kind `Other` whose source is the `BlockError`.
impl From<BlockError> for std::io::Error {
    fn from(block: BlockError) -> std::io::Error {
        std::io::Error::other(block)
    }
}

/// A rule that failed validation: which rule (by resource), which field, and why.
///
/// ```
/// # use sentinel_runtime::rules::{self, FlowRule};
/// let err = rules::load_flow_rules(vec![FlowRule::qps("orders", f64::NAN)]).unwrap_err();
/// assert_eq!(err.resource(), "orders");
/// assert_eq!(err.field(), "threshold");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    resource: String,
    field: &'static str,
    message: String,
}

impl RuleError {
    pub(crate) fn new(
        resource: &str,
        field: &'static str,
        message: impl Into<String>,
    ) -> RuleError {
        RuleError {
            resource: resource.to_owned(),
            field,
            message: message.into(),
        }
    }

    /// The resource the bad rule names.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The rule's field that is wrong (`threshold`, `resource`, `window`, `sample_count`, ...).
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// What is wrong with it, and what is accepted.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid rule for resource `{}`: field `{}` {}",
            self.resource, self.field, self.message
        )
    }
}

impl std::error::Error for RuleError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_traits<
        T: Clone + fmt::Debug + fmt::Display + std::error::Error + Send + Sync + 'static,
    >() {
    }

    #[test]
    fn block_error_has_the_promised_traits_and_text() {
        assert_traits::<BlockError>();
        assert_traits::<RuleError>();
        let e = BlockError::flow("orders", 100.0, 1_000);
        assert_eq!(
            e.to_string(),
            "resource `orders` blocked by flow rule (qps 100)"
        );
        let e = BlockError::flow("orders", 5.0, 60_000);
        assert_eq!(
            e.to_string(),
            "resource `orders` blocked by flow rule (5 per 60000 ms)"
        );
        let e = BlockError::concurrency("db", 4.0);
        assert_eq!(
            e.to_string(),
            "resource `db` blocked by concurrency rule (limit 4)"
        );
        assert_eq!(e.kind(), BlockKind::Concurrency);
        assert_eq!(e.threshold(), 4.0);
    }
}
