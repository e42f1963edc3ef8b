//! A layer's configuration, shared by its services: how requests are named, their parameters
//! and origin, what counts as an error, what a rejection looks like.

use std::sync::Arc;

use http::header::HeaderMap;
use http::request::Parts;
use http::{Response, StatusCode};

use axum::extract::MatchedPath;

use super::params;
use super::view::View;
use crate::BlockError;

pub(super) type ResourceFn = dyn Fn(&Parts) -> String + Send + Sync;
pub(super) type ParamFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;
pub(super) type IsErrorFn = dyn Fn(StatusCode, &HeaderMap) -> bool + Send + Sync;
pub(super) type OnBlockFn = dyn Fn(&BlockError, &Parts) -> Response<String> + Send + Sync;

/// Where one hotspot parameter of a request comes from.
#[derive(Clone)]
pub(super) enum ParamSource {
    Fn(Arc<ParamFn>),
    ClientIp { trusted_proxies: usize },
}

/// A layer's configuration, shared by its services.
#[derive(Clone, Default)]
pub(super) struct Config {
    pub(super) resource: Option<Arc<ResourceFn>>,
    pub(super) params: Vec<ParamSource>,
    /// The parameters' names, by index (`None`: unnamed).
    pub(super) param_names: Vec<Option<Arc<str>>>,
    /// Whether any parameter has a name (then entries teach the resource its names).
    pub(super) names_params: bool,
    pub(super) origin: Option<Arc<ParamFn>>,
    pub(super) is_error: Option<Arc<IsErrorFn>>,
    pub(super) on_block: Option<Arc<OnBlockFn>>,
    /// The prefix IPv6 clients are bucketed by (`None`: the default /64).
    pub(super) ipv6_prefix: Option<u8>,
    /// Routes (or, unmatched, paths) whose requests system rules neither check nor count.
    pub(super) system_exempt: Vec<Box<str>>,
    /// Send the RateLimit header fields ([`SentinelLayer::rate_limit_headers`](super::SentinelLayer::rate_limit_headers)).
    pub(super) rate_limit_headers: bool,
    /// Refuse with RFC 9457 problems ([`SentinelLayer::problem_details`](super::SentinelLayer::problem_details)).
    pub(super) problem_details: bool,
}

impl Config {
    /// Whether system rules leave the request alone ([`SentinelLayer::exempt_from_system`]).
    #[cold]
    pub(super) fn system_exempt(&self, view: View<'_>) -> bool {
        let path = match view.extensions.get::<MatchedPath>() {
            Some(route) => route.as_str(),
            None => view.uri.path(),
        };
        self.system_exempt.iter().any(|r| **r == *path)
    }

    /// The prefix IPv6 clients are bucketed by.
    pub(super) fn ipv6_prefix(&self) -> u8 {
        self.ipv6_prefix.unwrap_or(params::DEFAULT_IPV6_PREFIX)
    }

    /// Whether requests are named by default and have no parameters, no origin, no exemption
    /// from system rules and no RateLimit fields (the layer as `SentinelLayer::new()` makes it).
    pub(super) fn is_plain(&self) -> bool {
        !self.rate_limit_headers
            && self.resource.is_none()
            && self.params.is_empty()
            && self.origin.is_none()
            && self.system_exempt.is_empty()
    }

    /// Whether a user's function reads the request's parts.
    pub(super) fn needs_parts(&self) -> bool {
        self.resource.is_some()
            || self.origin.is_some()
            || self.params.iter().any(|p| matches!(p, ParamSource::Fn(_)))
    }
}
