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
/// use sentinel_runtime::tower::{BoxError, Layer, SentinelClientLayer, SentinelClientService};
/// use sentinel_runtime::BlockError;
/// use std::time::Duration;
///
/// // At most 100 calls a second to the inventory service, and a breaker that opens after 5
/// // failures and stays open 10 s.
/// rules::load_flow_rules(vec![FlowRule::qps("GET:http://inventory:8080", 100.0)])?;
/// rules::load_circuit_breaker_rules(vec![
///     CircuitBreakerRule::error_count("GET:http://inventory:8080", 5)
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
///     err.downcast_ref::<BlockError>().is_some()
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
/// `err.downcast_ref::<BlockError>()` (through tonic, which turns errors into a `Status` with
/// code `UNKNOWN`, on the status's `source()`).
///
/// # Errors and exits
///
/// Every call is an outbound entry: system rules ([`SystemRule`](crate::rules::SystemRule)),
/// which protect what a process serves, never refuse it. The call counts as an error (for the
/// statistics, the circuit breakers and the adaptive limit) when the inner service fails (a
/// transport error, a timeout), when the response is a 5xx, or when it is gRPC (a `POST`
/// answered with a gRPC content type) and its `grpc-status`, in the headers or the trailers,
/// is anything but 0. The entry is held until the response body ends (or is dropped), so
/// concurrency limits and response times cover streamed bodies; the body is a
/// [`SentinelBody`](crate::tower::SentinelBody) around the inner one. A call whose future or body is
/// dropped before its outcome is known (a gRPC stream cut before its trailers) counts as
/// complete, but decides nothing for the circuit breakers.
#[derive(Clone, Default)]
pub struct SentinelClientLayer {
    name: Option<Arc<NameFn>>,
}

impl fmt::Debug for SentinelClientLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelClientLayer")
            .field("custom_name", &self.name.is_some())
            .finish()
    }
}

impl SentinelClientLayer {
    /// A layer naming each call `"{METHOD}:{scheme}://{host}[:{port}]"`.
    pub fn new() -> SentinelClientLayer {
        SentinelClientLayer::default()
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
        SentinelClientService::new(inner, self.name.clone())
    }
}
