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
//! application/grpc...`, always a `POST`) without a matched route, or under the route of its own
//! package-qualified service (`/{package.Service}/{*rest}`, as tonic's `Routes` in axum are:
//! `/helloworld.Greeter/{*rest}`), is named by its method path
//! (`POST:/helloworld.Greeter/SayHello`) if the path is one (`/package.Service/Method` in
//! protobuf identifiers, at most 256 bytes) **and the method is known**: rules in force name
//! it, or a resource of that name exists because the service answered the method before (a gRPC
//! answer that is not `UNIMPLEMENTED`, which is what tonic answers for a method or service it
//! does not have). An unknown method is named `POST:/helloworld.Greeter/<unmatched>` under its
//! service's route, `POST:<unmatched>` without a route (a 404 on a REST router looks the
//! same), and its name is learned from its answer. A service's first answered call of a method
//! therefore counts under `<unmatched>`; a method with a rule is never missed. At most 256
//! names are learned per service (4 096 in all): a service that answers every method a client
//! invents (a proxy) adds that many resources, no more. Under any other route, a gRPC content
//! type changes nothing: the route names the request (so `/api/{*rest}`, a REST catch-all,
//! keeps its rules; a service declared without a package, `/Greeter/{*rest}`, is named by that
//! route). Anything else is `"{METHOD}:<unmatched>"`: the raw URI never becomes a name, so a
//! flood of requests to unknown paths is one resource.
//! `HEAD` is named `GET` (axum answers a `HEAD` with the `get` handler, doing its work).
//! Methods other than the nine standard ones are all named `OTHER` (`OTHER:/users/{id}`).
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
//! (1 when the rule cannot tell). The body (gRPC: `grpc-message`) says what the status says and
//! when to retry, `Too Many Requests; retry after 2 s` (a 403: `Forbidden`), and nothing else:
//! which rule blocked, its threshold, the resource's name and the caller's origin stay in the
//! [`BlockError`] given to [`SentinelLayer::on_block`] and in the logs (feature `tracing`).
//! The rejection is the layer's own response, returned from the
//! service's future: no `Buffer` or `HandleError` layer is needed to keep the status.
//! [`SentinelLayer::on_block`] replaces it ([`block_response`] gives the default, to start
//! from).
//!
//! # System rules
//!
//! Requests are inbound traffic, checked and counted by system rules
//! ([`SystemRule`](crate::rules::SystemRule)), except on routes exempt from them
//! ([`SentinelLayer::exempt_from_system`]: health checks, `/metrics`).
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
//! success. Unless it was slow already: a request dropped after a slow-request breaker's
//! `max_rt` (an outer timeout cut it) counts as slow, and one dropped after an adaptive limit's
//! `timeout` as a drop. A response body dropped after its head still counts by its status.

use std::fmt;
use std::sync::Arc;

use http::header::HeaderMap;
use http::request::Parts;
use http::{Request, Response, StatusCode};
pub use tower_layer::Layer;
pub use tower_service::Service;

use crate::BlockError;

mod body;
mod naming;
mod params;
mod response;
mod service;
#[cfg(test)]
mod tests;

pub use body::SentinelBody;
pub use service::{ResponseFuture, SentinelService};

#[doc(no_inline)]
pub use axum::extract::{ConnectInfo, MatchedPath};
/// The `http` crate (1.x) whose `Parts`, `Request` and `Response` this layer's callbacks take
/// and return, re-exported so that a user's version always matches. The layer works with
/// axum 0.8, tonic 0.14 and hyper 1 (all on `http` 1 and tower 0.5's traits).
pub use http;

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

/// A layer's configuration, shared by its services.
#[derive(Clone, Default)]
struct Config {
    resource: Option<Arc<ResourceFn>>,
    params: Vec<ParamSource>,
    /// The parameters' names, by index (`None`: unnamed).
    param_names: Vec<Option<Arc<str>>>,
    /// Whether any parameter has a name (then entries teach the resource its names).
    names_params: bool,
    origin: Option<Arc<ParamFn>>,
    is_error: Option<Arc<IsErrorFn>>,
    on_block: Option<Arc<OnBlockFn>>,
    /// The prefix IPv6 clients are bucketed by (`None`: the default /64).
    ipv6_prefix: Option<u8>,
    /// Routes (or, unmatched, paths) whose requests system rules neither check nor count.
    system_exempt: Vec<Box<str>>,
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
            .field("ipv6_prefix", &self.config.ipv6_prefix())
            .field("exempt_from_system", &self.config.system_exempt)
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

