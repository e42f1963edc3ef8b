//! The attribute's entry: parse the arguments, validate them against the function, expand.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::ItemFn;

use super::guard::guard;
use crate::args::Args;
use crate::errors::Errors;
use crate::valid;

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
