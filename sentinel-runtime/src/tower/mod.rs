//! A tower [`Layer`] for axum, tonic and hyper services (feature `tower`): every request
//! enters a resource, blocked requests get a 429, 503 or 403 response (gRPC: a trailers-only
//! response with `grpc-status`), and the entry is held until the response body ends.
//!
//! ```
//! use axum::{routing::get, Router};
//! use sentinel_runtime::rules::{self, FlowRule};
//! use sentinel_runtime::tower::SentinelLayer;
//!
//! rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 100.0)]).unwrap();
//! let app: Router = Router::new()
//!     .route("/users/{id}", get(|| async { "user" }))
//!     .layer(SentinelLayer::new().client_ip(1)); // one trusted proxy in front
//! // Serve it with the peer address available to `client_ip`:
//! // axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
//! # let _ = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
//! # rules::load_flow_rules(vec![]).unwrap();
//! ```
//!
//! `examples/axum_service.rs` runs a server like this against itself.
//!
//! # Resource names
//!
//! By default `"{METHOD}:{route}"`, the route being axum's [`MatchedPath`] (`GET:/users/{id}`,
//! not `GET:/users/42`); apply the layer with `Router::layer` (or `route_layer`) so that axum
//! has matched the route when the layer sees the request. A gRPC request (`content-type:
//! application/grpc...`) without a matched route is named `"POST:{path}"`, its method path
//! (`POST:/helloworld.Greeter/SayHello`). Anything else is `"{METHOD}:<unmatched>"`: the raw
//! URI never becomes a name, so a flood of requests to unknown paths is one resource.
//! [`SentinelLayer::resource`] replaces the naming. However names are made, how many
//! resources exist is capped ([`registry::set_max_resources`](crate::registry::set_max_resources)):
//! beyond the cap, new names pass unchecked.
//!
//! # Rejections
//!
//! | blocked by | HTTP | gRPC (`grpc-status`) |
//! |---|---|---|
//! | flow, concurrency, hotspot, custom slot | 429 + `Retry-After` | 8 `RESOURCE_EXHAUSTED` |
//! | circuit breaker, system | 503 + `Retry-After` | 14 `UNAVAILABLE` |
//! | authority | 403 | 7 `PERMISSION_DENIED` |
//!
//! `Retry-After` is in whole seconds, rounded up from [`BlockError::retry_after`], at least 1
//! (1 when the rule cannot tell). The rejection is the layer's own response, returned from the
//! service's future: no `Buffer` or `HandleError` layer is needed to keep the status.
//! [`SentinelLayer::on_block`] replaces it.
//!
//! # Exits and errors
//!
//! The entry is taken inside the response future with
//! [`enter_async`](crate::EntryBuilder::enter_async) (a throttled request awaits its turn without
//! blocking the executor) and released exactly once: when the response body ends (or is
//! dropped), when the inner service returns an error (counted as an error), or when the future
//! is dropped (a client that disconnects). Responses with a 5xx status, and gRPC responses
//! whose `grpc-status` (in the headers or the trailers) is 4 `DEADLINE_EXCEEDED`, 13 `INTERNAL`
//! or 14 `UNAVAILABLE`, count as errors (for the circuit breakers); [`SentinelLayer::is_error`]
//! replaces that.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::request::Parts;
use http::{Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
pub use tower_layer::Layer;
pub use tower_service::Service;

use crate::{BlockError, BlockKind, Entry, EntryBuilder};

#[cfg(test)]
mod tests;

#[doc(no_inline)]
pub use axum::extract::{ConnectInfo, MatchedPath};

type ResourceFn = dyn Fn(&Parts) -> String + Send + Sync;
type ParamFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;
type IsErrorFn = dyn Fn(StatusCode, &HeaderMap) -> bool + Send + Sync;
type OnBlockFn = dyn Fn(&BlockError, &Parts) -> Response<String> + Send + Sync;

/// Where one hotspot parameter of a request comes from.
#[derive(Clone)]
enum ParamSource {
    Fn(Arc<ParamFn>),
    ClientIp { trusted_proxies: usize },
}

#[derive(Clone, Default)]
struct Config {
    resource: Option<Arc<ResourceFn>>,
    params: Vec<ParamSource>,
    origin: Option<Arc<ParamFn>>,
    is_error: Option<Arc<IsErrorFn>>,
    on_block: Option<Arc<OnBlockFn>>,
}

/// A tower [`Layer`] guarding every request of the wrapped service with a flow-control
/// resource: see the [module documentation](self).
///
/// Clones share their configuration (an `Arc`) and the process's statistics and rules, by
/// resource name. Configuring a clone further changes that clone only.
#[derive(Clone, Default)]
pub struct SentinelLayer {
    config: Arc<Config>,
}

impl fmt::Debug for SentinelLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelLayer")
            .field("custom_resource", &self.config.resource.is_some())
            .field("params", &self.config.params.len())
            .field("origin", &self.config.origin.is_some())
            .field("custom_is_error", &self.config.is_error.is_some())
            .field("custom_on_block", &self.config.on_block.is_some())
            .finish()
    }
}

