//! [`SentinelLayer`], the layer's builder, and [`block_response`], its default rejection.

use std::fmt;
use std::sync::Arc;

use http::header::HeaderMap;
use http::request::Parts;
use http::{Response, StatusCode};
use tower_layer::Layer;

use super::config::{Config, ParamSource};
use super::response;
use super::service::SentinelService;
use crate::BlockError;

/// A tower [`Layer`] guarding every request of the wrapped service with a flow-control
/// resource: see the [module documentation](crate::tower).
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
            .field("rate_limit_headers", &self.config.rate_limit_headers)
            .field("problem_details", &self.config.problem_details)
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
    /// [`ConnectInfo<SocketAddr>`](crate::tower::ConnectInfo) request extension (serve with
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
    /// [`block_response`]. The content type is the handler's to set; if it keeps the
    /// `text/plain; charset=utf-8` that [`block_response`] wrote but returns a JSON object or
    /// array as the body, the response says `application/json`.
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

impl SentinelLayer {
    /// Sends the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-11) on
    /// every response of a resource with a quota rule, refusals included: `RateLimit-Policy`,
    /// one item per rule (`q` the threshold, `w` the window in seconds), and `RateLimit`, the
    /// item with the least left (`r` what remains in the window, `t` the seconds until more of
    /// it comes back; on a refusal never more than `Retry-After`). Off by default.
    ///
    /// ```text
    /// RateLimit-Policy: "flow-1";q=5;w=1
    /// RateLimit: "flow-1";r=4;t=1
    /// ```
    ///
    /// The rules that are quotas: a QPS [`FlowRule`](crate::rules::FlowRule) that rejects at
    /// once (not throttling, warm-up, related-resource, per-origin or cluster rules), and a
    /// QPS [`HotspotRule`](crate::rules::HotspotRule) without a cluster part, with a window of
    /// whole seconds. A hotspot rule counts per value of its parameter (per client, for
    /// [`client_ip`](Self::client_ip)): its items carry `pk`, a Byte Sequence that is the same
    /// for one value and different between values, a keyed hash (its key drawn at random in
    /// each process) that never shows the value, and `r` counts that value's calls. Items are
    /// named by kind and place (`"flow-1"`, `"hotspot-1"`): nothing of the rule's resource,
    /// route or parameter. A resource without such a rule sends neither field; neither does a
    /// response that has a `RateLimit` field already (the inner service's, or a custom
    /// [`on_block`](Self::on_block)'s own).
    ///
    /// The counts are read right after the request's check, from what the check read and
    /// wrote; the requests of such a layer take its general path (BENCHMARKS.md has the cost).
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().rate_limit_headers();
    /// ```
    pub fn rate_limit_headers(mut self) -> Self {
        self.config_mut().rate_limit_headers = true;
        self
    }

    /// Refuses with RFC 9457 problem details: the body of the default 429, 503 or 403 is
    /// `application/problem+json` with `type`, `title`, `status` (the HTTP status) and `detail`
    /// (the text the default body has), and nothing of the rule, the resource or its route.
    /// `Retry-After` stays. Off by default; gRPC refusals and a custom
    /// [`on_block`](Self::on_block) are left as they are.
    ///
    /// | status | `type` |
    /// |---|---|
    /// | 429 | `https://iana.org/assignments/http-problem-types#quota-exceeded` |
    /// | 503 (breaker, system, outlier) | `https://iana.org/assignments/http-problem-types#temporary-reduced-capacity` |
    /// | 403 | `about:blank` |
    ///
    /// With [`rate_limit_headers`](Self::rate_limit_headers) too, a 429 lists in
    /// `violated-policies` the `RateLimit-Policy` items with nothing left.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelLayer;
    /// let layer = SentinelLayer::new().rate_limit_headers().problem_details();
    /// ```
    pub fn problem_details(mut self) -> Self {
        self.config_mut().problem_details = true;
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
