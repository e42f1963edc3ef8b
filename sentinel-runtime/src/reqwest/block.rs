//! [`block_error`]: the [`BlockError`] in a middleware chain's error, if a rule refused the
//! request.

use ::reqwest_middleware::Error;

use crate::BlockError;

/// The [`BlockError`] in `err`, if the request was refused by a rule (and so never sent): the
/// error [`SentinelMiddleware`](super::SentinelMiddleware) returns is
/// [`Error::Middleware`] holding it (found also under context another middleware added).
/// `None` for reqwest's own errors and other middlewares' errors.
///
/// ```
/// use sentinel_runtime::reqwest::{block_error, middleware::Error};
/// use sentinel_runtime::{BlockError, BlockKind, EntryBuilder};
/// use sentinel_runtime::rules::{self, FlowRule};
///
/// rules::load_flow_rules(vec![FlowRule::qps("doc-reqwest-block-error", 0.0)])?;
/// let block = EntryBuilder::new("doc-reqwest-block-error").enter().unwrap_err();
/// let refused = Error::middleware(block);
/// assert_eq!(block_error(&refused).map(BlockError::kind), Some(BlockKind::Flow));
/// let other = Error::middleware(std::io::Error::other("another middleware's error"));
/// assert!(block_error(&other).is_none());
/// # rules::load_flow_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
pub fn block_error(err: &Error) -> Option<&BlockError> {
    match err {
        Error::Middleware(e) => e.chain().find_map(|e| e.downcast_ref::<BlockError>()),
        Error::Reqwest(e) => crate::outbound::block_in(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_block_and_other_errors_are_not() {
        let block = BlockError::flow("r", 1.0, 1_000);
        let refused = Error::middleware(block.clone());
        assert_eq!(block_error(&refused), Some(&block));
        let other = Error::middleware(std::io::Error::other("another middleware's error"));
        assert_eq!(block_error(&other), None);
        // reqwest's own error: a request with a relative URL cannot be built.
        let built = ::reqwest::Client::new().get("no-scheme").build();
        let Err(reqwest_error) = built else {
            panic!("a relative URL is refused")
        };
        assert_eq!(block_error(&Error::Reqwest(reqwest_error)), None);
    }
}
