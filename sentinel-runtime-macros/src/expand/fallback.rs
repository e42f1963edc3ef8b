//! What a blocked call returns: the fallback's value, or the block carried by the return type.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::cx::Cx;
use super::fn_pointer;
use super::spans::{direct_call, located, reported_at, respan};

/// The value of the `Err` arm of the match on the admission.
pub(super) fn on_block(cx: &Cx<'_>) -> TokenStream {
    let Cx { private, .. } = cx;
    let (blocked, slot) = (&cx.names.blocked, &cx.names.slot);
    let output_span = cx.shape.output_span;
    match &cx.args.fallback {
        Some(fallback) => call(cx, fallback),
        // No fallback: the return type must carry the block (a `Result` whose error type
        // implements `From<BlockError>`), which the type system checks, at the return type.
        // The error type is asked for `FromBlockError` itself (a trait method, whose message
        // names the type and the fix), not through a bound of ours on the `Result`.
        None if cx.shape.opaque => {
            let at = reported_at("__sentinel_slot_at", output_span);
            let private = respan(private.clone(), output_span);
            quote_spanned! {output_span=>
                {
                    let #at = &#slot;
                    #at.blocked(#private::FromBlockError::from_block(#blocked))
                }
            }
        }
        None => {
            let private = respan(private.clone(), output_span);
            quote_spanned! {output_span=>
                #private::BlockedValue::blocked(#private::FromBlockError::from_block(#blocked))
            }
        }
    }
}

/// The call of `fallback` with the function's arguments and the block: through a function
/// pointer of the signature it must have where one can be written, else directly (awaited
/// if the function is async).
fn call(cx: &Cx<'_>, fallback: &syn::Path) -> TokenStream {
    let Cx {
        private, passed, ..
    } = cx;
    let span = fallback.span();
    // The block's parameter is inferred from the fallback: `BlockError` or `&BlockError`
    // (`BlockArg` says which are accepted).
    let pointer = if cx.shape.is_async {
        None
    } else {
        fn_pointer::expected(cx.sig, &quote!(_))
    };
    let blocked = {
        let private = respan(private.clone(), span);
        let blocked = &cx.names.blocked;
        quote_spanned!(span=> #private::BlockArg::block_arg(&#blocked))
    };
    let call = direct_call(
        cx.sig,
        quote_spanned!(span=> #fallback(#(#passed,)* #blocked)),
    );
    match pointer {
        Some(pointer) => coerced(cx, fallback, pointer, &blocked),
        None if cx.shape.is_async => awaited(cx, span, call),
        None => {
            let slot = located(&cx.names.slot, span);
            match cx.shape.opaque {
                true => quote_spanned!(span=> #slot.fallback(#call)),
                false => call,
            }
        }
    }
}

/// The fallback coerced to the signature it must have, at the user's path: a mismatch names
/// both signatures.
fn coerced(
    cx: &Cx<'_>,
    fallback: &syn::Path,
    pointer: TokenStream,
    blocked: &TokenStream,
) -> TokenStream {
    let passed = cx.passed;
    let span = fallback.span();
    let pointer = respan(pointer, Span::mixed_site().located_at(span));
    let local = syn::Ident::new("__sentinel_fallback", Span::mixed_site().located_at(span));
    // In an `unsafe fn`, our block, not the user's: no lint asks to document it.
    let call = direct_call(cx.sig, quote_spanned!(span=> #local(#(#passed,)* #blocked)));
    quote_spanned! {span=>
        {
            let #local: #pointer = #fallback;
            #call
        }
    }
}

/// The async fallback's call, awaited if it returns a future (`Fallback::resolve`).
fn awaited(cx: &Cx<'_>, span: Span, call: TokenStream) -> TokenStream {
    let Cx { private, .. } = cx;
    let value = quote_spanned! {span=>
        #private::Fallback(#call).resolve().await
    };
    let value = match cx.shape.opaque {
        // Bound first: rustc reports an awaited argument at the attribute.
        true => {
            let slot = located(&cx.names.slot, span);
            let at = reported_at("__sentinel_fallback_at", span);
            quote_spanned! {span=>
                let #at = #value;
                #slot.fallback(#at)
            }
        }
        false => value,
    };
    quote_spanned! {span=>
        {
            #[allow(unused_imports)]
            use #private::ResolveValue as _;
            #value
        }
    }
}
