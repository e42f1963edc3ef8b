//! The grammar shared by every argument: `key = value`, `key(key = value, ...)` or a literal
//! without its key, parsed before any value is checked; and the one reader of a group's list
//! (`breaker(...)`, `hotspot(...)`).

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, Token};

use super::suggest::unknown;
use crate::errors::Errors;

/// `key = value`, or `key(key = value, ...)`, not yet checked; or a literal written without
/// its key (`#[sentinel("orders")]`).
pub(super) enum RawArg {
    Value { key: Ident, value: Expr },
    List { key: Ident, items: Vec<RawArg> },
    Bare(Lit),
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArg> {
        if input.peek(Lit) {
            return input.parse().map(RawArg::Bare);
        }
        // `crate` is a keyword: accept any identifier as the key, and check it later.
        let key = Ident::parse_any(input)?;
        if input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            let items = Punctuated::<RawArg, Token![,]>::parse_terminated(&content)?;
            return Ok(RawArg::List {
                key,
                items: items.into_iter().collect(),
            });
        }
        input.parse::<Token![=]>().map_err(|e| {
            // At the end of the arguments the parser's span is the whole attribute: use the key.
            let span = if input.is_empty() || input.peek(Token![,]) {
                key.span()
            } else {
                e.span()
            };
            syn::Error::new(
                span,
                format!("expected `=` after `{key}`: arguments are written `{key} = value`"),
            )
        })?;
        let value = ungroup(input.parse()?);
        Ok(RawArg::Value { key, value })
    }
}

/// `value` without the invisible groups a `macro_rules!` macro wraps its fragments in
/// (`$name:literal`, `$fallback:path`, `$qps:expr`), so a value passed through one reads as
/// written.
fn ungroup(value: Expr) -> Expr {
    match value {
        Expr::Group(g) => ungroup(*g.expr),
        Expr::Array(mut list) => {
            list.elems = list.elems.into_iter().map(ungroup).collect();
            Expr::Array(list)
        }
        other => other,
    }
}

/// The `key = value` items of one group's list, each key one the group knows, given once.
pub(super) struct Group(Vec<(Ident, Expr)>);

impl Group {
    /// Reads the list of the group `name` (`breaker`), whose keys are `known`, reporting and
    /// leaving out unknown and repeated keys, nested lists and values without a key (`example`
    /// shows one with its key).
    pub(super) fn read(
        name: &str,
        known: &[&str],
        example: &str,
        items: Vec<RawArg>,
        errors: &mut Errors,
    ) -> Group {
        let mut values: Vec<(Ident, Expr)> = Vec::new();
        for item in items {
            match item {
                RawArg::Value { key, value } => {
                    let arg = key.to_string();
                    if !known.contains(&arg.as_str()) {
                        errors.at(&key, unknown(&arg, known));
                    } else if values.iter().any(|(k, _)| *k == key) {
                        errors.at(&key, format!("duplicate argument `{arg}` in `{name}(...)`"));
                    } else {
                        values.push((key, value));
                    }
                }
                RawArg::List { key, .. } => errors.at(&key, format!("`{name}(...)` does not nest")),
                RawArg::Bare(lit) => errors.at(
                    lit,
                    format!("expected `key = value` inside `{name}(...)`, like `{example}`"),
                ),
            }
        }
        Group(values)
    }

    /// The item `key = value` of the list, if given.
    pub(super) fn get(&self, key: &str) -> Option<&(Ident, Expr)> {
        self.0.iter().find(|(k, _)| k == key)
    }
}