    /// Adds an unnamed hotspot parameter taken from the request (a header, a path segment, a
    /// tenant): parameters are indexed in the order [`param`](Self::param),
    /// [`named_param`](Self::named_param) and [`client_ip`](Self::client_ip) are called, the
    /// first is index 0 ([`HotspotRule`](crate::rules::HotspotRule)). Prefer
    /// [`named_param`](Self::named_param): rules can then name it, whatever its index. A value hashes as its text does, so
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
        let config = self.config_mut();
        config.params.push(ParamSource::Fn(Arc::new(f)));
        config.param_names.push(None);
        self
    }

    /// Adds a hotspot parameter named `name`, taken from the request as [`param`](Self::param)
    /// takes it. A rule limits it by name, whatever the order the parameters were added in:
    /// `param: api_key` in a rule file, or
    /// [`HotspotRule::qps_by_name`](crate::rules::HotspotRule::qps_by_name). A resource learns
    /// its parameters' names from its first request.
    ///
    /// ```
    /// use sentinel_runtime::rules::HotspotRule;
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().client_ip(0).named_param("api_key", |parts| {
    ///     parts.headers.get("x-api-key")?.to_str().ok().map(str::to_owned)
    /// });
    /// let per_key = HotspotRule::qps_by_name("GET:/search", "api_key", 10.0);
    /// ```
    pub fn named_param(
        mut self,
        name: &str,
        f: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let config = self.config_mut();
        config.params.push(ParamSource::Fn(Arc::new(f)));
        config.param_names.push(Some(Arc::from(name)));
        config.names_params = true;
        self
    }

    /// Adds the client's IP address as the hotspot parameter named `"client_ip"`;
    /// `trusted_proxies` counts the proxies in front of the service, it is not a parameter
    /// index.
    ///
    /// A rule limits it by name (`param: client_ip` in a rule file, or
    /// [`HotspotRule::qps_by_name`](crate::rules::HotspotRule::qps_by_name)`(resource,
    /// "client_ip", ..)`), or by its index (see [`param`](Self::param) for the indexing).
    ///
    /// With `trusted_proxies == 0` it is the peer address: axum's
    /// [`ConnectInfo<SocketAddr>`](ConnectInfo) request extension (serve with
    /// `into_make_service_with_connect_info::<SocketAddr>()`) or a plain
    /// [`SocketAddr`](std::net::SocketAddr) extension. With `N` trusted proxies in front of the service, it is the `N`th address
    /// from the **right** of `X-Forwarded-For` (all such headers, in order): the one the
    /// outermost trusted proxy saw. Entries left of it are whatever the client wrote and are
    /// never used. A header with fewer than `N` entries falls back to the peer address. An entry
    /// may have a port and IPv6 brackets (`[2001:db8::1]:443`); an entry that is not an address
    /// counts as an entry (it cannot shift the others) and gives no address.
    ///
    /// Without a peer address (served without connect info) and without a usable
    /// `X-Forwarded-For` entry, a request has no address: all such requests share one value,
    /// that is one client's limit, and with the `tracing` feature the first one is reported as
    /// a warning.
    ///
    /// An IPv4 client is one address: it hashes as its text, so
    /// `HotspotRule::exception("10.0.0.1", 100.0)` matches the client `10.0.0.1`, also when a
    /// dual-stack listener reports it as the IPv4-mapped `::ffff:10.0.0.1` (a mapped address is
    /// the IPv4 address it maps). An IPv6 client is its /64 (see
    /// [`ipv6_prefix`](Self::ipv6_prefix)): a host given a /64, as every home and cloud host
    /// is, can use a new address for every request, so a limit per address would limit
    /// nothing. The value is the prefix in CIDR notation, as `Ipv6Addr` displays the network:
    /// `2001:db8:1:2::7` is `2001:db8:1:2::/64`, and
    /// `HotspotRule::exception("2001:db8:1:2::/64", 100.0)` matches every address in it.
    pub fn client_ip(mut self, trusted_proxies: usize) -> Self {
        let config = self.config_mut();
        config
            .params
            .push(ParamSource::ClientIp { trusted_proxies });
        config.param_names.push(Some(Arc::from("client_ip")));
        config.names_params = true;
        self
    }

    /// How many leading bits of an IPv6 client's address make one client for
    /// [`client_ip`](Self::client_ip): 64 by default (a /64, what a host is given). 48 treats
    /// a whole site as one client; 128 makes each address one, which a client owning a prefix
    /// escapes by rotating addresses. Above 128 counts as 128. IPv4 clients stay one per
    /// address whatever this says.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// // Behind one trusted proxy; a client is its /56.
    /// let layer = SentinelLayer::new().client_ip(1).ipv6_prefix(56);
    /// ```
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.config_mut().ipv6_prefix = Some(bits.min(128));
        self
    }

    /// Exempts routes from system rules ([`SystemRule`](crate::rules::SystemRule)): health
    /// checks and `/metrics` should answer while the service sheds load, or the orchestrator
    /// restarts a service that is only busy. A request is exempt when axum's matched route is
    /// one of `routes` exactly (the route as declared: `/users/{id}`, not `/users/42`), or,
    /// without a matched route (a service not behind an axum router, such as a tonic server's
    /// `/grpc.health.v1.Health/Check`), when its path is.
    ///
    /// An exempt request is not inbound traffic: system rules neither refuse it nor count it
    /// (it is not in [`metrics::inbound`](crate::metrics::inbound), nor in the QPS,
    /// concurrency and response time the system rules compare). Every other rule of its
    /// resource applies as before. Calls made inside an exempt request's handler
    /// are checked as they would be anywhere (system rules only check inbound entries).
    ///
    /// ```
    /// use axum::{routing::get, Router};
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let app: Router = Router::new()
    ///     .route("/orders", get(|| async { "orders" }))
    ///     .route("/health", get(|| async { "ok" }))
    ///     .route("/metrics", get(|| async { "" }))
    ///     .layer(SentinelLayer::new().exempt_from_system(["/health", "/metrics"]));
    /// ```
    pub fn exempt_from_system(
        mut self,
        routes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let exempt = &mut self.config_mut().system_exempt;
        exempt.extend(routes.into_iter().map(|r| r.into().into_boxed_str()));
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
    /// trailers-only) responses. The `String` is the body. To change only the body (a JSON
    /// error, say) and keep the status, `Retry-After` and gRPC trailers, start from
    /// [`block_response`].
    ///
    /// ```
    /// use sentinel_runtime::tower::{block_response, SentinelLayer};
    /// let layer = SentinelLayer::new().on_block(|err, parts| {
    ///     let mut response = block_response(err, parts);
    ///     if response.status() != http::StatusCode::OK {
    ///         // Not gRPC (a gRPC rejection is a 200 whose outcome is in its headers).
    ///         *response.body_mut() = format!("{{\"error\":\"{:?}\"}}", err.kind());
    ///         response.headers_mut().insert(
    ///             http::header::CONTENT_TYPE,
    ///             http::HeaderValue::from_static("application/json"),
    ///         );
    ///     }
    ///     response
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

/// The response the layer sends for a blocked request by default (see the module docs): 429,
/// 503 or 403 with `Retry-After` and a `text/plain` body of the status's words and the retry
/// hint (nothing of the rule, the resource or the origin), or for a gRPC request (a `POST`
/// with a gRPC content type) a trailers-only response (status 200, empty body, `grpc-status`
/// and `grpc-message`, the same words, in its headers). A starting point for
/// [`SentinelLayer::on_block`].
///
/// ```
/// use sentinel_runtime::tower::block_response;
/// use sentinel_runtime::{rules::{self, FlowRule}, entry};
///
/// rules::load_flow_rules(vec![FlowRule::qps("doc-block-response", 0.0)])?;
/// let err = entry("doc-block-response").unwrap_err();
/// let (parts, ()) = http::Request::get("/x").body(()).unwrap().into_parts();
/// let response = block_response(&err, &parts);
/// assert_eq!(response.status(), 429);
/// assert_eq!(response.headers()["retry-after"], "1");
/// assert_eq!(response.body(), "Too Many Requests; retry after 1 s");
/// # rules::load_flow_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
pub fn block_response(err: &BlockError, parts: &Parts) -> Response<String> {
    response::rejection(err, &parts.method, &parts.headers)
}

impl<S> Layer<S> for SentinelLayer {
    type Service = SentinelService<S>;

    fn layer(&self, inner: S) -> SentinelService<S> {
        // The process's one-time set-up, while the service is built, not in its first request
        // (a no-op once done at start).
        crate::sync::prepare();
        SentinelService::new(inner, &self.config)
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
    /// Whether system rules leave the request alone ([`SentinelLayer::exempt_from_system`]).
    #[cold]
    fn system_exempt(&self, view: View<'_>) -> bool {
        let path = match view.extensions.get::<MatchedPath>() {
            Some(route) => route.as_str(),
            None => view.uri.path(),
        };
        self.system_exempt.iter().any(|r| **r == *path)
    }

    /// The prefix IPv6 clients are bucketed by.
    fn ipv6_prefix(&self) -> u8 {
        self.ipv6_prefix.unwrap_or(params::DEFAULT_IPV6_PREFIX)
    }

    /// Whether requests are named by default and have no parameters, no origin and no
    /// exemption from system rules (the layer as `SentinelLayer::new()` makes it).
    fn is_plain(&self) -> bool {
        self.resource.is_none()
            && self.params.is_empty()
            && self.origin.is_none()
            && self.system_exempt.is_empty()
    }

    /// Whether a user's function reads the request's parts.
    fn needs_parts(&self) -> bool {
        self.resource.is_some()
            || self.origin.is_some()
            || self.params.iter().any(|p| matches!(p, ParamSource::Fn(_)))
    }
}
