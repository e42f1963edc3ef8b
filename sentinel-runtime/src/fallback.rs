//! What the `#[sentinel]` attribute asks of the types around a blocked call: the traits its
//! generated code uses, so that a mistake is reported in their words, at your code.
//!
//! A blocked call returns one of two things:
//!
//! * **the fallback's value**, with `fallback = some_fn`: `some_fn` takes the guarded function's
//!   arguments (`self` first for a method) and then the block, as a [`BlockError`] or a
//!   `&BlockError` ([`BlockArg`]; the reference keeps `clippy::needless_pass_by_value` quiet in
//!   a fallback that only reads it), and returns the function's type (an `async fn`'s fallback
//!   may be `async` or not);
//! * **`Err(E::from(block))`** without a fallback, when the function returns a `Result` (any
//!   alias of one, [`BlockedValue`]) whose error type implements `From<BlockError>`
//!   ([`FromBlockError`]).
//!
//! ```
//! use sentinel_runtime::{sentinel, BlockError};
//!
//! #[derive(Debug)]
//! struct ApiError(String);
//!
//! impl From<BlockError> for ApiError {
//!     fn from(e: BlockError) -> Self {
//!         ApiError(e.to_string())
//!     }
//! }
//!
//! // No fallback: a blocked call is `Err(ApiError::from(block))`.
//! #[sentinel(resource = "doc-fallback-lookup", qps = 1)]
//! fn lookup(id: u64) -> Result<u64, ApiError> {
//!     Ok(id)
//! }
//!
//! // A fallback that only reads the block takes it by reference.
//! #[sentinel(resource = "doc-fallback-greet", qps = 1, fallback = greet_busy)]
//! fn greet(name: &str) -> String {
//!     format!("hello {name}")
//! }
//!
//! fn greet_busy(name: &str, err: &BlockError) -> String {
//!     format!("{name}: busy ({:?})", err.kind())
//! }
//!
//! # let _clock = sentinel_runtime::clock::MockClock::install();
//! assert_eq!(lookup(1).unwrap(), 1);
//! assert!(lookup(2).is_err());
//! assert_eq!(greet("ann"), "hello ann");
//! assert_eq!(greet("bob"), "bob: busy (Flow)");
//! ```

use crate::error::BlockError;

/// A return type that can carry a block: what a guarded function without `fallback` returns
/// when blocked. Implemented for every `Result<T, E>`, however it is spelled (`io::Result<T>`, a
/// `type ApiResult<T> = Result<T, AppError>` alias, ...): the type system decides, not the name.
/// Its error type must be [`FromBlockError`].
#[diagnostic::on_unimplemented(
    message = "#[sentinel] needs `fallback = ...` here: a blocked call must still return a `{Self}`",
    label = "a blocked call cannot return this type without a fallback",
    note = "add `fallback = some_fn` (taking the same arguments plus a `BlockError` or `&BlockError`, returning `{Self}`), or return a `Result` whose error type implements `From<BlockError>` (any alias of `Result` works)"
)]
pub trait BlockedValue<E>: Sized {
    /// `Err(error)`.
    fn blocked(error: E) -> Self;
}

impl<T, E> BlockedValue<E> for Result<T, E> {
    #[inline]
    fn blocked(error: E) -> Self {
        Err(error)
    }
}

/// The error type of a guarded function's `Result` when it has no fallback: every type that
/// implements `From<BlockError>` (implement that, not this).
#[diagnostic::on_unimplemented(
    message = "`{Self}` must implement `From<BlockError>`, or add `fallback = ...`",
    label = "a blocked call returns `Err({Self}::from(block_error))`",
    note = "implement `From<sentinel_runtime::BlockError>` for `{Self}`, or add `fallback = some_fn` to the attribute (taking the same arguments plus a `BlockError` or `&BlockError`, returning the same type)"
)]
pub trait FromBlockError: Sized {
    /// `Self::from(block)`.
    fn from_block(block: BlockError) -> Self;
}

// Not recommended: a missing `From` is reported with this trait's message, not `From`'s.
#[diagnostic::do_not_recommend]
impl<E: From<BlockError>> FromBlockError for E {
    #[inline]
    fn from_block(block: BlockError) -> Self {
        E::from(block)
    }
}

/// A fallback's last parameter: the [`BlockError`] itself, or a reference to it.
#[diagnostic::on_unimplemented(
    message = "a fallback's last parameter is the `BlockError`, by value or by reference: `{Self}` is neither",
    label = "expected `BlockError` or `&BlockError`"
)]
pub trait BlockArg<'a>: Sized {
    /// The argument, from the block the generated code holds.
    fn block_arg(block: &'a BlockError) -> Self;
}

impl BlockArg<'_> for BlockError {
    /// A copy, taken on the blocked path only: the attribute's resource name is a
    /// `&'static str`, but a reason built at run time (an authority rule's origin, a custom
    /// slot's message) is copied. A fallback taking `&BlockError` copies nothing.
    #[inline]
    fn block_arg(block: &BlockError) -> Self {
        block.clone()
    }
}

impl<'a> BlockArg<'a> for &'a BlockError {
    #[inline]
    fn block_arg(block: &'a BlockError) -> Self {
        block
    }
}
