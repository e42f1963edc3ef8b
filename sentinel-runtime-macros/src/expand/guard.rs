//! [`guard`]: the guarded function, put together from the parts (`node`, `entry`, `body`,
//! `fallback`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{parse_quote, ItemFn};

use super::cx::{Cx, Names, Shape};
use super::{body, entry, fallback, node};
use crate::args::Args;
use crate::valid::Passed;

/// The guarded function: its signature (argument patterns hidden), and a body that enters the
/// static node, runs the user's body if admitted, and returns the fallback's value if blocked.
pub(super) fn guard(
    args: Args,
    func: ItemFn,
    passed: &[Passed],
    params: &[syn::Ident],
) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = func;
    let destructure = body::hide_patterns(&mut sig, passed);
    // The body's inner attributes (`#![allow(..)]`) open the function's new body: before the
    // function they would be an error.
    let (inner, attrs): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    let krate: syn::Path = args
        .krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::sentinel_runtime));
    let cx = Cx {
        args: &args,
        sig: &sig,
        block: &block,
        shape: Shape::of(&sig),
        names: Names::new(),
        private: quote!(#krate::__private),
        passed,
        params,
    };
    let static_node = node::static_node(&cx);
    let (hash_params, admission) = entry::admission(&cx);
    let (slot_decl, admitted) = body::admitted(&cx, &destructure);
    let on_block = fallback::on_block(&cx);
    // `return`: a fallback of the wrong type is reported against the return type. Not where
    // the fallback never returns either (nothing may follow it).
    let ret = match cx.shape.never {
        true => quote!(),
        false => quote!(return),
    };
    let Names {
        node,
        node_ref,
        blocked,
        ..
    } = &cx.names;
    let contents = quote! {
        #(#inner)*
        #static_node
        // Entered through a reference: clippy counts a method call on a static with interior
        // mutability as mutating it, and would then never ask for `#[must_use]`, which it asks
        // of the same function without the attribute.
        let #node_ref = &#node;
        #slot_decl
        #hash_params
        match #admission {
            #admitted
            // The fallback gets every argument, also those the body leaves unused.
            #[allow(clippy::used_underscore_binding)]
            ::core::result::Result::Err(#blocked) => #ret #on_block,
        }
    };
    // The body's braces are the user's: the function then spans the user's tokens from its
    // first to its last, and lints about the function as a whole (`must_use_candidate`) see it
    // as the user's, as they would without the attribute. Those about our statements inside
    // still see our spans.
    let mut body = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, contents);
    body.set_span(block.brace_token.span.join());
    quote! {
        #(#attrs)*
        #vis #sig #body
    }
}
