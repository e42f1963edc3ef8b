//! Code generation: a `static` node, an entry guard around the body, the fallback on a block.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{parse_quote, ItemFn, ReturnType};

use crate::args::{Args, BreakerKind, HotspotLimit};
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
    valid::single_attribute(&func, &mut errors);
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
    let params = valid::params(&args, &func, &mut errors);
    match errors.finish() {
        Ok(()) => guard(args, func, &passed, &params),
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

/// One of our hygienic names, reported at `span`.
fn located(ident: &syn::Ident, span: Span) -> syn::Ident {
    syn::Ident::new(&ident.to_string(), ident.span().located_at(span))
}

/// A name of ours with the user's hygiene at `span`, for a value whose type errors must be
/// reported there: rustc reports an argument or receiver with our hygiene at the attribute.
/// Used only in statements that contain no user code that could name it.
fn reported_at(name: &str, span: Span) -> syn::Ident {
    syn::Ident::new(name, span)
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

/// A direct call of the fallback: in an `unsafe fn`, in an unsafe block (the fallback may be
/// unsafe too, and its call is an unsafe operation of our code, not the user's).
fn direct_call(sig: &syn::Signature, call: TokenStream) -> TokenStream {
    match sig.unsafety {
        Some(_) => quote!(unsafe { #call }),
        None => call,
    }
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

fn guard(args: Args, func: ItemFn, passed: &[Passed], params: &[syn::Ident]) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = func;
    // Arguments written as patterns get their hidden names in the signature, and are
    // destructured where the body runs, as the function itself would.
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
    // The body's inner attributes (`#![allow(..)]`) open the function's new body: before the
    // function they would be an error.
    let (inner, attrs): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
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
    if let Some(span) = args.adaptive_concurrency {
        defaults.push(quote_spanned!(span=> #private::DefaultRule::AdaptiveConcurrency));
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
    for h in &args.hotspots {
        let index = params
            .iter()
            .position(|p| *p == h.param)
            .unwrap_or_default();
        let (concurrency, threshold) = match h.limit {
            HotspotLimit::Qps(q) => (false, q),
            HotspotLimit::Concurrency(c) => (true, f64::from(c)),
        };
        let threshold = Literal::f64_suffixed(threshold);
        let index = Literal::usize_suffixed(index);
        let burst = Literal::u32_suffixed(h.burst.map_or(0, |b| b.value));
        let window_ms = Literal::u64_suffixed(h.window.map_or(1_000, |w| w.value));
        let max_wait = match h.max_wait {
            Some(w) => {
                let ms = Literal::u64_suffixed(w.value);
                quote!(::core::option::Option::Some(#ms))
            }
            None => quote!(::core::option::Option::None),
        };
        let capacity = Literal::usize_suffixed(h.capacity.map_or(0, |c| c.value as usize));
        let strict = h.strict;
        defaults.push(quote_spanned! {h.span=>
            #private::DefaultRule::Hotspot(#private::HotspotSpec {
                param_index: #index,
                concurrency: #concurrency,
                threshold: #threshold,
                burst: #burst,
                window_ms: #window_ms,
                max_wait_ms: #max_wait,
                capacity: #capacity,
                strict: #strict,
            })
        });
    }

    // Our own names are hygienic (mixed-site): the user's body cannot see or shadow them.
    let node = syn::Ident::new("__SENTINEL_NODE", Span::mixed_site());
    let node_ref = syn::Ident::new("__sentinel_node", Span::mixed_site());
    let entry = syn::Ident::new("__sentinel_entry", Span::mixed_site());
    let blocked = syn::Ident::new("__sentinel_blocked", Span::mixed_site());
    let result = syn::Ident::new("__sentinel_result", Span::mixed_site());
    let slot = syn::Ident::new("__sentinel_slot", Span::mixed_site());
    let is_async = sig.asyncness.is_some();
    // The declared return type, where it can be written in the body (not `impl Trait`).
    let (declared, opaque) = match &sig.output {
        ReturnType::Type(_, ty) if mentions_impl(ty) => (None, true),
        ReturnType::Type(_, ty) => (Some(&**ty), false),
        ReturnType::Default => (None, false),
    };
    let never = matches!(declared, Some(syn::Type::Never(_)));
    let unit = match &sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => valid::is_unit(ty),
    };
    // Where an error about the return type points: the type, or the name for `()`.
    let output_span = match &sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => sig.ident.span(),
    };

    let on_block = match &args.fallback {
        Some(fallback) => {
            let span = fallback.span();
            // The block's parameter is inferred from the fallback: `BlockError` or `&BlockError`
            // (`BlockArg` says which are accepted).
            let pointer = if is_async {
                None
            } else {
                crate::fn_pointer::expected(&sig, &quote!(_))
            };
            let blocked = {
                let private = respan(private.clone(), span);
                quote_spanned!(span=> #private::BlockArg::block_arg(&#blocked))
            };
            match pointer {
                // The fallback coerced to the signature it must have, at the user's path: a
                // mismatch names both signatures.
                Some(pointer) => {
                    let pointer = respan(pointer, Span::mixed_site().located_at(span));
                    let local =
                        syn::Ident::new("__sentinel_fallback", Span::mixed_site().located_at(span));
                    let call = quote_spanned!(span=> #local(#(#passed,)* #blocked));
                    let call = match &sig.unsafety {
                        // Our block, not the user's: no lint asks to document it.
                        Some(_) => quote!(unsafe { #call }),
                        None => call,
                    };
                    quote_spanned! {span=>
                        {
                            let #local: #pointer = #fallback;
                            #call
                        }
                    }
                }
                None if is_async => {
                    let call = direct_call(
                        &sig,
                        quote_spanned!(span=> #fallback(#(#passed,)* #blocked)),
                    );
                    let value = quote_spanned! {span=>
                        #private::Fallback(#call).resolve().await
                    };
                    let value = match opaque {
                        // Bound first: rustc reports an awaited argument at the attribute.
                        true => {
                            let slot = located(&slot, span);
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
                None => {
                    let slot = located(&slot, span);
                    let value = direct_call(
                        &sig,
                        quote_spanned!(span=> #fallback(#(#passed,)* #blocked)),
                    );
                    match opaque {
                        true => quote_spanned!(span=> #slot.fallback(#value)),
                        false => value,
                    }
                }
            }
        }
        // No fallback: the return type must carry the block (a `Result` whose error type
        // implements `From<BlockError>`), which the type system checks, at the return type.
        // The error type is asked for `FromBlockError` itself (a trait method, whose message
        // names the type and the fix), not through a bound of ours on the `Result`.
        None if opaque => {
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
    };

    // The body's value: an `Err` of a `Result` (whatever its spelling, decided by the type
    // system) counts as an error, or those `is_error` accepts.
    let mark_error = match &args.is_error {
        _ if unit || never => quote!(),
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
    };
    // The body in its own closure (sync) or future (async), so that its `return`s and `?`s
    // come back here. The closure declares the return type, so the body is checked against it
    // as it would be in the function (coercions included).
    let run = if is_async {
        let declared = declared.filter(|_| !never);
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
        let stmts = &block.stmts;
        quote!(let #result #annotation = async move { #edge #(#stmts)* }.await;)
    } else {
        let annotation = declared.map(|ty| quote!(-> #ty));
        quote!(let #result = #private::call_once(move || #annotation #block);)
    };
    // `impl Trait`: the blocked call's value must be the body's (unnamed) type.
    let (slot_decl, run) = match opaque {
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
    // What follows the body; a body that never returns is the arm's value, with nothing after.
    let body = match (never, is_async) {
        (true, false) => quote!(#private::call_once(move || -> ! #block)),
        (true, true) => quote!(async move #block .await),
        (false, false) => quote!(#run #mark_error #result),
        // The guard lives inside the future; finishing marks it not abandoned.
        (false, true) => quote!(#run #mark_error #private::finished(&#entry); #result),
    };
    let admitted = if is_async {
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
        // A sync caller sleeps through a throttling wait inside `enter`.
        quote! {
            ::core::result::Result::Ok(#entry) => {
                #(#destructure)*
                #body
            }
        }
    };
    // `return`: a fallback of the wrong type is reported against the return type. Not where
    // the fallback never returns either (nothing may follow it).
    let ret = match never {
        true => quote!(),
        false => quote!(return),
    };
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
    let inbound = args.inbound.is_some_and(|i| i.value);
    let (hash_params, admission) = match (params.is_empty() && !inbound, is_async) {
        (true, true) => (quote!(), quote!(#node_ref.reserve_async())),
        (true, false) => (quote!(), quote!(#node_ref.enter())),
        (false, true) if params.is_empty() => {
            (quote!(), quote!(#node_ref.reserve_async_inbound(&[])))
        }
        (false, false) if params.is_empty() => (quote!(), quote!(#node_ref.enter_inbound(&[]))),
        (false, true) if inbound => (hash_let, quote!(#node_ref.reserve_async_inbound(&#hashes))),
        (false, false) if inbound => (hash_let, quote!(#node_ref.enter_inbound(&#hashes))),
        (false, true) => (hash_let, quote!(#node_ref.reserve_async_with(&#hashes))),
        (false, false) => (hash_let, quote!(#node_ref.enter_with(&#hashes))),
    };

    // The parameters' names, for hotspot rules that name them (`param: user` in rule files).
    let named = (!params.is_empty()).then(|| {
        let names = params
            .iter()
            .map(|p| syn::LitStr::new(&syn::ext::IdentExt::unraw(p).to_string(), p.span()));
        quote!(.with_params(&[#(#names),*]))
    });
    let contents = quote! {
        #(#inner)*
        static #node: #private::StaticNode =
            #private::StaticNode::new(#name, &[#(#defaults),*]) #named;
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
