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
//! application/grpc...`) without a matched route, or under a route ending in a wildcard (as
//! tonic's `Routes` in axum are, `/helloworld.Greeter/{*rest}`), is named by its method path
//! (`POST:/helloworld.Greeter/SayHello`) if the path is one: `/package.Service/Method` in
//! protobuf identifiers, at most 256 bytes. Anything else is `"{METHOD}:<unmatched>"`: the
//! raw URI never becomes a name, so a flood of requests to unknown paths is one resource.
//! Methods other than the nine standard ones are all named `OTHER` (`OTHER:/users/{id}`).
//! Without a router, every well-formed gRPC method path a client sends is a name: the cap on
//! resources below bounds them.
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
//! The entry is taken in `call` (a throttled request awaits its turn inside the response future,
//! without blocking the executor) and released exactly once: when the response body ends (or is
//! dropped), when the inner service returns an error (counted as an error), or when the future
//! is dropped (a client that disconnects). Responses with a 5xx status, and gRPC responses
//! whose `grpc-status` (in the headers or the trailers) is 4 `DEADLINE_EXCEEDED`, 13 `INTERNAL`
//! or 14 `UNAVAILABLE`, count as errors (for the circuit breakers); [`SentinelLayer::is_error`]
//! replaces that. A panic in the inner service or its body counts as an error too, also when a
//! panic-catching layer outside this one catches it.
//!
//! A call's outcome is known at the response's head, or, for a gRPC response whose
//! `grpc-status` comes in the trailers (a stream), at the trailers. A request dropped before
//! that (the client went away) is counted as complete but decides nothing for the circuit
//! breakers: a half-open breaker's probe is given back for another request, not counted as a
//! success. A response body dropped after its head still counts by its status.

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

use crate::param::Params;
use crate::rules::node_by_name;
use crate::{BlockError, BlockKind, Entry};

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
    /// ([`HotspotRule`](crate::rules::HotspotRule)). A value hashes as its text does, so
    /// `HotspotRule::exception("vip", 100.0)` (or `EntryBuilder::param("vip")`) is the same
    /// value. `None` (the value is missing) is one value of its own: every request without it
    /// shares one limit.
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
    /// never used. A header with fewer than `N` entries falls back to the peer address. An entry
    /// may have a port and IPv6 brackets (`[2001:db8::1]:443`); an entry that is not an address
    /// counts as an entry (it cannot shift the others) and gives no address.
    ///
    /// The address hashes as its text: `HotspotRule::exception("10.0.0.1", 100.0)` matches
    /// the client `10.0.0.1`.
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

pin_project_lite::pin_project! {
    /// The response future of [`SentinelService`]: the rejection of a blocked request, or the
    /// inner service's future with the request's entry.
    pub struct ResponseFuture<F, B, E> {
        #[pin]
        state: State<F, B, E>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, B, E> {
        /// Blocked: the rejection, taken once (boxed: the future stays small on the path
        /// that admits, where it is moved into place).
        Rejected { response: Option<Box<Response<SentinelBody<B>>>> },
        /// Admitted: the inner service's future, and the entry until it completes.
        Calling {
            #[pin]
            future: F,
            entry: Option<Entry>,
            is_error: Option<Arc<IsErrorFn>>,
        },
        /// Waiting for a throttling turn first (rare: boxed), until it completes.
        Throttled { future: Option<BoxFuture<Result<Response<SentinelBody<B>>, E>>> },
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<F, B, E> Future for ResponseFuture<F, B, E>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<SentinelBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Rejected { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(*response)),
                // Polled again after completion: stay pending, as a fused future may.
                None => Poll::Pending,
            },
            StateProj::Calling {
                future,
                entry,
                is_error,
            } => {
                // Polled again after completion: the inner future is done, leave it alone.
                let Some(held) = entry.as_ref() else {
                    return Poll::Pending;
                };
                let result = std::task::ready!(poll_unwinding(held, || future.poll(cx)));
                let Some(entry) = entry.take() else {
                    return Poll::Pending;
                };
                Poll::Ready(finish(result, entry, is_error.take()))
            }
            StateProj::Throttled { future } => {
                let Some(throttled) = future.as_mut() else {
                    return Poll::Pending;
                };
                let output = std::task::ready!(throttled.as_mut().poll(cx));
                *future = None;
                Poll::Ready(output)
            }
        }
    }
}

