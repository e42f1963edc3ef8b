//! [`BlockError`], the error of a rejected call, and [`RuleError`], the error of a bad rule.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use crate::block_kinds::BlockKind;
use crate::block_kinds::Text;

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

    /// A rejection by a check of `kind` whose threshold is `threshold`; the kind's check adds
    /// what else it knows ([`because`](Self::because), [`with_reason`](Self::with_reason),
    /// [`with_param_index`](Self::with_param_index),
    /// [`with_retry_after`](Self::with_retry_after)).
    pub(crate) fn new(resource: &'static str, kind: BlockKind, threshold: f64) -> BlockError {
        BlockError {
            kind,
            ..BlockError::flow(resource, threshold, 0)
        }
    }

    /// The same error, with why in words made for this call.
    pub(crate) fn with_reason(mut self, reason: String) -> BlockError {
        self.reason = Some(Cow::Owned(reason));
        self
    }

    /// The same error, from a check of the parameter at `param_index`.
    pub(crate) fn with_param_index(mut self, param_index: usize) -> BlockError {
        self.param_index = Some(param_index);
        self
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
        // The kind's words and shape come from the list of block kinds (`block_kinds.rs`).
        match self.kind.text() {
            Text::Window(words) => {
                if self.window_ms == 1_000 {
                    write!(f, "{words} (qps {})", self.threshold)?;
                } else {
                    write!(f, "{words} ({} per {} ms)", self.threshold, self.window_ms)?;
                }
                if let Some(related) = &self.related {
                    write!(f, " counting related resource `{related}`")?;
                }
                match &self.reason {
                    Some(reason) => write!(f, ": {reason}"),
                    None => Ok(()),
                }
            }
            Text::Limit(words) => write!(
                f,
                "{words} ({} {})",
                self.reason.as_deref().unwrap_or("limit"),
                self.threshold
            ),
            Text::Reason(words, default) => {
                write!(f, "{words} ({})", self.reason.as_deref().unwrap_or(default))
            }
            Text::Shared(words) => {
                match self.param_index {
                    Some(i) => write!(
                        f,
                        "{words} hotspot rule on parameter {i} ({}",
                        self.threshold
                    )?,
                    None => write!(f, "{words} flow rule ({}", self.threshold)?,
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
            Text::Param(words) => {
                write!(f, "{words} on parameter {}", self.param_index.unwrap_or(0))?;
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

    #[test]
    fn every_kind_of_block_reads_as_before() {
        let retry = Some(Duration::from_millis(1_500));
        let cases = [
            (BlockError::concurrency("r", 4.0).because("adaptive limit"), "concurrency rule (adaptive limit 4)"),
            (BlockError::circuit_breaker("r", 0.5, "half-open"), "circuit breaker (half-open)"),
            (BlockError::custom("r", "mine", 1.0), "check slot (mine)"),
            (BlockError::authority("r", Some("bot")), "authority rule (origin `bot` not allowed)"),
            (BlockError::authority("r", None), "authority rule (no origin given)"),
            (BlockError::outlier("r", "10.0.0.1:80", 0), "outlier rule (endpoint `10.0.0.1:80` ejected)"),
            (BlockError::system("r", "cpu_usage", 0.8), "system rule (cpu_usage 0.8)"),
            (BlockError::hot_param("r", 2.0, 1, retry), "hotspot rule on parameter 1 (retry after 1.5s)"),
            (BlockError::hot_param("r", 2.0, 0, None).because("why"), "hotspot rule on parameter 0: why"),
            (BlockError::flow("r", 3.0, 1_000).because("throttled"), "flow rule (qps 3): throttled"),
            (BlockError::flow("r", 3.0, 1_000).because(CLUSTER_LIMIT).cluster(1_000), "cluster flow rule (3 per second): cluster limit: the instances together used the rule's tokens"),
            (BlockError::flow("r", 3.0, 1_000).cluster(2_000), "cluster flow rule (3 per 2000 ms)"),
            (BlockError::hot_param("r", 2.0, 1, retry).because(CLUSTER_SHARE).cluster(1_000), "cluster hotspot rule on parameter 1 (2 per second): cluster limit: this instance's local share is used while the rule's lease is on its way (retry after 1.5s)"),
        ];
        for (block, words) in cases {
            assert_eq!(
                block.to_string(),
                format!("resource `r` blocked by {words}")
            );
        }
    }
}
