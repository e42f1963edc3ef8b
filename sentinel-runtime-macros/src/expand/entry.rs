//! The entry: the node entered (sync) or reserved (async) with the hotspot parameters' hashes
//! and, for inbound traffic, the system rules.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use super::cx::Cx;
use super::spans::respan;

/// The statements that hash the hotspot parameters (none without them), and the expression
/// that enters the node.
pub(super) fn admission(cx: &Cx<'_>) -> (TokenStream, TokenStream) {
    let Cx {
        private, params, ..
    } = cx;
    let node_ref = &cx.names.node_ref;
    let is_async = cx.shape.is_async;
    // Each hotspot parameter hashed before the body takes the arguments; a value that is not
    // `Hash` is reported at the user's name of it.
    let hashes = syn::Ident::new("__sentinel_params", Span::mixed_site());
    let hashed = params.iter().map(|p| {
        let private = respan(private.clone(), p.span());
        quote_spanned!(p.span()=> #private::param_hash(&#p))
    });
    // Also arguments the body leaves unused (`_tenant`) may be named.
    let hash_let = quote! {
        #[allow(clippy::used_underscore_binding)]
        let #hashes = [#(#hashed),*];
    };
    let inbound = cx.args.inbound.is_some_and(|i| i.value);
    match (params.is_empty() && !inbound, is_async) {
        (true, true) => (quote!(), quote!(#node_ref.reserve_async())),
        (true, false) => (quote!(), quote!(#node_ref.enter_guarded())),
        (false, true) if params.is_empty() => {
            (quote!(), quote!(#node_ref.reserve_async_inbound(&[])))
        }
        (false, false) if params.is_empty() => {
            (quote!(), quote!(#node_ref.enter_guarded_inbound(&[])))
        }
        (false, true) if inbound => (hash_let, quote!(#node_ref.reserve_async_inbound(&#hashes))),
        (false, false) if inbound => (hash_let, quote!(#node_ref.enter_guarded_inbound(&#hashes))),
        (false, true) => (hash_let, quote!(#node_ref.reserve_async_with(&#hashes))),
        (false, false) => (hash_let, quote!(#node_ref.enter_guarded_with(&#hashes))),
    }
}
