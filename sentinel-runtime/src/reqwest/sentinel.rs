//! [`SentinelMiddleware`]: each request enters its resource before it is sent.

use std::fmt;
use std::sync::Arc;

use ::reqwest::{Method, Request, Response, Url};
use ::reqwest_middleware::{Error, Middleware, Next, Result};
use http::request::Parts;
use http::Extensions;

use std::borrow::Cow;

use crate::outbound::{default_node, is_error_status, InFlight, Key, Target};
use crate::param::{CallNames, Params};
use crate::registry::node_by_name;
use crate::ResourceNode;

type NameFn = dyn Fn(&Parts) -> String + Send + Sync;

/// A [`reqwest_middleware`] [`Middleware`] that guards each request a reqwest client sends with
/// a flow-control resource: the resource's circuit breakers, flow, concurrency and adaptive
/// limits decide whether the request is sent at all.
///
/// ```
/// use sentinel_runtime::reqwest::{block_error, middleware::ClientBuilder, reqwest, SentinelMiddleware};
/// use sentinel_runtime::rules::{self, CircuitBreakerRule};
/// use std::time::Duration;
///
/// // A breaker that opens after 5 failed calls to the inventory service within 10 s (the
/// // window; its default is 1 s), and stays open 10 s.
/// rules::load_circuit_breaker_rules(vec![
///     CircuitBreakerRule::error_count("GET:http://inventory:8080", 5)
///         .window(Duration::from_secs(10), 10)
///         .recovery(Duration::from_secs(10)),
/// ])?;
/// let client = ClientBuilder::new(reqwest::Client::new())
///     .with(SentinelMiddleware::new())
///     .build();
/// async fn stock(client: &sentinel_runtime::reqwest::middleware::ClientWithMiddleware) {
///     let call = client.get("http://inventory:8080/items/7").send();
///     // The caller's own bound: a call it gives up on counts as a failed call.
///     match tokio::time::timeout(Duration::from_millis(300), call).await {
///         Ok(Ok(response)) => { /* the downstream's answer */ }
///         // A refused call was never sent.
///         Ok(Err(e)) if block_error(&e).is_some() => { /* a fallback */ }
///         Ok(Err(e)) => { /* a transport error */ }
///         Err(_) => { /* too slow */ }
///     }
/// }
/// # rules::load_circuit_breaker_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
///
/// # Resource names
///
/// As the tower client layer's ([`SentinelClientLayer`](crate::tower::SentinelClientLayer)
/// with feature `tower`): `"{METHOD}:{scheme}://{host}[:{port}]"`, the port left out when it is
/// the scheme's default, never with user information (`GET:http://inventory:8080`), found in a
/// small per-thread cache without building the string. [`name`](Self::name) replaces it.
///
/// # Endpoints
///
/// For outlier rules ([`OutlierRule`](crate::rules::OutlierRule)), a request's endpoint is its
/// URL's host and port, as the URL has them: `inv-a.test:8080`, `10.0.0.7:8080`,
/// `[::1]:9000`; the port is absent when it is the scheme's default, which reqwest's URLs drop
/// (`http://inv-a.test:80/x` and `http://inv-a.test/x` are both `inv-a.test`). User information
/// (`user:secret@`) is left out. Ask [`outlier::healthy`](crate::outlier::healthy) with names of
/// that form. Name several hosts one resource (with [`name`](Self::name)) for an outlier rule
/// to choose among them.
///
/// # Blocks
///
/// A refused request is never sent: its error is
/// [`reqwest_middleware::Error::Middleware`] holding the [`BlockError`](crate::BlockError);
/// [`block_error`](super::block_error) finds it.
///
/// # Errors and exits
///
/// Every request is an outbound entry: system rules, which protect what a process serves,
/// never refuse it. The call counts as an error (for the statistics, the circuit breakers, the
/// outlier rules and the adaptive limit) when the rest of the chain fails (a transport error,
/// reqwest's timeout, another middleware's error), when the response is a 5xx, and, by
/// default, when the caller gives up on it before the response's head comes (its future is
/// dropped: `tokio::time::timeout` around `send()`); see
/// [`abandoned_is_error`](Self::abandoned_is_error). (Inbound, the tower server layer keeps
/// the other meaning: a request its client drops decides nothing.)
///
/// The entry ends **when the response's head arrives**, not when its body has been read: a
/// reqwest `Response` carries its URL and connection details beside a body that cannot be
/// wrapped without losing them. A streamed body is not held: response times and concurrency
/// limits cover the time to the response's head, a body that fails half-way is not counted as
/// an error, and a body dropped unread decides nothing. (The tower client layer holds its
/// entry until the body ends.)
#[derive(Clone)]
pub struct SentinelMiddleware {
    name: Option<Arc<NameFn>>,
    abandoned_is_error: bool,
}

impl Default for SentinelMiddleware {
    fn default() -> SentinelMiddleware {
        SentinelMiddleware {
            name: None,
            abandoned_is_error: true,
        }
    }
}