/// Runs `poll` (user code: the inner service or body); if it panics, `entry` counts as an
/// error and as finished, for whoever catches the panic drops it after the unwinding (a
/// panic-catching layer outside this one).
#[inline]
fn poll_unwinding<T>(entry: &Entry, poll: impl FnOnce() -> T) -> T {
    struct Unwinding<'a>(&'a Entry);
    impl Drop for Unwinding<'_> {
        fn drop(&mut self) {
            // Only reached while unwinding: the normal path forgets the guard.
            self.0.set_error();
            self.0.finish();
        }
    }
    let unwinding = Unwinding(entry);
    let output = poll();
    std::mem::forget(unwinding);
    output
}

/// The inner service's result, with the entry: held by the body, or exited as an error.
///
/// The entry is marked finished (not abandoned) once the call's outcome is known: at the
/// response's head, or for a gRPC response without `grpc-status` in its head (a stream), at its
/// trailers. Dropped before that, the call counts as abandoned: a half-open probe's place is
/// given back rather than decided.
fn finish<B, E>(
    result: Result<Response<B>, E>,
    entry: Entry,
    is_error: Option<Arc<IsErrorFn>>,
) -> Result<Response<SentinelBody<B>>, E> {
    match result {
        Ok(response) => {
            let status = response.status();
            let head = response.headers();
            let grpc = is_grpc(head);
            if classify(is_error.as_deref(), status, head, grpc) {
                entry.set_error();
            }
            // A gRPC response's outcome is in its trailers unless its head has it.
            if !grpc || head.contains_key(&GRPC_STATUS) {
                entry.finish();
            }
            let guard = Guard {
                entry,
                status,
                grpc,
                is_error,
            };
            Ok(response.map(|body| SentinelBody::inner(body, guard)))
        }
        Err(error) => {
            entry.set_error();
            entry.finish();
            drop(entry);
            Err(error)
        }
    }
}

impl<F, B, E> fmt::Debug for ResponseFuture<F, B, E> {
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
    type Future = ResponseFuture<S::Future, ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let config = &*self.config;
        // The request is split into parts only for the user's functions, which take `&Parts`
        // (splitting and joining moves the whole request twice).
        let (req, admitted) = if config.needs_parts() {
            let (parts, body) = req.into_parts();
            let admitted = admit(config, View::of_parts(&parts), Some(&parts));
            (Request::from_parts(parts, body), admitted)
        } else {
            let admitted = admit(config, View::of_request(&req), None);
            (req, admitted)
        };
        let reservation = match admitted {
            Ok(reservation) => reservation,
            Err(block) => {
                let response = match &config.on_block {
                    Some(f) => f(&block, &req.into_parts().0),
                    None => rejection(&block, req.headers()),
                };
                let response = Some(Box::new(response.map(SentinelBody::rejected)));
                return ResponseFuture {
                    state: State::Rejected { response },
                };
            }
        };
        let is_error = config.is_error.clone();
        if reservation.turn() != 0 {
            // The service that was polled ready handles this request after the wait; a fresh
            // clone stays behind for the next `poll_ready`.
            let clone = self.inner.clone();
            let mut inner = std::mem::replace(&mut self.inner, clone);
            let future = Box::pin(async move {
                crate::entry::wait_turn(&reservation).await;
                let entry = reservation.into_entry();
                finish(inner.call(req).await, entry, is_error)
            });
            return ResponseFuture {
                state: State::Throttled {
                    future: Some(future),
                },
            };
        }
        let entry = Some(reservation.into_entry());
        ResponseFuture {
            state: State::Calling {
                future: self.inner.call(req),
                entry,
                is_error,
            },
        }
    }
}

/// What the layer reads of a request.
#[derive(Clone, Copy)]
struct View<'a> {
    method: &'a http::Method,
    uri: &'a http::Uri,
    headers: &'a HeaderMap,
    extensions: &'a http::Extensions,
}

