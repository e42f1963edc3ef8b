//! The layer's service and its response future: admission in `call`, the entry until the
//! response's head, and the rejection of a blocked request.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::request::Parts;
use http::{Request, Response};
use tower_service::Service;

use super::body::{poll_unwinding, Guard, SentinelBody};
use super::config::{Config, IsErrorFn, ParamSource};
use super::naming::{self, default_node, serves_method, RouteNodes};
use super::params::{client_ip, client_text, hash_client, hash_value, no_client_address};
use super::problem::{content_type_of_body, into_problem};
use super::ratelimit::{self, Quotas};
use super::response::{
    answer, classify, is_grpc, is_grpc_request, rejection, retry_after_secs, GRPC_STATUS,
};
use super::view::View;
use crate::node::ResourceNode;
use crate::param::{CallNames, Params, MAX_PARAMS};
use crate::registry::node_by_name;
use crate::{BlockError, Entry};

/// The [`Service`] [`SentinelLayer`](super::SentinelLayer) wraps around an inner service. Clone when the inner
/// service is; `poll_ready` is the inner service's.
pub struct SentinelService<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// What a service and its clones share: the layer's configuration, and the nodes of the route
/// the service serves (each layered service has its own: see [`RouteNodes`]).
pub(super) struct Shared {
    pub(super) config: Config,
    pub(super) routes: RouteNodes,
    /// How requests are admitted, decided once from the configuration.
    path: AdmitPath,
}

/// Which admission a configuration's requests take.
#[derive(Clone, Copy)]
enum AdmitPath {
    /// [`Config::is_plain`]: [`admit_plain`].
    Plain,
    /// Default names, and the client's address as the only parameter: [`admit_client`].
    Client { trusted_proxies: usize },
    /// [`Config::needs_parts`]: [`admit`] with the request's parts.
    Parts,
    /// Anything else: [`admit`] without parts.
    Other,
}

impl AdmitPath {
    fn of(config: &Config) -> AdmitPath {
        if config.is_plain() {
            return AdmitPath::Plain;
        }
        if let (None, None, true, false, [ParamSource::ClientIp { trusted_proxies }]) = (
            &config.resource,
            &config.origin,
            config.system_exempt.is_empty(),
            config.rate_limit_headers,
            config.params.as_slice(),
        ) {
            return AdmitPath::Client {
                trusted_proxies: *trusted_proxies,
            };
        }
        if config.needs_parts() {
            AdmitPath::Parts
        } else {
            AdmitPath::Other
        }
    }
}

impl<S> SentinelService<S> {
    pub(super) fn new(inner: S, config: &Config) -> SentinelService<S> {
        let shared = Arc::new(Shared {
            config: config.clone(),
            routes: RouteNodes::default(),
            path: AdmitPath::of(config),
        });
        SentinelService { inner, shared }
    }
}

