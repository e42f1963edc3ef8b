//! The response body that holds a request's entry until the body ends.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::StatusCode;
use http_body::{Body, Frame, SizeHint};

use super::config::IsErrorFn;
use super::response::{classify, classify_outbound};
use crate::Entry;

/// The entry of a request whose response is being sent.
pub(super) struct Guard {
    pub(super) entry: Entry,
    pub(super) status: StatusCode,
    /// The response is gRPC.
    pub(super) grpc: bool,
    pub(super) is_error: Option<Arc<IsErrorFn>>,
    /// The response answers a call this process made (the client layer): its trailers are read
    /// by [`classify_outbound`].
    pub(super) outbound: bool,
}

pin_project_lite::pin_project! {
    /// The response body of [`SentinelService`](super::SentinelService) and
    /// [`SentinelClientService`](super::SentinelClientService): the inner service's body,
    /// holding the request's entry until the body ends or is dropped; or (server side) the
    /// text of a rejection.
    pub struct SentinelBody<B> {
        #[pin]
        body: Option<B>,
        guard: Option<Guard>,
        text: Option<String>,
    }
}

impl<B> SentinelBody<B> {
    pub(super) fn inner(body: B, guard: Guard) -> SentinelBody<B> {
        SentinelBody {
            body: Some(body),
            guard: Some(guard),
            text: None,
        }
    }

    /// [`inner`](Self::inner), holding `guard` if there is one.
    #[inline]
    pub(super) fn inner_or_unheld(body: B, guard: Option<Guard>) -> SentinelBody<B> {
        SentinelBody {
            body: Some(body),
            guard,
            text: None,
        }
    }

    pub(super) fn rejected(text: String) -> SentinelBody<B> {
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
                if let Some(mut guard) = this.guard.take() {
                    guard.entry.finish_mut();
                }
            }
            Some(Err(_)) => {
                if let Some(mut guard) = this.guard.take() {
                    guard.entry.set_error_mut();
                    guard.entry.finish_mut();
                }
            }
            Some(Ok(frame)) => {
                if let (Some(trailers), Some(guard)) = (frame.trailers_ref(), this.guard.as_mut()) {
                    // The user's `is_error` may panic: an error, whoever drops the body later.
                    let error = if guard.outbound {
                        classify_outbound(guard.status, trailers, guard.grpc)
                    } else {
                        poll_unwinding(&guard.entry, || {
                            classify(
                                guard.is_error.as_deref(),
                                guard.status,
                                trailers,
                                guard.grpc,
                            )
                        })
                    };
                    if error {
                        guard.entry.set_error_mut();
                    }
                    guard.entry.finish_mut();
                }
                if body.is_end_stream() {
                    // The last frame: exit now, before the transport flushes it.
                    if let Some(mut guard) = this.guard.take() {
                        guard.entry.finish_mut();
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

/// Runs `poll` (user code: the inner service or body); if it panics, `entry` counts as an
/// error and as finished, for whoever catches the panic drops it after the unwinding (a
/// panic-catching layer outside this one).
#[inline]
pub(super) fn poll_unwinding<T>(entry: &Entry, poll: impl FnOnce() -> T) -> T {
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
