//! The admitted call: the arguments written as patterns destructured, the user's body run in its
//! own closure (sync) or future (async) under the entry, and its value marked as an error or
//! not.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse_quote;
use syn::spanned::Spanned;

use super::cx::Cx;
use super::spans::{reported_at, respan};
use crate::valid::Passed;

/// Gives the arguments written as patterns their hidden names in the signature; returns the
/// statements that destructure them where the body runs, as the function itself would.
pub(super) fn hide_patterns(sig: &mut syn::Signature, passed: &[Passed]) -> Vec<TokenStream> {
    let mut destructure = Vec::new();
    for p in passed {
        if let Passed::Hidden { index, name } = p {
            if let Some(syn::FnArg::Typed(pt)) = sig.inputs.iter_mut().nth(*index) {
                // A `ref mut` binding borrows the argument mutably: it must be `mut`.
                let ref_mut = borrows_mutably(&pt.pat);
                let hidden: syn::Pat = match ref_mut {
                    true => parse_quote!(mut #name),
                    false => parse_quote!(#name),
                };
                let pat = std::mem::replace(&mut *pt.pat, hidden);
                // `_` binds nothing, and the argument lives to the end of the call either way.
                if !matches!(pat, syn::Pat::Wild(_)) {
                    destructure.push(quote!(let #pat = #name;));
                }
            }
        }
    }
    destructure
}

/// Whether `pat` binds anything by `ref mut`.
fn borrows_mutably(pat: &syn::Pat) -> bool {
    struct Find(bool);
    impl syn::visit::Visit<'_> for Find {
        fn visit_pat_ident(&mut self, p: &syn::PatIdent) {
            self.0 |= p.by_ref.is_some() && p.mutability.is_some();
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut find = Find(false);
    syn::visit::Visit::visit_pat(&mut find, pat);
    find.0
}

/// The `Ok` arm of the match on the admission, and the declaration of the slot that gives an
/// `impl Trait` return's blocked value the body's type (nothing for other returns).
pub(super) fn admitted(cx: &Cx<'_>, destructure: &[TokenStream]) -> (TokenStream, TokenStream) {
    let Cx { private, .. } = cx;
    let entry = &cx.names.entry;
    let (slot_decl, body) = body(cx);
    let arm = if cx.shape.is_async {
        // An async caller awaits a throttling wait holding the reservation, which gives
        // everything back if the future is dropped.
        let reservation = syn::Ident::new("__sentinel_reservation", Span::mixed_site());
        quote! {
            ::core::result::Result::Ok(#reservation) => {
                #private::wait_for_turn(&#reservation).await;
                let #entry = #reservation.into_entry();
                #(#destructure)*
                #body
            }
        }
    } else {
        // A sync caller sleeps through a throttling wait inside `enter`. The entry is borrowed
        // where `enter` wrote it, not moved out of the `Result` (a copy of five words on every
        // call); it is dropped with the `Result`, at the end of the `match`, after the body.
        // Mutably: the body's return is marked on it with a plain write, once the arguments'
        // parts the body left unused are dropped too (a panic there is the call's, as before).
        let value = syn::Ident::new("__sentinel_value", Span::mixed_site());
        match cx.shape.never {
            true => quote! {
                ::core::result::Result::Ok(ref mut #entry) => {
                    #(#destructure)*
                    #body
                }
            },
            false => quote! {
                ::core::result::Result::Ok(ref mut #entry) => {
                    let #value = {
                        #(#destructure)*
                        #body
                    };
                    #private::returned(#entry);
                    #value
                }
            },
        }
    };
    (slot_decl, arm)
}

/// The slot's declaration (see [`admitted`]), and what runs under the entry: the body, its
/// value marked as an error or not, and the value; a body that never returns is the arm's
/// value, with nothing after it.
fn body(cx: &Cx<'_>) -> (TokenStream, TokenStream) {
    let Cx { private, block, .. } = cx;
    let (entry, result, slot) = (&cx.names.entry, &cx.names.result, &cx.names.slot);
    let run = if cx.shape.is_async {
        run_async(cx)
    } else {
        run_sync(cx)
    };
    // `impl Trait`: the blocked call's value must be the body's (unnamed) type.
    let (slot_decl, run) = match cx.shape.opaque {
        true => {
            let run = quote! {
                #run
                let #result = #slot.body(#result);
            };
            // `Default` by its path: a module may have no prelude.
            let slot_type = quote!(#private::ReturnSlot<_>);
            (
                quote!(let #slot = <#slot_type as ::core::default::Default>::default();),
                run,
            )
        }
        false => (quote!(), run),
    };
    let mark_error = mark_error(cx);
    let body = match (cx.shape.never, cx.shape.is_async) {
        (true, false) => quote!(#private::call_once(move || -> ! #block)),
        (true, true) => quote!(async move #block .await),
        (false, false) => quote!(#run #mark_error #result),
        // The guard lives inside the future; finishing marks it not abandoned.
        (false, true) => quote!(#run #mark_error #private::finished(&#entry); #result),
    };
    (slot_decl, body)
}

/// The sync body in its own closure, so that its `return`s and `?`s come back here. The
/// closure declares the return type, so the body is checked against it as it would be in the
/// function (coercions included).
fn run_sync(cx: &Cx<'_>) -> TokenStream {
    let Cx { private, block, .. } = cx;
    let result = &cx.names.result;
    let annotation = cx.shape.declared.map(|ty| quote!(-> #ty));
    quote!(let #result = #private::call_once(move || #annotation #block);)
}

/// The async body in its own future, awaited, so that its `return`s and `?`s come back here.
fn run_async(cx: &Cx<'_>) -> TokenStream {
    let result = &cx.names.result;
    let declared = cx.shape.declared.filter(|_| !cx.shape.never);
    let annotation = declared.map(|ty| quote!(: #ty));
    // An async block has no declared return type: its first `return` would fix it, and
    // later ones (or `.into()`, `Box::new(..)` as `Box<dyn Trait>`) would not coerce to
    // the function's type. A return edge of that type, never taken, comes first
    // (tracing-attributes' fake return edge).
    let edge = declared.map(|ty| {
        let ret = syn::Ident::new("__sentinel_ret", Span::mixed_site());
        quote! {
            #[allow(
                unknown_lints,
                unreachable_code,
                clippy::diverging_sub_expression,
                clippy::empty_loop,
                clippy::let_unit_value,
                clippy::needless_return,
                clippy::unreachable
            )]
            if false {
                let #ret: #ty = loop {};
                return #ret;
            }
        }
    });
    // The edge opens the body's own block (no extra braces for a lint to flag).
    let stmts = &cx.block.stmts;
    quote!(let #result #annotation = async move { #edge #(#stmts)* }.await;)
}

/// Marks the entry as an error by the body's value: an `Err` of a `Result` (whatever its
/// spelling, decided by the type system), or those `is_error` accepts. Nothing for `()` and `!`.
fn mark_error(cx: &Cx<'_>) -> TokenStream {
    let Cx { private, .. } = cx;
    let (entry, result) = (&cx.names.entry, &cx.names.result);
    match &cx.args.is_error {
        _ if cx.shape.unit || cx.shape.never => quote!(),
        Some(is_error) => {
            let err = syn::Ident::new(
                "__sentinel_err",
                Span::mixed_site().located_at(is_error.span()),
            );
            let private = respan(private.clone(), is_error.span());
            let at = reported_at("__sentinel_result_at", is_error.span());
            quote_spanned! {is_error.span()=>
                let #at = &#result;
                if let ::core::option::Option::Some(#err) = #private::ResultValue::error(#at) {
                    if #is_error(#err) {
                        #entry.set_error();
                    }
                }
            }
        }
        None => quote! {
            {
                #[allow(unused_imports)]
                use #private::NotAResult as _;
                if #private::Outcome(&#result).failed() {
                    #entry.set_error();
                }
            }
        },
    }
}
