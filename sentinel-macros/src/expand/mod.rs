//! Code generation: a `static` node, an entry guard around the body, the fallback on a block.
//!
//! `guard` puts the parts together: `node` (the static node and its default rules), `entry`
//! (the admission, with the hotspot parameters), `body` (the user's body under the entry,
//! sync or async), `fallback` (what a blocked call returns, with `fn_pointer`, the fallback's
//! expected signature); `spans` names and places the tokens rustc reports.

mod body;
mod entry;
mod fallback;
mod fn_pointer;
mod node;
mod spans;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{parse_quote, ItemFn, ReturnType};

use crate::args::Args;
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

/// Anything but a function with a body: the item unchanged, with an error at its first token.
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

/// Our own names in the generated code, hygienic (mixed-site): the user's body cannot see or
/// shadow them.
struct Names {
    /// The `static` node.
    node: syn::Ident,
    /// The reference to it the call enters through.
    node_ref: syn::Ident,
    /// The entry guard.
    entry: syn::Ident,
    /// The `BlockError` of a blocked call.
    blocked: syn::Ident,
    /// The body's value.
    result: syn::Ident,
    /// The slot of an `impl Trait` return.
    slot: syn::Ident,
}

impl Names {
    /// Every name, at the mixed site.
    fn new() -> Names {
        let name = |name: &str| syn::Ident::new(name, Span::mixed_site());
        Names {
            node: name("__SENTINEL_NODE"),
            node_ref: name("__sentinel_node"),
            entry: name("__sentinel_entry"),
            blocked: name("__sentinel_blocked"),
            result: name("__sentinel_result"),
            slot: name("__sentinel_slot"),
        }
    }
}

/// What the generated code must know of the function's return.
struct Shape<'a> {
    is_async: bool,
    /// The declared return type, where it can be written in the body (not `impl Trait`).
    declared: Option<&'a syn::Type>,
    /// The return type mentions `impl Trait`.
    opaque: bool,
    /// The function returns `!`.
    never: bool,
    /// The function returns `()`.
    unit: bool,
    /// Where an error about the return type points: the type, or the name for `()`.
    output_span: Span,
}

impl<'a> Shape<'a> {
    /// The shape of `sig`'s return.
    fn of(sig: &'a syn::Signature) -> Shape<'a> {
        let (declared, opaque) = match &sig.output {
            ReturnType::Type(_, ty) if mentions_impl(ty) => (None, true),
            ReturnType::Type(_, ty) => (Some(&**ty), false),
            ReturnType::Default => (None, false),
        };
        Shape {
            is_async: sig.asyncness.is_some(),
            declared,
            opaque,
            never: matches!(declared, Some(syn::Type::Never(_))),
            unit: valid::returns_unit(sig),
            output_span: match &sig.output {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => sig.ident.span(),
            },
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

/// What every part of the expansion reads.
struct Cx<'a> {
    args: &'a Args,
    /// The signature, its patterns hidden (see `body::hide_patterns`).
    sig: &'a syn::Signature,
    /// The user's body.
    block: &'a syn::Block,
    shape: Shape<'a>,
    names: Names,
    /// `crate::__private`, by the `crate = ...` path if given.
    private: TokenStream,
    /// What the fallback gets, in order.
    passed: &'a [Passed],
    /// The hotspot parameters, in index order.
    params: &'a [syn::Ident],
}

/// The guarded function: its signature (argument patterns hidden), and a body that enters the
/// static node, runs the user's body if admitted, and returns the fallback's value if blocked.
fn guard(args: Args, func: ItemFn, passed: &[Passed], params: &[syn::Ident]) -> TokenStream {
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
