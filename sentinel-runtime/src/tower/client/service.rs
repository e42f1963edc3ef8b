//! The client layer's service and its response future: the call's resource and admission in
//! `call`, the refusal of a blocked call, and the entry handed to the response body.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use std::borrow::Cow;

use http::{Method, Request, Response, Uri};
use tower_service::Service;

use crate::entry::Reservation;
use crate::outbound::{default_node, InFlight, Key, Target};
use crate::param::{CallNames, Params};
use crate::registry::node_by_name;
use crate::tower::body::{poll_unwinding, Guard, SentinelBody};
use crate::tower::response::{classify_outbound, is_grpc, GRPC_STATUS};
use crate::{BlockError, Entry, ResourceNode};

/// The error of a [`SentinelClientService`]: the inner service's error, or a
/// [`BlockError`](crate::BlockError) for a call a rule refused. The same type as
/// `tower::BoxError`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Names the resource of a call from its request's head.
pub(super) type NameFn = dyn Fn(&http::request::Parts) -> String + Send + Sync;

/// The [`Service`] [`SentinelClientLayer`](super::SentinelClientLayer) wraps around a client.
/// Clone when the client is; `poll_ready` is the client's.
pub struct SentinelClientService<S> {
    inner: S,
    name: Option<Arc<NameFn>>,
    /// A call dropped before its answer counts as an error (see
    /// [`SentinelClientLayer::abandoned_is_error`](super::SentinelClientLayer::abandoned_is_error)).
    abandoned_is_error: bool,
}

impl<S> SentinelClientService<S> {
    pub(super) fn new(
        inner: S,
        name: Option<Arc<NameFn>>,
        abandoned_is_error: bool,
    ) -> SentinelClientService<S> {
        SentinelClientService {
            inner,
            name,
            abandoned_is_error,
        }
    }

    /// The wrapped client.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: Clone> Clone for SentinelClientService<S> {
    fn clone(&self) -> Self {
        SentinelClientService {
            inner: self.inner.clone(),
            name: self.name.clone(),
            abandoned_is_error: self.abandoned_is_error,
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for SentinelClientService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelClientService")
            .field("inner", &self.inner)
            .field("custom_name", &self.name.is_some())
            .field("abandoned_is_error", &self.abandoned_is_error)
            .finish()
    }
}

/// The default name's pieces of a request to `uri` with `method`.
#[inline]
pub(super) fn target_of<'a>(method: &'a Method, uri: &'a Uri) -> Target<'a> {
    let authority = uri.authority();
    Target {
        method: method.as_str(),
        scheme: uri.scheme_str(),
        host: authority.map(http::uri::Authority::host),
        port: authority.and_then(http::uri::Authority::port_u16),
    }
}

/// The node of `req`'s default name, found by its URI's scheme and authority as written.
#[inline]
fn default_node_of<B>(req: &Request<B>) -> &'static ResourceNode {
    let (method, uri) = (req.method(), req.uri());
    let key = Key {
        method,
        scheme: uri.scheme_str().unwrap_or(""),
        authority: uri.authority().map_or("", http::uri::Authority::as_str),
        port: None,
    };
    default_node(&key, || target_of(method, uri))
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pin_project_lite::pin_project! {
    /// The response future of [`SentinelClientService`]: the refusal of a blocked call, or the
    /// client's future with the call's entry.
    pub struct ClientResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        /// Blocked: the error, taken once.
        Blocked { error: Option<BoxError> },
        /// Admitted: the client's future, and the entry until it completes (dropped before
        /// that, the call was abandoned: see [`InFlight`]).
        Calling {
            #[pin]
            future: F,
            entry: InFlight,
            // The request was a POST: its response may be gRPC.
            post: bool,
        },
        /// Waiting for a throttling turn first (rare: boxed), then calling.
        Throttled { future: Option<BoxFuture<Result<Response<SentinelBody<B>>, BoxError>>> },
    }
}

