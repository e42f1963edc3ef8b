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
//! `Retry-After` is in whole seconds, rounded up from [`BlockError::retry_after`](crate::BlockError::retry_after), at least 1
//! (1 when the rule cannot tell). The body (gRPC: `grpc-message`) says what the status says and
//! when to retry, `Too Many Requests; retry after 2 s` (a 403: `Forbidden`), and nothing else:
//! which rule blocked, its threshold, the resource's name and the caller's origin stay in the
//! [`BlockError`](crate::BlockError) given to [`SentinelLayer::on_block`] and in the logs (feature `tracing`).
//! The rejection is the layer's own response, returned from the
//! service's future: no `Buffer` or `HandleError` layer is needed to keep the status.
//! [`SentinelLayer::on_block`] replaces it ([`block_response`] gives the default, to start
//! from).
//!
//! # Standard signals (opt-in)
//!
//! [`SentinelLayer::rate_limit_headers`] adds the IETF `RateLimit-Policy` and `RateLimit`
//! fields (draft-ietf-httpapi-ratelimit-headers-11) to every response of a route with a quota
//! rule; [`SentinelLayer::problem_details`] makes the default refusals RFC 9457 problems
//! (`application/problem+json`). Without them, responses are as described above.
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

pub use tower_layer::Layer;
pub use tower_service::Service;

mod body;
mod client;
mod config;
mod layer;
mod naming;
mod params;
mod problem;
mod ratelimit;
mod response;
mod service;
#[cfg(test)]
mod tests;
mod view;

pub use body::SentinelBody;
pub use client::{
    block_error, BoxError, ClientResponseFuture, SentinelClientLayer, SentinelClientService,
};
pub use layer::{block_response, SentinelLayer};
pub use service::{ResponseFuture, SentinelService};

#[doc(no_inline)]
pub use axum::extract::{ConnectInfo, MatchedPath};
/// The `http` crate (1.x) whose `Parts`, `Request` and `Response` this layer's callbacks take
/// and return, re-exported so that a user's version always matches. The layer works with
/// axum 0.8, tonic 0.14 and hyper 1 (all on `http` 1 and tower 0.5's traits).
pub use http;