impl SentinelLayer {
    /// A layer with the default naming, classification and rejections, and no hotspot
    /// parameters.
    pub fn new() -> SentinelLayer {
        SentinelLayer::default()
    }

    fn config_mut(&mut self) -> &mut Config {
        // A clone configured further gets its own configuration (copy on write).
        Arc::make_mut(&mut self.config)
    }

    /// Names the resource of each request: replaces `"{METHOD}:{route}"`.
    ///
    /// The name must come from a small set (a route, a tenant, a gRPC method), never from raw
    /// user input: resources are capped, and names beyond the cap pass unchecked.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().resource(|parts| {
    ///     let api = if parts.uri.path().starts_with("/admin") { "admin" } else { "public" };
    ///     format!("{}:{api}", parts.method)
    /// });
    /// ```
    pub fn resource(mut self, f: impl Fn(&Parts) -> String + Send + Sync + 'static) -> Self {
        self.config_mut().resource = Some(Arc::new(f));
        self
    }

    /// Adds a hotspot parameter taken from the request (a header, a path segment, a tenant):
    /// parameters are indexed in the order [`param`](Self::param) and
    /// [`client_ip`](Self::client_ip) are called, the first is index 0
    /// ([`HotspotRule`](crate::rules::HotspotRule)). `None` (the value is missing) is one value
    /// of its own: every request without it shares one limit.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().param(|parts| {
    ///     parts.headers.get("x-api-key")?.to_str().ok().map(str::to_owned)
    /// });
    /// ```
    pub fn param(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        self.config_mut().params.push(ParamSource::Fn(Arc::new(f)));
        self
    }

    /// Adds the client's IP address as a hotspot parameter (see [`param`](Self::param) for the
    /// indexing).
    ///
    /// With `trusted_proxies == 0` it is the peer address: axum's
    /// [`ConnectInfo<SocketAddr>`](ConnectInfo) request extension (serve with
    /// `into_make_service_with_connect_info::<SocketAddr>()`) or a plain [`SocketAddr`]
    /// extension. With `N` trusted proxies in front of the service, it is the `N`th address
    /// from the **right** of `X-Forwarded-For` (all such headers, in order): the one the
    /// outermost trusted proxy saw. Entries left of it are whatever the client wrote and are
    /// never used. A header with fewer than `N` entries falls back to the peer address.
    pub fn client_ip(mut self, trusted_proxies: usize) -> Self {
        self.config_mut()
            .params
            .push(ParamSource::ClientIp { trusted_proxies });
        self
    }

    /// How to find a request's origin (the calling application, a tenant, an mTLS identity), for
    /// authority rules ([`AuthorityRule`](crate::rules::AuthorityRule)): e.g. a header. A
    /// request without one has no origin (denied by allow-lists).
    pub fn origin(mut self, f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        self.config_mut().origin = Some(Arc::new(f));
        self
    }

    /// Decides which responses count as errors (for the statistics and the circuit breakers):
    /// called with the status and headers of each response and, for a body ending with
    /// trailers (gRPC streams), with the status and the trailers. Replaces the default (5xx;
    /// `grpc-status` 4, 13 or 14).
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// // 429s from upstream count too
    /// let layer = SentinelLayer::new().is_error(|status, _| {
    ///     status.is_server_error() || status == http::StatusCode::TOO_MANY_REQUESTS
    /// });
    /// ```
    pub fn is_error(
        mut self,
        f: impl Fn(StatusCode, &HeaderMap) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config_mut().is_error = Some(Arc::new(f));
        self
    }

