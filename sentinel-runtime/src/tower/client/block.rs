//! [`block_error`]: the [`BlockError`] in a client layer's error, if a rule refused the call.

use crate::BlockError;

use super::service::BoxError;

/// The [`BlockError`] in `err`, if the call was refused by a rule (and so never sent): `err`
/// itself, or an error of its [`source`](std::error::Error::source) chain (a layer around
/// this one that wraps errors, a `tower::buffer` worker's, a tonic `Status` made from it).
/// `None` for the client's own errors.
///
/// ```
/// use sentinel_runtime::tower::{block_error, BoxError};
/// use sentinel_runtime::{BlockError, BlockKind, EntryBuilder};
/// use sentinel_runtime::rules::{self, FlowRule};
///
/// rules::load_flow_rules(vec![FlowRule::qps("doc-block-error", 0.0)])?;
/// let refused: BoxError = EntryBuilder::new("doc-block-error").enter().unwrap_err().into();
/// assert_eq!(block_error(&refused).map(BlockError::kind), Some(BlockKind::Flow));
/// let other: BoxError = "connection refused".into();
/// assert!(block_error(&other).is_none());
/// # rules::load_flow_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
pub fn block_error(err: &BoxError) -> Option<&BlockError> {
    crate::outbound::block_in(&**err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// An error another layer wrapped around the one below it.
    #[derive(Debug)]
    struct Wrapped(BoxError);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "the layer below failed")
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn a_block_is_found_itself_or_down_the_source_chain_and_nothing_else_is_one() {
        let block = || BlockError::flow("r", 1.0, 1_000);
        let plain: BoxError = Box::new(block());
        assert_eq!(block_error(&plain), Some(&block()));
        let wrapped: BoxError = Box::new(Wrapped(Box::new(Wrapped(Box::new(block())))));
        assert_eq!(block_error(&wrapped), Some(&block()));
        let other: BoxError = Box::new(Wrapped("connection reset".into()));
        assert_eq!(block_error(&other), None);
    }
}
