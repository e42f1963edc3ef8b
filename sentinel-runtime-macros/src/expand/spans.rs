//! Names and spans of the generated tokens: where rustc reports what goes wrong in them.

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// One of our hygienic names, reported at `span`.
pub(super) fn located(ident: &syn::Ident, span: Span) -> syn::Ident {
    syn::Ident::new(&ident.to_string(), ident.span().located_at(span))
}

/// A name of ours with the user's hygiene at `span`, for a value whose type errors must be
/// reported there: rustc reports an argument or receiver with our hygiene at the attribute.
/// Used only in statements that contain no user code that could name it.
pub(super) fn reported_at(name: &str, span: Span) -> syn::Ident {
    syn::Ident::new(name, span)
}

/// `tokens` with every span set to `span`.
pub(super) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = proc_macro2::TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// A direct call of the fallback: in an `unsafe fn`, in an unsafe block (the fallback may be
/// unsafe too, and its call is an unsafe operation of our code, not the user's).
pub(super) fn direct_call(sig: &syn::Signature, call: TokenStream) -> TokenStream {
    match sig.unsafety {
        Some(_) => quote!(unsafe { #call }),
        None => call,
    }
}