    /// Builds the response of a blocked request: replaces the default 429/503/403 (or gRPC
    /// trailers-only) responses. The `String` is the body.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().on_block(|err, _parts| {
    ///     http::Response::builder()
    ///         .status(503)
    ///         .body(format!("{{\"error\":\"busy\",\"resource\":\"{}\"}}", err.resource()))
    ///         .unwrap()
    /// });
    /// ```
    pub fn on_block(
        mut self,
        f: impl Fn(&BlockError, &Parts) -> Response<String> + Send + Sync + 'static,
    ) -> Self {
        self.config_mut().on_block = Some(Arc::new(f));
        self
    }
}

impl<S> Layer<S> for SentinelLayer {
    type Service = SentinelService<S>;

    fn layer(&self, inner: S) -> SentinelService<S> {
        SentinelService {
            inner,
            config: self.config.clone(),
        }
    }
}

/// The [`Service`] [`SentinelLayer`] wraps around an inner service. Clone when the inner
/// service is; `poll_ready` is the inner service's.
pub struct SentinelService<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S: Clone> Clone for SentinelService<S> {
    fn clone(&self) -> Self {
        SentinelService {
            inner: self.inner.clone(),
            config: self.config.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for SentinelService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The response future of [`SentinelService`].
pub struct ResponseFuture<B, E> {
    inner: BoxFuture<Result<Response<SentinelBody<B>>, E>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<B, E> Future for ResponseFuture<B, E> {
    type Output = Result<Response<SentinelBody<B>>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<B, E> fmt::Debug for ResponseFuture<B, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for SentinelService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: 'static,
    ReqBody: Send + 'static,
    ResBody: 'static,
{
    type Response = Response<SentinelBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // The service that was polled ready handles this request; a fresh clone stays behind.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = self.config.clone();
        let (parts, body) = req.into_parts();
        let grpc = is_grpc(&parts.headers);
        let name = match &config.resource {
            Some(f) => f(&parts),
            None => default_resource(&parts, grpc),
        };
        let mut builder = EntryBuilder::new(&name);
        for source in &config.params {
            let value = match source {
                ParamSource::Fn(f) => f(&parts),
                ParamSource::ClientIp { trusted_proxies } => {
                    client_ip(&parts, *trusted_proxies).map(|ip| ip.to_string())
                }
            };
            builder = builder.param(&value);
        }
        if let Some(origin) = config.origin.as_ref().and_then(|f| f(&parts)) {
            builder = builder.origin(&origin);
        }
        let enter = builder.enter_async();
        ResponseFuture {
            inner: Box::pin(async move {
                let entry = match enter.await {
                    Ok(entry) => entry,
                    Err(block) => {
                        let response = match &config.on_block {
                            Some(f) => f(&block, &parts),
                            None => rejection(&block, grpc),
                        };
                        return Ok(response.map(|text| SentinelBody::rejected(text)));
                    }
                };
                let req = Request::from_parts(parts, body);
                match inner.call(req).await {
                    Ok(response) => {
                        let status = response.status();
                        if classify(config.is_error.as_deref(), status, response.headers()) {
                            entry.set_error();
                        }
                        let guard = Guard {
                            entry,
                            status,
                            is_error: config.is_error.clone(),
                        };
                        Ok(response.map(|body| SentinelBody::inner(body, guard)))
                    }
                    Err(error) => {
                        entry.set_error();
                        drop(entry);
                        Err(error)
                    }
                }
            }),
        }
    }
}

/// The entry of a request whose response is being sent.
struct Guard {
    entry: Entry,
    status: StatusCode,
    is_error: Option<Arc<IsErrorFn>>,
}

pin_project_lite::pin_project! {
    /// The response body of [`SentinelService`]: the inner service's body, holding the
    /// request's entry until the body ends or is dropped; or the text of a rejection.
    pub struct SentinelBody<B> {
        #[pin]
        body: Option<B>,
        guard: Option<Guard>,
        text: Option<String>,
    }
}

impl<B> SentinelBody<B> {
    fn inner(body: B, guard: Guard) -> SentinelBody<B> {
        SentinelBody {
            body: Some(body),
            guard: Some(guard),
            text: None,
        }
    }

    fn rejected(text: String) -> SentinelBody<B> {
        SentinelBody {
            body: None,
            guard: None,
            text: Some(text).filter(|t| !t.is_empty()),
        }
    }
}

impl<B> fmt::Debug for SentinelBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelBody")
            .field("rejected", &self.body.is_none())
            .field("entry_held", &self.guard.is_some())
            .finish()
    }
}

impl<B> Body for SentinelBody<B>
where
    B: Body,
    B::Data: From<String>,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let Some(body) = this.body.as_pin_mut() else {
            return Poll::Ready(this.text.take().map(|t| Ok(Frame::data(t.into()))));
        };
        let mut body = body;
        let frame = std::task::ready!(body.as_mut().poll_frame(cx));
        match &frame {
            None => drop(this.guard.take()),
            Some(Err(_)) => {
                if let Some(guard) = this.guard.take() {
                    guard.entry.set_error();
                }
            }
            Some(Ok(frame)) => {
                if let (Some(trailers), Some(guard)) = (frame.trailers_ref(), this.guard.as_ref()) {
                    if classify(guard.is_error.as_deref(), guard.status, trailers) {
                        guard.entry.set_error();
                    }
                }
                if body.is_end_stream() {
                    // The last frame: exit now, before the transport flushes it.
                    drop(this.guard.take());
                }
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        match &self.body {
            Some(body) => body.is_end_stream(),
            None => self.text.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.body {
            Some(body) => body.size_hint(),
            None => SizeHint::with_exact(self.text.as_ref().map_or(0, |t| t.len() as u64)),
        }
    }
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

fn default_resource(parts: &Parts, grpc: bool) -> String {
    if let Some(route) = parts.extensions.get::<MatchedPath>() {
        format!("{}:{}", parts.method, route.as_str())
    } else if grpc {
        format!("POST:{}", parts.uri.path())
    } else {
        format!("{}:<unmatched>", parts.method)
    }
}

/// The client's address: see [`SentinelLayer::client_ip`].
fn client_ip(parts: &Parts, trusted_proxies: usize) -> Option<IpAddr> {
    if trusted_proxies > 0 {
        let entries: Vec<&str> = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        if let Some(i) = entries.len().checked_sub(trusted_proxies) {
            return parse_addr(entries[i]);
        }
    }
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .or_else(|| parts.extensions.get::<SocketAddr>().map(SocketAddr::ip))
}

/// An `X-Forwarded-For` entry: an IP address, possibly with a port.
fn parse_addr(s: &str) -> Option<IpAddr> {
    s.parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<SocketAddr>().ok().map(|a| a.ip()))
}

fn classify(custom: Option<&IsErrorFn>, status: StatusCode, headers: &HeaderMap) -> bool {
    if let Some(f) = custom {
        return f(status, headers);
    }
    if status.is_server_error() {
        return true;
    }
    matches!(
        headers.get("grpc-status").map(HeaderValue::as_bytes),
        Some(b"4" | b"13" | b"14")
    )
}

/// How a block is answered: HTTP status, gRPC status.
fn answer(kind: BlockKind) -> (StatusCode, u8) {
    match kind {
        BlockKind::Flow | BlockKind::Concurrency | BlockKind::HotParam | BlockKind::Custom => {
            (StatusCode::TOO_MANY_REQUESTS, 8)
        }
        BlockKind::Authority => (StatusCode::FORBIDDEN, 7),
        // Circuit breakers, and the kinds still to come (system rules): "overloaded, come back".
        _ => (StatusCode::SERVICE_UNAVAILABLE, 14),
    }
}

/// `Retry-After` in whole seconds: the rule's hint rounded up, at least 1 (1 without a hint).
fn retry_after_secs(block: &BlockError) -> u64 {
    block.retry_after().map_or(1, |d| {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        secs.max(1)
    })
}

/// The default response to a blocked request.
fn rejection(block: &BlockError, grpc: bool) -> Response<String> {
    let (status, grpc_status) = answer(block.kind());
    let message = block.to_string();
    let mut builder = Response::builder();
    if grpc {
        builder = builder
            .status(StatusCode::OK)
            .header(CONTENT_TYPE, "application/grpc")
            .header("grpc-status", grpc_status.to_string())
            .header("grpc-message", percent_encode(&message));
        return builder.body(String::new()).expect("valid gRPC rejection");
    }
    builder = builder
        .status(status)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8");
    if status != StatusCode::FORBIDDEN {
        builder = builder.header(RETRY_AFTER, retry_after_secs(block).to_string());
    }
    builder.body(message).expect("valid rejection")
}

/// gRPC's percent-encoding of `grpc-message`: printable ASCII except `%` stays.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
