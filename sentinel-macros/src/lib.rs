//! The `#[sentinel]` attribute. Use it through `sentinel_runtime::sentinel`.
use proc_macro::TokenStream;

/// Guards a function with a resource node (see `sentinel_runtime`).
#[proc_macro_attribute]
pub fn sentinel(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