impl fmt::Debug for SentinelMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelMiddleware")
            .field("custom_name", &self.name.is_some())
            .field("abandoned_is_error", &self.abandoned_is_error)
            .finish()
    }
}

impl SentinelMiddleware {
    /// A middleware naming each request `"{METHOD}:{scheme}://{host}[:{port}]"`, counting a
    /// request its caller gives up on before its response as an error.
    pub fn new() -> SentinelMiddleware {
        SentinelMiddleware::default()
    }

    /// Whether a request whose future is dropped before the response's head (or the chain's
    /// error) comes counts as an error. Default `true`: the usual way a caller bounds a
    /// request is its own timeout (`tokio::time::timeout` around `send()`), which drops the
    /// future; a dependency that never answers must then trip its breaker and be ejected by
    /// the outlier rules, as one that answers with errors does (reqwest's own timeout is an
    /// error either way). Set `false` where callers drop requests for reasons of their own
    /// (hedged requests, a `select!` that races two requests, users cancelling): such a
    /// request then decides nothing, as an inbound request its client drops (the server
    /// layer's meaning). A request dropped while it waits for its throttling turn was never
    /// sent, and decides nothing either way.
    ///
    /// ```
    /// use sentinel_runtime::reqwest::SentinelMiddleware;
    /// let hedging = SentinelMiddleware::new().abandoned_is_error(false);
    /// ```
    pub fn abandoned_is_error(mut self, yes: bool) -> Self {
        self.abandoned_is_error = yes;
        self
    }

    /// Names the resource of each request: replaces the default name. The function reads
    /// the request's head as `http` parts: its method, URI, version, headers, and the
    /// middleware chain's extensions. One name for a dependency's several hosts puts them
    /// under one limit and one breaker.
    ///
    /// The function runs before anything is reserved for the request: if it panics, the
    /// panic reaches the caller and nothing is held. The name must come from a small set,
    /// never from raw input (resources are capped).
    ///
    /// ```
    /// use sentinel_runtime::reqwest::SentinelMiddleware;
    /// let middleware = SentinelMiddleware::new().name(|parts| {
    ///     match parts.uri.host() {
    ///         Some(h) if h.starts_with("inventory-") => format!("{}:inventory", parts.method),
    ///         _ => format!("{}:other", parts.method),
    ///     }
    /// });
    /// ```
    pub fn name(mut self, f: impl Fn(&Parts) -> String + Send + Sync + 'static) -> Self {
        self.name = Some(Arc::new(f));
        self
    }
}

/// The default name's pieces of a request to `url` with `method`.
pub(crate) fn target_of<'a>(method: &'a Method, url: &'a Url) -> Target<'a> {
    Target {
        method: method.as_str(),
        scheme: Some(url.scheme()),
        host: url.host_str(),
        port: url.port(),
    }
}

/// The node of `req` named by the user's function: the request's head and the chain's
/// `extensions` are lent to it as `http` parts (moved, not copied), then given back.
fn named(name: &NameFn, req: &mut Request, extensions: &mut Extensions) -> &'static ResourceNode {
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.method = req.method().clone();
    // An URL that is not a valid `http` URI (rare) leaves the URI empty.
    parts.uri = req.url().as_str().parse().unwrap_or_default();
    parts.version = req.version();
    parts.headers = std::mem::take(req.headers_mut());
    parts.extensions = std::mem::take(extensions);
    let resource = name(&parts);
    *req.headers_mut() = parts.headers;
    *extensions = parts.extensions;
    node_by_name(&resource)
}

/// Whether the rest of the chain's result counts as the call's error.
pub(crate) fn is_error(result: &Result<Response>) -> bool {
    match result {
        Ok(response) => is_error_status(response.status().as_u16()),
        Err(_) => true,
    }
}

#[async_trait::async_trait]
impl Middleware for SentinelMiddleware {
    async fn handle(
        &self,
        mut req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        // The name first: a user's function that panics finds nothing reserved.
        let node = match &self.name {
            None => {
                let (method, url) = (req.method(), req.url());
                let key = Key {
                    method,
                    scheme: url.scheme(),
                    authority: url.host_str().unwrap_or(""),
                    port: url.port(),
                };
                default_node(&key, || target_of(method, url))
            }
            Some(name) => named(name.as_ref(), &mut req, extensions),
        };
        // The endpoint (for outlier rules): the URL's authority (its user info is left out where
        // an outlier rule reads it).
        let names = CallNames {
            origin: None,
            endpoint: Some(Cow::Owned(req.url().authority().to_owned())),
        };
        // Cancellable: a request dropped before its answer abandons the call.
        let params = Params::NONE.with_names(&names);
        let reservation =
            crate::entry::reserve_with(node, 1, true, &params).map_err(Error::middleware)?;
        // Dropped while it waits, the request was never sent: no verdict.
        crate::entry::wait_turn(&reservation).await;
        let mut call = InFlight::new(reservation.into_entry(), self.abandoned_is_error);
        let result = next.run(req, extensions).await;
        if let Some(entry) = call.answered() {
            if is_error(&result) {
                entry.set_error();
            }
            entry.finish();
        }
        result
    }
}