impl<'a> View<'a> {
    fn of_parts(parts: &'a Parts) -> View<'a> {
        View {
            method: &parts.method,
            uri: &parts.uri,
            headers: &parts.headers,
            extensions: &parts.extensions,
        }
    }

    fn of_request<B>(req: &'a Request<B>) -> View<'a> {
        View {
            method: req.method(),
            uri: req.uri(),
            headers: req.headers(),
            extensions: req.extensions(),
        }
    }
}

impl Config {
    /// Whether a user's function reads the request's parts.
    fn needs_parts(&self) -> bool {
        self.resource.is_some()
            || self.origin.is_some()
            || self.params.iter().any(|p| matches!(p, ParamSource::Fn(_)))
    }
}

/// Runs the checks of a request's resource (inbound, with its parameters and origin). Never
/// waits: a throttled request's turn is in the reservation. `parts` is given when
/// [`Config::needs_parts`].
fn admit(
    config: &Config,
    view: View<'_>,
    parts: Option<&Parts>,
) -> Result<crate::entry::Reservation, BlockError> {
    let mut params = Params::NONE;
    params.set_inbound();
    for source in &config.params {
        let hash = match (source, parts) {
            (ParamSource::Fn(f), Some(parts)) => hash_value(f(parts).as_deref()),
            (ParamSource::Fn(_), None) => hash_value(None),
            (ParamSource::ClientIp { trusted_proxies }, _) => {
                match client_ip(view, *trusted_proxies) {
                    Some(ip) => hash_ip(ip),
                    None => hash_value(None),
                }
            }
        };
        params.push(hash);
    }
    if let Some(origin) = config.origin.as_ref().zip(parts).and_then(|(f, p)| f(p)) {
        params.set_origin(&origin);
    }
    let node = match (&config.resource, parts) {
        (Some(f), Some(parts)) => node_by_name(&f(parts)),
        _ => default_node(view),
    };
    // Cancellable: a future dropped before the call's outcome is known (see `finish`) abandons it.
    crate::entry::reserve_with(node, 1, true, &params)
}

/// The hash of a parameter's value: a value hashes as its text does
/// (`EntryBuilder::param("vip")`, `HotspotRule::exception("vip", ..)`), and a missing value as a
/// value of its own.
fn hash_value(value: Option<&str>) -> u64 {
    match value {
        Some(text) => crate::param::hash(text),
        None => crate::param::hash(&None::<&str>),
    }
}

/// The hash of `ip`'s text (`hash_value(Some("10.0.0.1"))`), without allocating: the address is
/// written on the stack (an IPv6 address is at most 45 characters).
fn hash_ip(ip: IpAddr) -> u64 {
    use std::fmt::Write as _;
    struct Stack {
        buf: [u8; 64],
        len: usize,
    }
    impl fmt::Write for Stack {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let end = self.len + s.len();
            let slot = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
            slot.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
    let mut text = Stack {
        buf: [0; 64],
        len: 0,
    };
    match write!(text, "{ip}")
        .ok()
        .and_then(|()| std::str::from_utf8(&text.buf[..text.len]).ok())
    {
        Some(text) => hash_value(Some(text)),
        None => hash_value(Some(&ip.to_string())),
    }
}

/// The entry of a request whose response is being sent.
struct Guard {
    entry: Entry,
    status: StatusCode,
    /// The response is gRPC.
    grpc: bool,
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
        let frame = match this.guard.as_ref() {
            Some(guard) => poll_unwinding(&guard.entry, || body.as_mut().poll_frame(cx)),
            None => body.as_mut().poll_frame(cx),
        };
        let frame = std::task::ready!(frame);
        match &frame {
            None => {
                if let Some(guard) = this.guard.take() {
                    guard.entry.finish();
                }
            }
            Some(Err(_)) => {
                if let Some(guard) = this.guard.take() {
                    guard.entry.set_error();
                    guard.entry.finish();
                }
            }
            Some(Ok(frame)) => {
                if let (Some(trailers), Some(guard)) = (frame.trailers_ref(), this.guard.as_ref()) {
                    if classify(
                        guard.is_error.as_deref(),
                        guard.status,
                        trailers,
                        guard.grpc,
                    ) {
                        guard.entry.set_error();
                    }
                    guard.entry.finish();
                }
                if body.is_end_stream() {
                    // The last frame: exit now, before the transport flushes it.
                    if let Some(guard) = this.guard.take() {
                        guard.entry.finish();
                    }
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

/// Whether a request or response is gRPC (`content-type: application/grpc...`, any case; gRPC-Web
/// included).
fn is_grpc(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .get(..GRPC.len())
            .is_some_and(|prefix| prefix == GRPC || prefix.eq_ignore_ascii_case(GRPC))
    })
}

const GRPC: &[u8] = b"application/grpc";

static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// A method as resource names spell it: a standard method by its name, any other (a client
/// can invent any number) as `OTHER`.
fn method_name(method: &http::Method) -> &str {
    match method.as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "HEAD" | "OPTIONS" | "PATCH" | "CONNECT"
        | "TRACE") => m,
        _ => "OTHER",
    }
}

/// The longest gRPC method path used as a name.
const MAX_GRPC_PATH: usize = 256;

/// `path` if it is a gRPC method path, `/package.Service/Method` in protobuf identifiers, at
/// most [`MAX_GRPC_PATH`] bytes: anything else a client sends is not a name.
fn grpc_method_path(path: &str) -> Option<&str> {
    fn identifier(s: &str) -> bool {
        let mut bytes = s.bytes();
        bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }
    if path.len() > MAX_GRPC_PATH {
        return None;
    }
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    (service.split('.').all(identifier) && identifier(method)).then_some(path)
}

/// Whether a route ends in a wildcard segment (`/{*rest}`), as tonic's routes in axum do.
fn ends_in_wildcard(route: &str) -> bool {
    route.ends_with('}')
        && route
            .rfind('/')
            .is_some_and(|slash| route[slash + 1..].starts_with("{*"))
}

/// Routes recently seen by this thread, by the address of axum's matched-path string (one per
/// route, shared by its requests) and the method: a hit costs no formatting, hashing or
/// registry probe. Every hit is verified against the node's name, so a stale slot (a route
/// string freed and its address reused) is only a miss.
const ROUTE_SLOTS: usize = 16;

thread_local! {
    static ROUTES: std::cell::Cell<[(usize, Option<&'static crate::ResourceNode>); ROUTE_SLOTS]> =
        const { std::cell::Cell::new([(0, None); ROUTE_SLOTS]) };
}

/// The node of a request's default resource name (see the module docs).
fn default_node(view: View<'_>) -> &'static crate::ResourceNode {
    let Some(route) = view.extensions.get::<MatchedPath>() else {
        return with_default_resource(view, node_by_name);
    };
    let route = route.as_str();
    let method = method_name(view.method);
    // The route's address and the method's length and first letter (GET and PUT differ).
    let tag = method.len() << 8 | usize::from(method.as_bytes().first().copied().unwrap_or(0));
    let key = (route.as_ptr() as usize) << 16 | tag;
    let slot = ((route.as_ptr() as usize >> 4) ^ tag) % ROUTE_SLOTS;
    let cached = ROUTES.try_with(|routes| {
        let routes: &std::cell::Cell<[_]> = routes;
        routes.as_slice_of_cells()[slot].get()
    });
    if let Ok((k, Some(node))) = cached {
        if k == key && names_route(node.name(), method, route) {
            return node;
        }
    }
    let node = with_default_resource(view, node_by_name);
    // Not cached: a wildcard route (it may serve gRPC methods, each named by its own path: a hit
    // is verified against the route's name, so a wildcard route never hits), and the overflow
    // node (beyond the cap on resources: a later lookup may differ).
    if !ends_in_wildcard(route) && names_route(node.name(), method, route) {
        let _ = ROUTES.try_with(|routes| {
            let routes: &std::cell::Cell<[_]> = routes;
            routes.as_slice_of_cells()[slot].set((key, Some(node)));
        });
    }
    node
}

/// Whether `name` is `"{method}:{route}"`.
fn names_route(name: &str, method: &str, route: &str) -> bool {
    name.len() == method.len() + 1 + route.len()
        && name.starts_with(method)
        && name.as_bytes()[method.len()] == b':'
        && name.ends_with(route)
}

/// Calls `f` with the default resource name of a request, built in a per-thread buffer (no
/// allocation per request once the buffer has grown). Its length is bounded by the routes'
/// and [`MAX_GRPC_PATH`]: nothing a client sends makes it longer.
fn with_default_resource<R>(view: View<'_>, f: impl FnOnce(&str) -> R) -> R {
    // Taken out while in use (a nested call finds an empty buffer and grows its own).
    let mut name = NAME.try_with(std::cell::Cell::take).unwrap_or_default();
    name.clear();
    name.push_str(method_name(view.method));
    name.push(':');
    let route = view
        .extensions
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    // gRPC without a route, or under a wildcard route: the method path, if it is one.
    let grpc_path = match route {
        Some(route) if !ends_in_wildcard(route) => None,
        _ if is_grpc(view.headers) => grpc_method_path(view.uri.path()),
        _ => None,
    };
    name.push_str(grpc_path.or(route).unwrap_or("<unmatched>"));
    let result = f(&name);
    let _ = NAME.try_with(|cell| cell.set(name));
    result
}

thread_local! {
    /// Each thread's buffer for default resource names.
    static NAME: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// The default resource name of a request.
#[cfg(test)]
fn default_resource(parts: &Parts) -> String {
    with_default_resource(View::of_parts(parts), str::to_owned)
}

/// The client's address: see [`SentinelLayer::client_ip`].
fn client_ip(view: View<'_>, trusted_proxies: usize) -> Option<IpAddr> {
    if trusted_proxies > 0 {
        // The `trusted_proxies`th entry from the right, over every header in order. Split as
        // bytes: an entry that is not text (the client's junk) is still one entry, so it cannot
        // hide the entries right of it.
        let from_right = view
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .rev()
            .flat_map(|v| v.as_bytes().rsplit(|&b| b == b','))
            .nth(trusted_proxies - 1);
        if let Some(entry) = from_right {
            return std::str::from_utf8(entry)
                .ok()
                .and_then(|entry| parse_addr(entry.trim()));
        }
    }
    view.extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .or_else(|| view.extensions.get::<SocketAddr>().map(SocketAddr::ip))
}

/// An `X-Forwarded-For` entry: an IP address, possibly with a port; an IPv6 address possibly
/// in brackets (`[2001:db8::1]`, `[2001:db8::1]:443`).
fn parse_addr(s: &str) -> Option<IpAddr> {
    if let Some(v6) = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    s.parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<SocketAddr>().ok().map(|a| a.ip()))
}

/// Whether a response counts as an error, by its status and `headers` (its head, or its
/// trailers); `grpc`: the response is gRPC (its head says so).
fn classify(
    custom: Option<&IsErrorFn>,
    status: StatusCode,
    headers: &HeaderMap,
    grpc: bool,
) -> bool {
    if let Some(f) = custom {
        return f(status, headers);
    }
    if status.is_server_error() {
        return true;
    }
    // `grpc-status` in the head (a trailers-only gRPC response) or in the trailers. A custom
    // header name's lookup is not cheap, so plain HTTP responses skip it.
    grpc && matches!(
        headers.get(&GRPC_STATUS).map(HeaderValue::as_bytes),
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
        // "Overloaded, come back later".
        BlockKind::CircuitBreaker | BlockKind::System => (StatusCode::SERVICE_UNAVAILABLE, 14),
    }
}

/// `Retry-After` in whole seconds: the rule's hint rounded up, at least 1 (1 without a hint).
fn retry_after_secs(block: &BlockError) -> u64 {
    block.retry_after().map_or(1, |d| {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        secs.max(1)
    })
}

/// The default response to a blocked request with the headers `request`.
fn rejection(block: &BlockError, request: &HeaderMap) -> Response<String> {
    let (status, grpc_status) = answer(block.kind());
    let message = block.to_string();
    if is_grpc(request) {
        // The request's own gRPC content type: a gRPC-Web client expects its own back.
        let content_type = request
            .get(CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/grpc"));
        let mut response = Response::new(String::new());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, content_type);
        headers.insert("grpc-status", HeaderValue::from(u16::from(grpc_status)));
        // Percent-encoded: printable ASCII only, always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&percent_encode(&message)) {
            headers.insert("grpc-message", value);
        }
        return response;
    }
    let mut response = Response::new(message);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status != StatusCode::FORBIDDEN {
        headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(block)));
    }
    response
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
