//! [`WithSpan`]: a checked value with the spans of what the user wrote.

use proc_macro2::Span;

/// A checked value with the spans of what the user wrote.
#[derive(Clone, Copy)]
pub(crate) struct WithSpan<T> {
    pub(crate) value: T,
    /// The argument's key (`max_wait`), or for `qps` and `concurrency` the value: where errors
    /// about the argument as a whole point.
    pub(crate) span: Span,
    /// The value (`"2h"`): where errors about the value point.
    pub(crate) value_span: Span,
}
