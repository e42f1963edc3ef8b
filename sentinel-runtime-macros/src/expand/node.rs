//! The function's `static` node: its resource name, the rules of the attribute as its defaults,
//! and the names of its hotspot parameters.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned, ToTokens};

use super::cx::Cx;
use crate::args::{Breaker, BreakerKind, Hotspot, HotspotLimit};

/// `static NODE: StaticNode = StaticNode::new(name, &[defaults]) [.with_params(&[names])]
/// [.shadow()];`
pub(super) fn static_node(cx: &Cx<'_>) -> TokenStream {
    let Cx { private, .. } = cx;
    let node = &cx.names.node;
    let name = resource_name(cx);
    let defaults = defaults(cx);
    // The parameters' names, for hotspot rules that name them (`param: user` in rule files).
    let named = (!cx.params.is_empty()).then(|| {
        let names = cx
            .params
            .iter()
            .map(|p| syn::LitStr::new(&syn::ext::IdentExt::unraw(p).to_string(), p.span()));
        quote!(.with_params(&[#(#names),*]))
    });
    // `shadow = true`: every default rule is a shadow rule.
    let shadow = cx
        .args
        .shadow
        .filter(|s| s.value)
        .map(|s| quote_spanned!(s.span=> .shadow()));
    quote! {
        static #node: #private::StaticNode =
            #private::StaticNode::new(#name, &[#(#defaults),*]) #named #shadow;
    }
}

/// The resource's name: `resource = "..."`, else the function's path in its crate.
fn resource_name(cx: &Cx<'_>) -> TokenStream {
    match &cx.args.resource {
        Some(lit) => lit.to_token_stream(),
        None => {
            let ident = cx.sig.ident.to_string();
            quote!(::core::concat!(::core::module_path!(), "::", #ident))
        }
    }
}

/// The node's default rules, each spanned at the argument that asked for it: the `qps` rule,
/// the concurrency limit (a number or adaptive), every breaker, every hotspot rule.
fn defaults(cx: &Cx<'_>) -> Vec<TokenStream> {
    let Cx { args, private, .. } = cx;
    let mut defaults = Vec::new();
    if let Some(flow) = flow(cx) {
        defaults.push(flow);
    }
    if let Some(c) = args.concurrency {
        let v = Literal::u32_suffixed(c.value);
        defaults.push(quote_spanned!(c.span=> #private::DefaultRule::Concurrency(#v)));
    }
    if let Some(span) = args.adaptive_concurrency {
        defaults.push(quote_spanned!(span=> #private::DefaultRule::AdaptiveConcurrency));
    }
    for b in &args.breakers {
        defaults.push(breaker(b, private));
    }
    for h in &args.hotspots {
        defaults.push(hotspot(h, cx));
    }
    defaults
}

/// `Option<T>` in the generated code: `Some(value)` or `None`.
fn option(value: Option<impl ToTokens>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// The `qps` rule, shaped by `window`, `strict`, `warm_up`, `cold_factor`, `max_wait` and
/// `relate`, with their defaults.
fn flow(cx: &Cx<'_>) -> Option<TokenStream> {
    let Cx { args, private, .. } = cx;
    let qps = args.qps?;
    let v = Literal::f64_suffixed(qps.value);
    let window_ms = Literal::u64_suffixed(args.window.map_or(1_000, |w| w.value));
    let strict = args.strict.is_some_and(|s| s.value);
    let warm_up_ms = Literal::u64_suffixed(args.warm_up.map_or(0, |w| w.value));
    let cold_factor = Literal::f64_suffixed(args.cold_factor.map_or(3.0, |c| c.value));
    let max_wait = option(args.max_wait.map(|w| Literal::u64_suffixed(w.value)));
    let relate = option(args.relate.as_ref());
    Some(quote_spanned! {qps.span=>
        #private::DefaultRule::Flow(#private::FlowSpec {
            threshold: #v,
            window_ms: #window_ms,
            strict: #strict,
            warm_up_ms: #warm_up_ms,
            cold_factor: #cold_factor,
            max_wait_ms: #max_wait,
            relate: #relate,
        })
    })
}

/// One `breaker(...)`: its strategy and statistics.
fn breaker(b: &Breaker, private: &TokenStream) -> TokenStream {
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
    quote_spanned! {b.span=>
        #private::DefaultRule::Breaker(#private::BreakerSpec {
            kind: #kind,
            min_requests: #min_requests,
            window_ms: #window_ms,
            recovery_ms: #recovery_ms,
            probes: #probes,
        })
    }
}

/// One `hotspot(...)`: its limit per value of the parameter at its index among the entry's.
fn hotspot(h: &Hotspot, cx: &Cx<'_>) -> TokenStream {
    let private = &cx.private;
    let index = cx
        .params
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
    let max_wait = option(h.max_wait.map(|w| Literal::u64_suffixed(w.value)));
    let capacity = Literal::usize_suffixed(h.capacity.map_or(0, |c| c.value as usize));
    let strict = h.strict;
    quote_spanned! {h.span=>
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
    }
}