impl<F, B> fmt::Debug for ClientResponseFuture<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientResponseFuture")
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ClientResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<SentinelBody<B>>, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Blocked { error } => match error.take() {
                Some(error) => Poll::Ready(Err(error)),
                // Polled again after completion: stay pending, as a fused future may.
                None => Poll::Pending,
            },
            StateProj::Calling {
                future,
                entry,
                post,
            } => {
                let Some(held) = entry.entry() else {
                    return Poll::Pending;
                };
                // A panic in the client counts as an error, whoever drops the future later.
                let result = std::task::ready!(poll_unwinding(held, || future.poll(cx)));
                let Some(entry) = entry.answered() else {
                    return Poll::Pending;
                };
                Poll::Ready(finish(result, entry, *post))
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

/// The client's result, with the call's entry: handed to the response body, or exited as an
/// error. The entry is marked finished once the call's outcome is known: at the response's
/// head, or for a gRPC response without `grpc-status` in its head, at its trailers.
fn finish<B, E: Into<BoxError>>(
    result: Result<Response<B>, E>,
    mut entry: Entry,
    post: bool,
) -> Result<Response<SentinelBody<B>>, BoxError> {
    match result {
        Ok(response) => {
            let status = response.status();
            let head = response.headers();
            let grpc = post && is_grpc(head);
            if classify_outbound(status, head, grpc) {
                entry.set_error_mut();
            }
            if !grpc || head.contains_key(&GRPC_STATUS) {
                entry.finish_mut();
            }
            let guard = Guard {
                entry,
                status,
                grpc,
                is_error: None,
                outbound: true,
            };
            Ok(response.map(|body| SentinelBody::inner(body, guard)))
        }
        Err(error) => {
            // The call failed (a transport error, a timeout): an error, and finished.
            entry.set_error_mut();
            entry.finish_mut();
            drop(entry);
            Err(error.into())
        }
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for SentinelClientService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    ReqBody: Send + 'static,
    ResBody: 'static,
{
    type Response = Response<SentinelBody<ResBody>>;
    type Error = BoxError;
    type Future = ClientResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // The name first: a user's function that panics finds nothing reserved.
        let (node, req) = match &self.name {
            None => (default_node_of(&req), req),
            Some(name) => named(name.as_ref(), req),
        };
        let post = req.method() == Method::POST;
        // The endpoint (for outlier rules): the request's authority (its user info is left out
        // where an outlier rule reads it).
        let names = CallNames {
            origin: None,
            endpoint: req.uri().authority().map(|a| Cow::Borrowed(a.as_str())),
        };
        // Cancellable: a future dropped before the call's outcome is known abandons it.
        let params = Params::NONE.with_names(&names);
        let reservation = match crate::entry::reserve_with(node, 1, true, &params) {
            Ok(reservation) => reservation,
            Err(block) => return blocked(block),
        };
        if reservation.turn() != 0 {
            return self.throttled(reservation, req, post);
        }
        let entry = reservation.into_entry();
        // A client whose `call` panics: `entry` is dropped by the unwinding, as an error.
        let future = self.inner.call(req);
        calling(future, entry, post, self.abandoned_is_error)
    }
}

/// The future of an admitted call: `future`, the client's, with the call's entry.
fn calling<F, B>(
    future: F,
    entry: Entry,
    post: bool,
    abandoned_is_error: bool,
) -> ClientResponseFuture<F, B> {
    ClientResponseFuture {
        state: State::Calling {
            future,
            entry: InFlight::new(entry, abandoned_is_error),
            post,
        },
    }
}

impl<S> SentinelClientService<S> {
    /// The future of a call that waits for its throttling turn before it is sent.
    #[cold]
    fn throttled<ReqBody, ResBody>(
        &mut self,
        reservation: Reservation,
        req: Request<ReqBody>,
        post: bool,
    ) -> ClientResponseFuture<S::Future, ResBody>
    where
        S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        ReqBody: Send + 'static,
        ResBody: 'static,
    {
        // The client that was polled ready sends this request after the wait; a fresh clone
        // stays behind for the next `poll_ready`.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let abandoned_is_error = self.abandoned_is_error;
        let future = Box::pin(async move {
            // Dropped while it waits, the call was never sent: no verdict.
            crate::entry::wait_turn(&reservation).await;
            let entry = reservation.into_entry();
            let future = inner.call(req);
            calling::<_, ResBody>(future, entry, post, abandoned_is_error).await
        });
        ClientResponseFuture {
            state: State::Throttled {
                future: Some(future),
            },
        }
    }
}

/// The node of a request named by the user's function (which reads the request's head).
fn named<B>(name: &NameFn, req: Request<B>) -> (&'static ResourceNode, Request<B>) {
    let (parts, body) = req.into_parts();
    let node = node_by_name(&name(&parts));
    (node, Request::from_parts(parts, body))
}

/// The future of a refused call: its error is the [`BlockError`], and nothing is sent.
#[cold]
fn blocked<F, B>(block: BlockError) -> ClientResponseFuture<F, B> {
    ClientResponseFuture {
        state: State::Blocked {
            error: Some(Box::new(block)),
        },
    }
}
