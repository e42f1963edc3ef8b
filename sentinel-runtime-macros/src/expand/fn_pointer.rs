//! The fallback's expected signature as a function pointer type, `fn(Args.., BlockError) -> R`,
//! so that a fallback with the wrong signature is reported as "expected fn pointer `fn(..)`,
//! found fn item `fn(..)`" at the `fallback = path`, naming both signatures.
//!
//! Written only where the pointer type means exactly the function's signature; elsewhere the
//! generated code calls the fallback directly (and rustc reports the call's mismatches):
//! `async fn` (the fallback may be `async` or not), `impl Trait` anywhere in the signature (no
//! name to write), an `extern` ABI or variadics, a typed receiver holding a reference
//! (`self: Pin<&mut Self>`: its elision rules), and types written by a macro.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{FnArg, Lifetime, ReturnType, Signature, Type};

/// `[unsafe] [for<'s>] fn(Args.., BlockError) [-> R]`, where `BlockError` is `block_error`, or
/// `None` where no pointer type can be written.
pub(crate) fn expected(sig: &Signature, block_error: &TokenStream) -> Option<TokenStream> {
    if sig.asyncness.is_some() || sig.abi.is_some() || sig.variadic.is_some() {
        return None;
    }
    let mut unwritable = Unwritable(false);
    unwritable.visit_signature(sig);
    if unwritable.0 {
        return None;
    }
    // A `&self` receiver lends its lifetime to every elided lifetime of the output (the method
    // elision rule, which function pointer types do not have): that lifetime, named.
    let mut receiver: Option<(Option<Lifetime>, Option<syn::token::Mut>)> = None;
    let mut inputs = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => match (&r.reference, r.colon_token, &*r.ty) {
                (Some((_, lifetime)), None, _) => receiver = Some((lifetime.clone(), r.mutability)),
                (None, None, _) => inputs.push(quote!(Self)),
                (_, Some(_), Type::Reference(reference)) if is_self(&reference.elem) => {
                    receiver = Some((reference.lifetime.clone(), reference.mutability))
                }
                (_, Some(_), ty) if !has_lifetimes(ty) => inputs.push(ty.to_token_stream()),
                (_, Some(_), _) => return None,
            },
            FnArg::Typed(pt) => inputs.push(pt.ty.to_token_stream()),
        }
    }
    let mut bound = None;
    let mut output = sig.output.clone();
    if let Some((lifetime, mutability)) = receiver {
        let named = lifetime.is_some();
        let lifetime =
            lifetime.unwrap_or_else(|| Lifetime::new("'__sentinel_self", Span::call_site()));
        let mut fill = FillElided {
            lifetime: &lifetime,
            filled: false,
        };
        if let ReturnType::Type(_, ty) = &mut output {
            fill.visit_type_mut(ty);
        }
        // An elided output lifetime that is hidden (`Iter<u8>` for `Iter<'_, u8>`) cannot be
        // named, and a pointer type gives it the receiver's lifetime only if that is the one
        // input lifetime. Where either is uncertain, no pointer type.
        let params: Vec<&syn::Ident> = sig.generics.type_params().map(|p| &p.ident).collect();
        let others_borrow = sig.inputs.iter().any(|input| match input {
            FnArg::Typed(pt) => !plain(&pt.ty, &params, false),
            FnArg::Receiver(_) => false,
        });
        let output_hides = match &output {
            ReturnType::Type(_, ty) => !plain(ty, &params, true),
            ReturnType::Default => false,
        };
        if others_borrow && output_hides {
            return None;
        }
        // With nothing to name, `&Self` keeps elision reading as it does for the function.
        let receiver = if named || fill.filled {
            quote!(&#lifetime #mutability Self)
        } else {
            quote!(&#mutability Self)
        };
        if fill.filled && !named {
            bound = Some(quote!(for<#lifetime>));
        }
        inputs.insert(0, receiver);
    }
    let unsafety = &sig.unsafety;
    Some(quote!(#bound #unsafety fn(#(#inputs,)* #block_error) #output))
}

/// Types known to hold no lifetime parameter, by their last path segment.
const NO_LIFETIMES: &[&str] = &[
    "bool",
    "char",
    "str",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "String",
    "Self",
    "Option",
    "Result",
    "Vec",
    "Box",
    "Rc",
    "Arc",
    "Duration",
    "BlockError",
];

/// Whether `ty` visibly holds no elided lifetime: built from types known to have no lifetime
/// parameter (and the function's type parameters), and with `named`, references and lifetime
/// arguments that name their lifetime; without it, no lifetime at all.
fn plain(ty: &Type, params: &[&syn::Ident], named: bool) -> bool {
    let each = |ty: &Type| plain(ty, params, named);
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            let known = NO_LIFETIMES.iter().any(|k| last.ident == k)
                || (p.path.segments.len() == 1 && params.contains(&&last.ident));
            let leading_plain = p
                .path
                .segments
                .iter()
                .rev()
                .skip(1)
                .all(|s| s.arguments.is_none());
            known
                && leading_plain
                && match &last.arguments {
                    syn::PathArguments::None => true,
                    syn::PathArguments::AngleBracketed(args) => {
                        args.args.iter().all(|arg| match arg {
                            syn::GenericArgument::Type(t) => each(t),
                            syn::GenericArgument::AssocType(a) => each(&a.ty),
                            syn::GenericArgument::Const(_) => true,
                            syn::GenericArgument::Lifetime(l) => named && l.ident != "_",
                            _ => false,
                        })
                    }
                    syn::PathArguments::Parenthesized(_) => false,
                }
        }
        Type::Reference(r) => {
            named && r.lifetime.as_ref().is_some_and(|l| l.ident != "_") && each(&r.elem)
        }
        Type::Tuple(t) => t.elems.iter().all(each),
        Type::Array(a) => each(&a.elem),
        Type::Slice(s) => each(&s.elem),
        Type::Ptr(p) => each(&p.elem),
        Type::Paren(p) => each(&p.elem),
        Type::Group(g) => each(&g.elem),
        // Its elided lifetimes are its own.
        Type::BareFn(_) | Type::Never(_) => true,
        _ => false,
    }
}

/// Whether `ty` is `Self`.
fn is_self(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.qself.is_none() && p.path.is_ident("Self"),
        Type::Group(g) => is_self(&g.elem),
        Type::Paren(p) => is_self(&p.elem),
        _ => false,
    }
}

/// Whether `ty` mentions a reference or a lifetime.
fn has_lifetimes(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Punct(p) => p.as_char() == '&' || p.as_char() == '\'',
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// Finds what a pointer type cannot say: `impl Trait`, types written by a macro.
struct Unwritable(bool);

impl Visit<'_> for Unwritable {
    fn visit_type(&mut self, ty: &Type) {
        match ty {
            Type::ImplTrait(_) | Type::Macro(_) | Type::Verbatim(_) => self.0 = true,
            _ => syn::visit::visit_type(self, ty),
        }
    }

    fn visit_block(&mut self, _: &syn::Block) {
        // The body is not part of the signature.
    }
}

/// Names the elided lifetimes of a method's output (`&T`, `'_`) with the receiver's lifetime,
/// leaving those that belong to a nested function type (`fn(&str) -> &str`, `Fn(&str)`).
struct FillElided<'a> {
    lifetime: &'a Lifetime,
    filled: bool,
}

impl VisitMut for FillElided<'_> {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        if r.lifetime.is_none() {
            r.lifetime = Some(self.lifetime.clone());
            self.filled = true;
        }
        syn::visit_mut::visit_type_reference_mut(self, r);
    }

    fn visit_lifetime_mut(&mut self, l: &mut Lifetime) {
        if l.ident == "_" {
            *l = self.lifetime.clone();
            self.filled = true;
        }
    }

    fn visit_type_bare_fn_mut(&mut self, _: &mut syn::TypeBareFn) {}

    fn visit_parenthesized_generic_arguments_mut(
        &mut self,
        _: &mut syn::ParenthesizedGenericArguments,
    ) {
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The expected pointer type of the fallback of `item`'s signature, as text.
    fn pointer(item: &str) -> Option<String> {
        let func: syn::ItemFn = syn::parse_str(item).ok()?;
        let ty = super::expected(&func.sig, &quote!(BlockError))?;
        let ty: syn::Type = syn::parse2(ty).ok()?;
        Some(quote!(#ty).to_string())
    }

    fn written(ty: &str) -> Option<String> {
        let ty: syn::Type = syn::parse_str(ty).ok()?;
        Some(quote!(#ty).to_string())
    }

    #[test]
    fn free_functions_keep_their_types_and_elision() {
        let cases = [
            (
                "fn f(id: u64, qty: u32) -> u32 {}",
                "fn(u64, u32, BlockError) -> u32",
            ),
            (
                "fn f(name: &str) -> &str {}",
                "fn(&str, BlockError) -> &str",
            ),
            ("fn f() {}", "fn(BlockError)"),
            (
                "fn f<'a, T: Clone>(xs: &'a [T]) -> Option<&'a T> {}",
                "fn(&'a [T], BlockError) -> Option<&'a T>",
            ),
            (
                "unsafe fn f(p: *const u8) -> u8 {}",
                "unsafe fn(*const u8, BlockError) -> u8",
            ),
            ("fn f(x: u8) -> ! {}", "fn(u8, BlockError) -> !"),
        ];
        for (item, expected) in cases {
            assert_eq!(pointer(item), written(expected), "{item}");
        }
    }

    #[test]
    fn receivers_become_parameters_and_lend_their_lifetime() {
        let cases = [
            (
                "fn f(&self, n: u8) -> u8 {}",
                "fn(&Self, u8, BlockError) -> u8",
            ),
            (
                "fn f(&mut self) -> &str {}",
                "for<'__sentinel_self> fn(&'__sentinel_self mut Self, BlockError) \
                 -> &'__sentinel_self str",
            ),
            (
                "fn f(&self, k: &str) -> &str {}",
                "for<'__sentinel_self> fn(&'__sentinel_self Self, &str, BlockError) \
                 -> &'__sentinel_self str",
            ),
            (
                "fn f<'a>(&'a mut self, k: &str) -> Option<&mut u8> {}",
                "fn(&'a mut Self, &str, BlockError) -> Option<&'a mut u8>",
            ),
            (
                "fn f(&self, k: &str) -> fn(&str) -> &str {}",
                "fn(&Self, &str, BlockError) -> fn(&str) -> &str",
            ),
            ("fn f(self) -> Self {}", "fn(Self, BlockError) -> Self"),
            ("fn f(mut self, n: u8) {}", "fn(Self, u8, BlockError)"),
            (
                "fn f(self: Arc<Self>) -> u8 {}",
                "fn(Arc<Self>, BlockError) -> u8",
            ),
            (
                "fn f(self: &Self, k: &str) -> String {}",
                "fn(&Self, &str, BlockError) -> String",
            ),
        ];
        for (item, expected) in cases {
            assert_eq!(pointer(item), written(expected), "{item}");
        }
    }

    #[test]
    fn no_pointer_type_where_it_would_not_mean_the_signature() {
        for item in [
            "async fn f(n: u8) -> u8 {}",
            "fn f(x: impl AsRef<str>) -> u8 {}",
            "fn f(x: u8) -> impl Display {}",
            "extern \"C\" fn f(x: u8) -> u8 {}",
            "fn f(self: Pin<&mut Self>) -> u8 {}",
            "fn f(x: my_type!()) -> u8 {}",
            // A hidden output lifetime beside a second borrowed input.
            "fn f(&mut self, k: &str) -> IterMut<u8> {}",
            "fn f(&self, k: Request) -> Response {}",
        ] {
            assert_eq!(pointer(item), None, "{item}");
        }
        // With only the receiver borrowed, a hidden lifetime is the receiver's, as in the method.
        assert_eq!(
            pointer("fn f(&mut self, n: u8) -> IterMut<u8> {}"),
            written("fn(&mut Self, u8, BlockError) -> IterMut<u8>")
        );
    }
}