impl<S: Clone> Clone for SentinelService<S> {
    fn clone(&self) -> Self {
        SentinelService {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
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
            // The request was a POST: its response may be gRPC.
            post: bool,
            // The RateLimit fields to add to the response (`rate_limit_headers`).
            quotas: Option<Box<Quotas>>,
        },
        /// Waiting for a throttling turn first, or a gRPC method's name to learn from the
        /// response (rare: boxed), until it completes.
        Throttled { future: Option<BoxFuture<Result<Response<SentinelBody<B>>, E>>> },
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<F, B, E> Future for ResponseFuture<F, B, E>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<SentinelBody<B>>, E>;

    #[inline]
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
                post,
                quotas,
            } => {
                // Polled again after completion: the inner future is done, leave it alone.
                let Some(held) = entry.as_ref() else {
                    return Poll::Pending;
                };
                let mut polled = poll_unwinding(held, || future.poll(cx));
                let Poll::Ready(result) = &mut polled else {
                    return Poll::Pending;
                };
                let Some(entry) = entry.take() else {
                    return Poll::Pending;
                };
                // The response is read where it was polled to and moved from there into the
                // output (taken by value, as `finish` takes it, its moves cost 33 instructions
                // more). The guard is `Some` for every `Ok`.
                let guard = match result {
                    Ok(response) => {
                        if let Some(quotas) = quotas.take() {
                            quotas.add_to(response.headers_mut());
                        }
                        Some(guard(response, entry, is_error.take(), *post))
                    }
                    Err(_) => {
                        failed(entry);
                        None
                    }
                };
                polled.map_ok(|response| {
                    response.map(|body| SentinelBody::inner_or_unheld(body, guard))
                })
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

/// The inner service's result, with the entry: held by the body, or exited as an error.
///
/// The entry is marked finished (not abandoned) once the call's outcome is known: at the
/// response's head, or for a gRPC response without `grpc-status` in its head (a stream), at its
/// trailers. Dropped before that, the call counts as abandoned: a half-open probe's place is
/// given back rather than decided (unless the call was already slow: see the module docs).
/// `post`: the request was a `POST`, so the response may be gRPC.
pub(super) fn finish<B, E>(
    result: Result<Response<B>, E>,
    entry: Entry,
    is_error: Option<Arc<IsErrorFn>>,
    post: bool,
) -> Result<Response<SentinelBody<B>>, E> {
    match result {
        Ok(response) => {
            let guard = guard(&response, entry, is_error, post);
            Ok(response.map(|body| SentinelBody::inner(body, guard)))
        }
        Err(error) => {
            failed(entry);
            Err(error)
        }
    }
}

/// The inner service failed: the call is an error, and finished.
fn failed(mut entry: Entry) {
    entry.set_error_mut();
    entry.finish_mut();
    drop(entry);
}

/// The guard a response's body holds ([`finish`]): the entry, marked an error if the response
/// is one, and finished if its head tells the outcome.
#[inline]
fn guard<B>(
    response: &Response<B>,
    mut entry: Entry,
    is_error: Option<Arc<IsErrorFn>>,
    post: bool,
) -> Guard {
    let status = response.status();
    let head = response.headers();
    let grpc = post && is_grpc(head);
    if classify(is_error.as_deref(), status, head, grpc) {
        entry.set_error_mut();
    }
    // A gRPC response's outcome is in its trailers unless its head has it.
    if !grpc || head.contains_key(&GRPC_STATUS) {
        entry.finish_mut();
    }
    Guard {
        entry,
        status,
        grpc,
        is_error,
        outbound: false,
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

    #[inline]
    fn call(&mut self, mut req: Request<ReqBody>) -> Self::Future {
        let Shared {
            config,
            routes,
            path,
        } = &*self.shared;
        // The request is split into parts only for the user's functions, which take `&Parts`
        // (splitting and joining moves the whole request twice); otherwise it stays in place.
        let mut learn = None;
        // What the checks saw, for the RateLimit fields (`rate_limit_headers` only, which only
        // the general paths serve): the plain and per-client paths do not even zero it.
        let mut seen: Option<Seen> = None;
        let admitted = match *path {
            AdmitPath::Plain => admit_plain(View::of_request(&req), routes, &mut learn),
            AdmitPath::Client { trusted_proxies } => admit_client(
                config,
                trusted_proxies,
                View::of_request(&req),
                routes,
                &mut learn,
            ),
            AdmitPath::Parts => {
                let (parts, body) = req.into_parts();
                let view = View::of_parts(&parts);
                let seen = seen.insert(Seen::default());
                let admitted = admit(config, routes, view, Some(&parts), &mut learn, seen);
                req = Request::from_parts(parts, body);
                admitted
            }
            AdmitPath::Other => admit(
                config,
                routes,
                View::of_request(&req),
                None,
                &mut learn,
                seen.insert(Seen::default()),
            ),
        };
        let reservation = match admitted {
            Ok(reservation) => reservation,
            Err(block) => {
                let response = refuse(config, &block, req, seen.as_ref());
                let response = Some(Box::new(response.map(SentinelBody::rejected)));
                return ResponseFuture {
                    state: State::Rejected { response },
                };
            }
        };
        let quotas = if config.rate_limit_headers {
            seen.as_ref().and_then(|seen| seen.quotas(None))
        } else {
            None
        };
        let is_error = config.is_error.clone();
        let post = req.method() == http::Method::POST;
        if reservation.turn() != 0 || learn.is_some() {
            // The service that was polled ready handles this request after the wait; a fresh
            // clone stays behind for the next `poll_ready`.
            let clone = self.inner.clone();
            let mut inner = std::mem::replace(&mut self.inner, clone);
            let future = Box::pin(async move {
                if reservation.turn() != 0 {
                    crate::entry::wait_turn(&reservation).await;
                }
                let entry = reservation.into_entry();
                let mut result = inner.call(req).await;
                if let (Some(quotas), Ok(response)) = (quotas, &mut result) {
                    quotas.add_to(response.headers_mut());
                }
                if let (Some(name), Ok(response)) = (learn, &result)
                    && serves_method(response.status(), response.headers())
                {
                    naming::learn(&name);
                }
                finish(result, entry, is_error, post)
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
                post,
                quotas,
            },
        }
    }
}

/// What [`admit`] saw of a request, for its RateLimit fields: its resource and parameters.
#[derive(Default)]
pub(super) struct Seen {
    node: Option<&'static ResourceNode>,
    hashes: [u64; MAX_PARAMS],
    len: usize,
}

impl Seen {
    /// The request's quotas, read now; `retry_after`: a refusal's `Retry-After` in seconds.
    fn quotas(&self, retry_after: Option<u64>) -> Option<Box<Quotas>> {
        let node = self.node?;
        let hashes = &self.hashes[..self.len.min(MAX_PARAMS)];
        ratelimit::read(node, hashes, crate::clock::now_nanos(), retry_after)
    }
}

/// The response to a request refused with `block`: the custom rejection ([`Config::on_block`],
/// its content type taken from its body if it kept `text/plain` for a JSON body), or the
/// default (a problem, with `problem_details`); with the RateLimit fields if asked for.
#[cold]
#[inline(never)]
fn refuse<B>(
    config: &Config,
    block: &BlockError,
    req: Request<B>,
    seen: Option<&Seen>,
) -> Response<String> {
    let (status, _) = answer(block.kind());
    let quotas = if config.rate_limit_headers {
        let retry_after = (status != http::StatusCode::FORBIDDEN).then(|| retry_after_secs(block));
        seen.and_then(|seen| seen.quotas(retry_after))
    } else {
        None
    };
    let grpc = is_grpc_request(req.method(), req.headers());
    let mut response = match &config.on_block {
        Some(f) => {
            let mut response = f(block, &req.into_parts().0);
            settle_content_type(&mut response);
            response
        }
        None => {
            let mut response = rejection(block, req.method(), req.headers());
            if config.problem_details && !grpc {
                let violated = quotas.as_ref().map_or(&[][..], |q| &q.exhausted[..]);
                into_problem(&mut response, violated);
            }
            response
        }
    };
    if let Some(quotas) = quotas {
        quotas.add_to(response.headers_mut());
    }
    response
}

/// A custom rejection that kept the content type [`block_response`](super::block_response)
/// wrote (`text/plain; charset=utf-8`) but whose body is JSON gets `application/json`: the
/// handler replaced the body and not its type. A content type the handler set is kept.
fn settle_content_type(response: &mut Response<String>) {
    let headers = response.headers();
    if headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.as_bytes())
        != Some(b"text/plain; charset=utf-8")
    {
        return;
    }
    if let Some(content_type) = content_type_of_body(response.body()) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, content_type);
    }
}

/// Runs the checks of a request's resource (inbound unless exempt from system rules, with its
/// parameters and origin). Never
/// waits: a throttled request's turn is in the reservation. `parts` is given when
/// [`Config::needs_parts`]. `learn`: set to a gRPC method's name to learn from the response
/// (see [`naming::learn`]). `routes`: the service's nodes of its route. `seen`: where the
/// request's resource and parameters are kept, with `rate_limit_headers`.
pub(super) fn admit(
    config: &Config,
    routes: &RouteNodes,
    view: View<'_>,
    parts: Option<&Parts>,
    learn: &mut Option<Box<str>>,
    seen: &mut Seen,
) -> Result<crate::entry::Reservation, BlockError> {
    let inbound = config.system_exempt.is_empty() || !config.system_exempt(view);
    let mut hashes = [0; crate::param::MAX_PARAMS];
    for (source, slot) in config.params.iter().zip(&mut hashes) {
        let hash = match (source, parts) {
            (ParamSource::Fn(f), Some(parts)) => hash_value(f(parts).as_deref()),
            (ParamSource::Fn(_), None) => hash_value(None),
            (ParamSource::ClientIp { trusted_proxies }, _) => {
                match client_ip(view, *trusted_proxies) {
                    Some(ip) => hash_client(ip, config.ipv6_prefix()),
                    None => {
                        no_client_address(view);
                        hash_value(None)
                    }
                }
            }
        };
        *slot = hash;
    }
    let origin = config.origin.as_ref().zip(parts).and_then(|(f, p)| f(p));
    let mut params = Params::of(&hashes[..config.params.len().min(hashes.len())]);
    if inbound {
        params = params.inbound();
    }
    let names = origin.map(|origin| CallNames {
        origin: Some(Cow::Owned(origin)),
        endpoint: None,
    });
    if let Some(names) = &names {
        params = params.with_names(names);
    }
    let node = match (&config.resource, parts) {
        (Some(f), Some(parts)) => node_by_name(&f(parts)),
        _ => default_node(view, learn, routes),
    };
    if config.names_params && !node.knows_param_names() {
        crate::registry::learn_param_names(node, &config.param_names);
    }
    if config.rate_limit_headers {
        *seen = Seen {
            node: Some(node),
            hashes,
            len: config.params.len(),
        };
    }
    // Cancellable: a future dropped before the call's outcome is known (see `finish`) abandons it.
    let reserved = crate::entry::reserve_with(node, 1, true, &params);
    if let Err(block) = &reserved {
        note_blocked_value(config, view, parts, block);
    }
    reserved
}

/// [`admit`] for a [plain](Config::is_plain) configuration: the default name, no parameters
/// or origin, every request inbound.
#[inline]
fn admit_plain(
    view: View<'_>,
    routes: &RouteNodes,
    learn: &mut Option<Box<str>>,
) -> Result<crate::entry::Reservation, BlockError> {
    let node = default_node(view, learn, routes);
    // Cancellable, as in `admit`. No parameter, so no blocked value to note.
    crate::entry::reserve_inbound(node)
}

/// [`admit`] for a configuration whose only parameter is the client's address
/// ([`AdmitPath::Client`]): the default name, no origin, every request inbound.
#[inline]
fn admit_client(
    config: &Config,
    trusted_proxies: usize,
    view: View<'_>,
    routes: &RouteNodes,
    learn: &mut Option<Box<str>>,
) -> Result<crate::entry::Reservation, BlockError> {
    let hash = match client_ip(view, trusted_proxies) {
        Some(ip) => hash_client(ip, config.ipv6_prefix()),
        None => {
            no_client_address(view);
            hash_value(None)
        }
    };
    let hashes = [hash];
    let params = Params::of(&hashes).inbound();
    let node = default_node(view, learn, routes);
    // Its one parameter is named `client_ip` (`SentinelLayer::client_ip`).
    if !node.knows_param_names() {
        crate::registry::learn_param_names(node, &config.param_names);
    }
    let reserved = crate::entry::reserve_with(node, 1, true, &params);
    if let Err(block) = &reserved {
        note_blocked_value(config, view, None, block);
    }
    reserved
}

/// For a request a hotspot rule blocked: remembers the text of the blocked parameter's value
/// (the client's address, a custom parameter's string) by its hash, so that the values a rule
/// blocks most can be shown as text (the call path keeps only hashes). Blocked requests only.
#[cold]
fn note_blocked_value(config: &Config, view: View<'_>, parts: Option<&Parts>, block: &BlockError) {
    // A hotspot rule's block, or a cluster hotspot rule's (both name the parameter).
    if !matches!(
        block.kind(),
        crate::BlockKind::HotParam | crate::BlockKind::Cluster
    ) {
        return;
    }
    let Some(source) = block.param_index().and_then(|i| config.params.get(i)) else {
        return;
    };
    let text = match (source, parts) {
        (ParamSource::Fn(f), Some(parts)) => f(parts),
        (ParamSource::Fn(_), None) => None,
        (ParamSource::ClientIp { trusted_proxies }, _) => {
            client_ip(view, *trusted_proxies).map(|ip| client_text(ip, config.ipv6_prefix()))
        }
    };
    if let Some(text) = text {
        crate::kinds::hotspot::hot_top::note_text(hash_value(Some(&text)), &text);
    }
}
