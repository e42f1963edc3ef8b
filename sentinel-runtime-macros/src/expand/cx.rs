//! What every part of the expansion reads ([`Cx`]): the arguments, the function's signature and
//! body, the [`Shape`] of its return, and our own hygienic [`Names`].

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::ReturnType;

use crate::args::Args;
use crate::valid::{self, Passed};

/// Our own names in the generated code, hygienic (mixed-site): the user's body cannot see or
/// shadow them.
pub(super) struct Names {
    /// The `static` node.
    pub(super) node: syn::Ident,
    /// The reference to it the call enters through.
    pub(super) node_ref: syn::Ident,
    /// The entry guard.
    pub(super) entry: syn::Ident,
    /// The `BlockError` of a blocked call.
    pub(super) blocked: syn::Ident,
    /// The body's value.
    pub(super) result: syn::Ident,
    /// The slot of an `impl Trait` return.
    pub(super) slot: syn::Ident,
}

impl Names {
    /// Every name, at the mixed site.
    pub(super) fn new() -> Names {
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
pub(super) struct Shape<'a> {
    pub(super) is_async: bool,
    /// The declared return type, where it can be written in the body (not `impl Trait`).
    pub(super) declared: Option<&'a syn::Type>,
    /// The return type mentions `impl Trait`.
    pub(super) opaque: bool,
    /// The function returns `!`.
    pub(super) never: bool,
    /// The function returns `()`.
    pub(super) unit: bool,
    /// Where an error about the return type points: the type, or the name for `()`.
    pub(super) output_span: Span,
}

impl<'a> Shape<'a> {
    /// The shape of `sig`'s return.
    pub(super) fn of(sig: &'a syn::Signature) -> Shape<'a> {
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
pub(super) struct Cx<'a> {
    pub(super) args: &'a Args,
    /// The signature, its patterns hidden (see `body::hide_patterns`).
    pub(super) sig: &'a syn::Signature,
    /// The user's body.
    pub(super) block: &'a syn::Block,
    pub(super) shape: Shape<'a>,
    pub(super) names: Names,
    /// `crate::__private`, by the `crate = ...` path if given.
    pub(super) private: TokenStream,
    /// What the fallback gets, in order.
    pub(super) passed: &'a [Passed],
    /// The hotspot parameters, in index order.
    pub(super) params: &'a [syn::Ident],
}
