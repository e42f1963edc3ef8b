//! [`Args`]: the whole argument list read and checked, each group through its module.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, LitStr, Path, Token};

use super::breaker::{self, Breaker};
use super::hotspot::{self, Hotspot};
use super::known::KNOWN;
use super::list::RawArg;
use super::suggest::unknown;
use super::values::{boolean, duration_arg, is_string, path, spanned, string};
use super::with_span::WithSpan;
use super::{flow, params};
use crate::errors::Errors;
use crate::limits;

/// The checked arguments.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) resource: Option<LitStr>,
    pub(crate) qps: Option<WithSpan<f64>>,
    pub(crate) concurrency: Option<WithSpan<u32>>,
    /// `concurrency = "adaptive"`: the span of the value.
    pub(crate) adaptive_concurrency: Option<Span>,
    /// `inbound = true`.
    pub(crate) inbound: Option<WithSpan<bool>>,
    pub(crate) fallback: Option<Path>,
    /// `fallback = ...` was written, even if its value was refused.
    pub(crate) fallback_given: bool,
    pub(crate) krate: Option<Path>,
    pub(crate) breakers: Vec<Breaker>,
    pub(crate) is_error: Option<Path>,
    /// `window = ".."` in milliseconds, with the key's span.
    pub(crate) window: Option<WithSpan<u64>>,
    pub(crate) strict: Option<WithSpan<bool>>,
    pub(crate) warm_up: Option<WithSpan<u64>>,
    pub(crate) cold_factor: Option<WithSpan<f64>>,
    pub(crate) max_wait: Option<WithSpan<u64>>,
    pub(crate) relate: Option<LitStr>,
    /// `shadow = true`: the attribute's rules are shadow rules (counted, never enforced).
    pub(crate) shadow: Option<WithSpan<bool>>,
    /// Every `hotspot(...)` that parsed.
    pub(crate) hotspots: Vec<Hotspot>,
    /// The arguments named by `params = [...]` and `hotspot(param = ...)`, in the order written
    /// (repeats included): the first mention of each gives its index.
    pub(crate) param_mentions: Vec<Ident>,
    /// Every duration parsed, the `qps` rule's and the breakers' (even those of a refused
    /// `breaker(...)`), by argument name: `valid` checks each against its run-time limit.
    pub(crate) durations: Vec<(&'static str, WithSpan<u64>)>,
}

impl Args {
    /// Parses and checks `key = value, ...`, recording every problem in `errors`.
    pub(crate) fn parse(input: ParseStream<'_>, errors: &mut Errors) -> syn::Result<Args> {
        let raw = Punctuated::<RawArg, Token![,]>::parse_terminated(input)?;
        let mut args = Args::default();
        let mut seen: Vec<String> = Vec::new();
        for arg in raw {
            match arg {
                RawArg::Bare(lit) => bare(&lit, errors),
                RawArg::List { key, items } => args.group(&key, items, errors),
                RawArg::Value { key, .. } if key.unraw() == "breaker" => errors.at(
                    &key,
                    "`breaker` takes a list: `breaker(error_ratio = 0.5, recovery = \"5s\")`",
                ),
                RawArg::Value { key, .. } if key.unraw() == "hotspot" => errors.at(
                    &key,
                    "`hotspot` takes a list: `hotspot(param = user_id, qps = 10)`",
                ),
                RawArg::Value { key, value } => {
                    let name = key.unraw().to_string();
                    if seen.contains(&name) && KNOWN.contains(&name.as_str()) {
                        errors.at(&key, format!("duplicate argument `{name}`: give it once"));
                        continue;
                    }
                    seen.push(name.clone());
                    args.value(&key, &name, &value, errors);
                }
            }
        }
        args.count(errors);
        Ok(args)
    }

    /// `key(...)`: a `breaker` or a `hotspot`; any other key takes no list.
    fn group(&mut self, key: &Ident, items: Vec<RawArg>, errors: &mut Errors) {
        let name = key.unraw().to_string();
        match name.as_str() {
            "breaker" => {
                if let Some(b) = breaker::breaker(key, items, &mut self.durations, errors) {
                    self.breakers.push(b);
                }
            }
            "hotspot" => {
                if let Some(h) = hotspot::hotspot(key, items, &mut self.param_mentions, errors) {
                    self.hotspots.push(h);
                }
            }
            _ if KNOWN.contains(&name.as_str()) => errors.at(
                key,
                format!("`{name}` is written `{name} = value`, not `{name}(...)`"),
            ),
            _ => errors.at(key, unknown(&name, KNOWN)),
        }
    }

    /// `key = value`, the argument `name`, given for the first time.
    fn value(&mut self, key: &Ident, name: &str, value: &Expr, errors: &mut Errors) {
        match name {
            "resource" => {
                self.resource = string(value, "resource", "resource = \"orders\"", errors)
            }
            "qps" => self.qps = flow::qps(value, errors),
            "concurrency" if is_string(value) => {
                self.adaptive_concurrency = flow::adaptive(value, errors)
            }
            "concurrency" => self.concurrency = flow::concurrency(value, errors),
            "inbound" => self.inbound = spanned(key, value, boolean(value, "inbound", errors)),
            "fallback" => {
                self.fallback_given = true;
                self.fallback = path(value, "fallback", "fallback = busy", errors);
            }
            "crate" => self.krate = path(value, "crate", "crate = ::sentinel_runtime", errors),
            "is_error" => {
                self.is_error = path(value, "is_error", "is_error = counts_as_error", errors)
            }
            "window" => {
                self.window = duration_arg(key, value, "window", &mut self.durations, errors)
            }
            "warm_up" => {
                self.warm_up = duration_arg(key, value, "warm_up", &mut self.durations, errors)
            }
            "max_wait" => {
                self.max_wait = duration_arg(key, value, "max_wait", &mut self.durations, errors)
            }
            "strict" => self.strict = spanned(key, value, boolean(value, "strict", errors)),
            "cold_factor" => {
                self.cold_factor = spanned(key, value, flow::cold_factor(value, errors))
            }
            "relate" => self.relate = string(value, "relate", "relate = \"writes\"", errors),
            "shadow" => self.shadow = spanned(key, value, boolean(value, "shadow", errors)),
            "params" => params::param_list(value, &mut self.param_mentions, errors),
            _ => errors.at(key, unknown(name, KNOWN)),
        }
    }

    /// At most the run-time's number of `hotspot(...)` and 8 `breaker(...)`.
    fn count(&self, errors: &mut Errors) {
        if let Some(extra) = self.hotspots.get(limits::MAX_HOTSPOTS) {
            errors.push(syn::Error::new(
                extra.span,
                format!(
                    "at most {} `hotspot(...)` per function (the run-time limit)",
                    limits::MAX_HOTSPOTS
                ),
            ));
        }
        if let Some(extra) = self.breakers.get(8) {
            errors.push(syn::Error::new(
                extra.span,
                "at most 8 `breaker(...)` per function",
            ));
        }
    }
}

/// A literal written without its key: a string can only be the resource's name.
fn bare(lit: &Lit, errors: &mut Errors) {
    match lit {
        Lit::Str(s) => errors.at(
            s,
            format!(
                "expected `resource = {}`: arguments are written `key = value`",
                s.token()
            ),
        ),
        other => errors.at(
            other,
            "expected `key = value`: a value needs its argument's name, like `qps = 100`",
        ),
    }
}
