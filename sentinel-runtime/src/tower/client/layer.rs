//! [`SentinelClientLayer`], the client layer's builder.

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use tower_layer::Layer;

use super::service::{NameFn, SentinelClientService};

/// A tower [`Layer`] that guards the calls a process **makes**: each request sent through the
/// wrapped client (hyper-util's `Client`, a tonic `Channel`, any
/// `Service<http::Request<B>>`) enters a resource first, and the circuit breakers, flow,
/// concurrency and adaptive limits of that resource decide whether it is sent at all.
///
/// ```
/// use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
/// use sentinel_runtime::tower::{
///     block_error, BoxError, Layer, SentinelClientLayer, SentinelClientService,
/// };
/// use std::time::Duration;
///
/// // At most 100 calls a second to the inventory service, and a breaker that opens after 5
/// // failures within 10 s (the window; its default is 1 s) and stays open 10 s.
/// rules::load_flow_rules(vec![FlowRule::qps("GET:http://inventory:8080", 100.0)])?;
/// rules::load_circuit_breaker_rules(vec![
///     CircuitBreakerRule::error_count("GET:http://inventory:8080", 5)
///         .window(Duration::from_secs(10), 10)
///         .recovery(Duration::from_secs(10)),
/// ])?;
///
/// // Around any client: hyper-util's `Client`, a tonic `Channel`, a tower stack
/// // (examples/outbound.rs runs one).
/// fn guarded<C>(client: C) -> SentinelClientService<C> {
///     SentinelClientLayer::new().layer(client)
/// }
///
/// // A refused call was never sent; its error is the `BlockError`.
/// fn refused(err: &BoxError) -> bool {
///     block_error(err).is_some()
/// }
/// # rules::load_flow_rules(vec![])?;
/// # rules::load_circuit_breaker_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
///
/// # Resource names
///
/// By default `"{METHOD}:{scheme}://{host}[:{port}]"`, from the request's URI:
/// `GET:http://inventory:8080`, `POST:https://payments.example` (the port is left out when it
/// is the scheme's default, and user information such as `user:secret@` never appears). A
/// request whose URI has no host is `"{METHOD}:<unknown>"`: a tonic `Channel` adds its origin
/// after the layers in front of it, so give tonic's client the origin
/// (`tonic::client::Grpc::with_origin`, or a generated client's `with_origin`) or name the
/// calls with [`name`](Self::name). The name of a host called before is found in a small
/// per-thread cache, without building the string. Calls to hosts a user chooses (webhooks, a
/// crawler) should be named with [`name`](Self::name): resources are capped
/// ([`registry::set_max_resources`](crate::registry::set_max_resources)), and names beyond the
/// cap pass unchecked.
///
/// # Blocks
///
/// A refused call is never sent: the inner service is not called, and the service's error
/// ([`BoxError`](super::BoxError)) is the [`BlockError`](crate::BlockError), found with
/// [`block_error`](super::block_error) (also through layers that wrap errors: through tonic,
/// which turns errors into a `Status` with code `UNKNOWN`, it is the status's `source()`).
///
/// # Errors and exits
///
/// Every call is an outbound entry: system rules ([`SystemRule`](crate::rules::SystemRule)),
/// which protect what a process serves, never refuse it. The call counts as an error (for the
/// statistics, the circuit breakers, the outlier rules and the adaptive limit) when the inner
/// service fails (a
/// transport error, a timeout), when the response is a 5xx, or when it is gRPC (a `POST`
/// answered with a gRPC content type) and its `grpc-status`, in the headers or the trailers,
/// is anything but 0, and, by default, when the caller gives up on it before the response's
/// head (below). The entry is held until the response body ends (or is dropped), so
/// concurrency limits and response times cover streamed bodies; the body is a
/// [`SentinelBody`](crate::tower::SentinelBody) around the inner one.
///
/// A call whose response future is dropped before the response's head comes (the caller's own
/// timeout gave up on it) counts as an **error**, by default: a dependency that hangs trips
/// its breakers and outlier rules as one that fails does
/// ([`abandoned_is_error`](Self::abandoned_is_error) turns that off). A body dropped after
/// the head counts by its status; a gRPC stream cut before its trailers counts as complete but
/// decides nothing for the circuit breakers. (Inbound, the server layer keeps the other
/// meaning: a request its client drops decides nothing; see
/// [its docs](crate::tower#exits-and-errors).)
#[derive(Clone)]
pub struct SentinelClientLayer {
    name: Option<Arc<NameFn>>,
    abandoned_is_error: bool,
}

impl Default for SentinelClientLayer {
    fn default() -> SentinelClientLayer {
        SentinelClientLayer {
            name: None,
            abandoned_is_error: true,
        }
    }
}

impl fmt::Debug for SentinelClientLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelClientLayer")
            .field("custom_name", &self.name.is_some())
            .field("abandoned_is_error", &self.abandoned_is_error)
            .finish()
    }
}

impl SentinelClientLayer {
    /// A layer naming each call `"{METHOD}:{scheme}://{host}[:{port}]"`, counting a call its
    /// caller gives up on before its response as an error.
    pub fn new() -> SentinelClientLayer {
        SentinelClientLayer::default()
    }

    /// Whether a call whose response future is dropped before the response's head (or the
    /// client's error) comes counts as an error. Default `true`: the usual way a caller bounds
    /// a call is its own timeout (`tokio::time::timeout` around it), which drops the future;
    /// a dependency that never answers must then trip its breaker and be ejected by the
    /// outlier rules, as one that answers with errors does. Set `false` where callers drop
    /// calls for reasons of their own (hedged requests, a `select!` that races two calls,
    /// users cancelling): such a call then decides nothing, as an inbound request its client
    /// drops (see [the server layer](crate::tower#exits-and-errors)). A call dropped while it
    /// waits for its throttling turn was never sent, and decides nothing either way.
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelClientLayer;
    /// let hedging = SentinelClientLayer::new().abandoned_is_error(false);
    /// ```
    pub fn abandoned_is_error(mut self, yes: bool) -> Self {
        self.abandoned_is_error = yes;
        self
    }

    /// Names the resource of each call: replaces the default name. One name for a dependency's
    /// several hosts puts them under one limit and one breaker.
    ///
    /// The function runs before anything is reserved for the call: if it panics, the panic
    /// reaches the caller and nothing is held. The name must come from a small set, never
    /// from raw input (resources are capped).
    ///
    /// ```
    /// use sentinel_runtime::tower::SentinelClientLayer;
    /// let layer = SentinelClientLayer::new().name(|parts| {
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

impl<S> Layer<S> for SentinelClientLayer {
    type Service = SentinelClientService<S>;

    fn layer(&self, inner: S) -> SentinelClientService<S> {
        // The process's one-time set-up, now rather than in the first call.
        crate::sync::prepare();
        SentinelClientService::new(inner, self.name.clone(), self.abandoned_is_error)
    }
}
