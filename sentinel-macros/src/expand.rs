//! Code generation: a `static` node, an entry guard around the body, the fallback on a block.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{parse_quote, ItemFn, ReturnType};

use crate::args::{Args, BreakerKind};
use crate::errors::Errors;
use crate::valid::{self, Passed};

/// The attribute: parse, validate, expand. On any error the function is emitted unchanged
/// beside the errors, so IDE features keep working.
pub(crate) fn sentinel(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => return not_a_function(item),
    };
    let mut errors = Errors::default();
    let parsed =
        (|input: syn::parse::ParseStream<'_>| Args::parse(input, &mut errors)).parse2(args);
    let args = match parsed {
        Ok(args) => args,
        Err(e) => {
            errors.push(e);
            Args::default()
        }
    };
    let passed = valid::check(&args, &func, &mut errors);
    match errors.finish() {
        Ok(()) => guard(args, func, &passed),
        Err(e) => {
            let errors = e.to_compile_error();
            quote!(#func #errors)
        }
    }
}

/// Whether a type contains `impl Trait` anywhere.
fn mentions_impl(ty: &syn::Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => i == "impl",
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
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

fn not_a_function(item: TokenStream) -> TokenStream {
    let message = match syn::parse2::<syn::TraitItemFn>(item.clone()) {
        Ok(f) if f.default.is_none() => {
            "#[sentinel] needs a function body to guard: put it on the function in the `impl` \
             block, not on the trait's declaration"
        }
        _ => "#[sentinel] can only be put on a function (`fn` or `async fn`)",
    };
    let first = item
        .clone()
        .into_iter()
        .next()
        .map(|t| t.span())
        .unwrap_or_else(Span::call_site);
    let error = syn::Error::new(first, message).to_compile_error();
    quote!(#item #error)
}

fn guard(args: Args, func: ItemFn, passed: &[Passed]) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = func;
    let krate: syn::Path = args
        .krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::sentinel_runtime));
    let private = quote!(#krate::__private);
    let name = match &args.resource {
        Some(lit) => lit.to_token_stream(),
        None => {
            let ident = sig.ident.to_string();
            quote!(::core::concat!(::core::module_path!(), "::", #ident))
        }
    };
    let mut defaults = Vec::new();
    if let Some(qps) = args.qps {
        let v = Literal::f64_suffixed(qps.value);
        let window_ms = Literal::u64_suffixed(args.window.map_or(1_000, |w| w.value));
        let strict = args.strict.is_some_and(|s| s.value);
        let warm_up_ms = Literal::u64_suffixed(args.warm_up.map_or(0, |w| w.value));
        let cold_factor = Literal::f64_suffixed(args.cold_factor.map_or(3.0, |c| c.value));
        let max_wait = match args.max_wait {
            Some(w) => {
                let ms = Literal::u64_suffixed(w.value);
                quote!(::core::option::Option::Some(#ms))
            }
            None => quote!(::core::option::Option::None),
        };
        let relate = match &args.relate {
            Some(r) => quote!(::core::option::Option::Some(#r)),
            None => quote!(::core::option::Option::None),
        };
        defaults.push(quote_spanned! {qps.span=>
            #private::DefaultRule::Flow(#private::FlowSpec {
                threshold: #v,
                window_ms: #window_ms,
                strict: #strict,
                warm_up_ms: #warm_up_ms,
                cold_factor: #cold_factor,
                max_wait_ms: #max_wait,
                relate: #relate,
            })
        });
    }
    if let Some(c) = args.concurrency {
        let v = Literal::u32_suffixed(c.value);
        defaults.push(quote_spanned!(c.span=> #private::DefaultRule::Concurrency(#v)));
    }
    for b in &args.breakers {
        let kind = match b.kind {
            BreakerKind::SlowRatio { max_rt_ms, ratio } => {
                let (ms, r) = (
                    Literal::u64_suffixed(max_rt_ms),
                    Literal::f64_suffixed(ratio),
                );
                quote!(#private::BreakerKind::SlowRatio { max_rt_ms: #ms, ratio: #r })
            }
            BreakerKind::ErrorRatio(r) => {
                let r = Literal::f64_suffixed(r);
                quote!(#private::BreakerKind::ErrorRatio(#r))
            }
            BreakerKind::ErrorCount(n) => {
                let n = Literal::u32_suffixed(n);
                quote!(#private::BreakerKind::ErrorCount(#n))
            }
        };
        let min_requests = Literal::u32_suffixed(b.min_requests);
        let window_ms = Literal::u64_suffixed(b.window_ms);
        let recovery_ms = Literal::u64_suffixed(b.recovery_ms);
        let probes = Literal::u32_suffixed(b.probes);
        defaults.push(quote_spanned! {b.span=>
            #private::DefaultRule::Breaker(#private::BreakerSpec {
                kind: #kind,
                min_requests: #min_requests,
                window_ms: #window_ms,
                recovery_ms: #recovery_ms,
                probes: #probes,
            })
        });
    }

    // Our own names are hygienic (mixed-site): the user's body cannot see or shadow them.
    let node = syn::Ident::new("__SENTINEL_NODE", Span::mixed_site());
    let entry = syn::Ident::new("__sentinel_entry", Span::mixed_site());
    let blocked = syn::Ident::new("__sentinel_blocked", Span::mixed_site());
    let result = syn::Ident::new("__sentinel_result", Span::mixed_site());
    let is_async = sig.asyncness.is_some();
    let is_result = valid::returns_result(&sig.output);

    let on_block = match (&args.fallback, is_async) {
        (Some(fallback), false) => quote_spanned! {fallback.span()=>
            return #fallback(#(#passed,)* #blocked)
        },
        (Some(fallback), true) => quote_spanned! {fallback.span()=>
            {
                #[allow(unused_imports)]
                use #private::ResolveValue as _;
                return #private::Fallback(#fallback(#(#passed,)* #blocked)).resolve().await
            }
        },
        (None, _) => {
            let span = match &sig.output {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => sig.ident.span(),
            };
            // Respanned so that a missing `From<BlockError>` is reported at the return type.
            let private = respan(private.clone(), span);
            quote_spanned! {span=>
                return #private::blocked_err(#blocked)
            }
        }
    };

    // A `Result` whose `Err` counts as an error (all of them, or those `is_error` accepts).
    let mark_error = match (&args.is_error, is_result) {
        (_, false) => quote!(),
        (Some(is_error), true) => {
            let err = syn::Ident::new(
                "__sentinel_err",
                Span::mixed_site().located_at(is_error.span()),
            );
            quote_spanned! {is_error.span()=>
                if let ::core::result::Result::Err(#err) = &#result {
                    if #is_error(#err) {
                        #entry.set_error();
                    }
                }
            }
        }
        (None, true) => quote! {
            if ::core::result::Result::is_err(&#result) {
                #entry.set_error();
            }
        },
    };
    // Pin the body's result to the declared type, so a type error in `is_error` is reported
    // against `is_error`, not inferred back into the body (`impl Trait` cannot be written here).
    let result_type = match &sig.output {
        ReturnType::Type(_, ty) if !mentions_impl(ty) => quote!(: #ty),
        _ => quote!(),
    };
    let body = match (is_async, is_result) {
        // Nothing to inspect: run the body in place; the guard drops on every return.
        (false, false) => quote!(#block),
        (false, true) => quote! {{
            let #result #result_type = #private::call_once(move || #block);
            #mark_error
            #result
        }},
        // The guard lives inside the future; finishing marks it not abandoned.
        (true, _) => quote! {{
            let #result #result_type = async move #block .await;
            #mark_error
            #private::finished(&#entry);
            #result
        }},
    };
    // A sync caller sleeps through a throttling wait inside `enter`; an async caller awaits it
    // holding the reservation, which gives everything back if the future is dropped.
    let enter = if is_async {
        let reservation = syn::Ident::new("__sentinel_reservation", Span::mixed_site());
        quote! {
            let #reservation = match #node.reserve_async() {
                ::core::result::Result::Ok(reservation) => reservation,
                ::core::result::Result::Err(#blocked) => #on_block,
            };
            #private::wait_for_turn(&#reservation).await;
            let #entry = #reservation.into_entry();
        }
    } else {
        quote! {
            let #entry = match #node.enter() {
                ::core::result::Result::Ok(entry) => entry,
                ::core::result::Result::Err(#blocked) => #on_block,
            };
        }
    };

    quote! {
        #(#attrs)*
        #vis #sig {
            static #node: #private::StaticNode = #private::StaticNode::new(#name, &[#(#defaults),*]);
            #enter
            #body
        }
    }
}
