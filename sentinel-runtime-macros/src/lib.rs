//! The `#[sentinel]` attribute of `sentinel_runtime`: use it as `sentinel_runtime::sentinel`,
//! whose documentation describes every argument.
//!
//! Stages, one module each: `args` parses, `valid` checks across arguments, against the
//! run-time's rule limits and the signature, `expand` generates the code (with `fn_pointer`,
//! the fallback's expected signature). What only the type system can know (is the return type
//! a `Result`? does the fallback return the body's type?) is checked by the generated code
//! through `sentinel_runtime::__private`, with messages of its own.

mod args;
mod duration;
mod errors;
mod expand;
mod limits;
mod valid;

use proc_macro::TokenStream;

/// Guards a function with a flow-control resource. Documented at `sentinel_runtime::sentinel`.
#[proc_macro_attribute]
pub fn sentinel(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::sentinel(args.into(), item.into()).into()
}
