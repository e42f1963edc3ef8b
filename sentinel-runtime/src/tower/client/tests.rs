//! The client layer's names and its reading of responses, on a client that answers at once.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use axum::body::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body::{Body, Frame};
use tower_layer::Layer;
use tower_service::Service;

use super::service::target_of;
use super::{BoxError, SentinelClientLayer};
use crate::metrics;
use crate::tower::SentinelBody;

/// Polls `future` once: the client below answers at once, and a blocked call is refused at once.
fn now<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future should be ready at once"),
    }
}

/// A body of given frames (data, then perhaps trailers).
struct Frames(VecDeque<Frame<Bytes>>);

impl Body for Frames {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(self.0.pop_front().map(Ok))
    }
}

/// Reads `body` to its end.
fn drain(body: SentinelBody<Frames>) {
    let mut body = pin!(body);
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(frame)) = body.as_mut().poll_frame(&mut cx) {
        frame.unwrap();
    }
}

/// A client that answers every request with what `answer` makes of it.
#[derive(Clone)]
struct Answering<F>(F);

impl<F, B> Service<Request<B>> for Answering<F>
where
    F: FnMut(&Request<B>) -> Result<Response<Frames>, std::io::Error>,
{
    type Response = Response<Frames>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Response<Frames>, std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        std::future::ready((self.0)(&req))
    }
}

fn response(
    status: u16,
    head: &[(&str, &str)],
    trailers: Option<(&str, &str)>,
) -> Response<Frames> {
    let mut frames = VecDeque::from([Frame::data(Bytes::from_static(b"payload"))]);
    if let Some((name, value)) = trailers {
        let mut map = HeaderMap::new();
        map.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        frames.push_back(Frame::trailers(map));
    }
    let mut response = Response::new(Frames(frames));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    for (name, value) in head {
        response.headers_mut().insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    response
}

/// Sends one `method` request to `uri` through the layer to a client answering `answer`, reads
/// the body to its end: whether the call succeeded.
fn call(
    uri: &str,
    method: Method,
    answer: Result<Response<Frames>, std::io::Error>,
) -> Result<(), BoxError> {
    let answer = std::sync::Arc::new(std::sync::Mutex::new(Some(answer)));
    let client = Answering(move |_: &Request<()>| answer.lock().unwrap().take().unwrap());
    let mut client = SentinelClientLayer::new().layer(client);
    let request = Request::builder().method(method).uri(uri).body(()).unwrap();
    let response = now(client.call(request))?;
    drain(response.into_body());
    Ok(())
}

fn errors(resource: &str) -> (u64, u64, u64) {
    let s = metrics::snapshot(resource).unwrap();
    (s.pass_total, s.complete_total, s.error_total)
}

#[test]
fn a_call_is_named_by_method_scheme_host_and_port_never_by_its_user_or_path() {
    let name = |method: Method, uri: &str| {
        let uri: Uri = uri.parse().unwrap();
        target_of(&method, &uri).name()
    };
    assert_eq!(
        name(Method::GET, "http://inventory:8080/items/7?x=1"),
        "GET:http://inventory:8080"
    );
    assert_eq!(
        name(Method::POST, "https://user:secret@pay.test/charge"),
        "POST:https://pay.test"
    );
    assert_eq!(
        name(Method::GET, "http://inventory:80/"),
        "GET:http://inventory"
    );
    assert_eq!(
        name(Method::PUT, "http://[::1]:9000/a"),
        "PUT:http://[::1]:9000"
    );
    // A tonic channel's request before the channel adds its origin.
    assert_eq!(name(Method::POST, "/test.Greeter/Echo"), "POST:<unknown>");
    let custom = Method::from_bytes(b"PURGE").unwrap();
    assert_eq!(name(custom, "http://cache:81/x"), "PURGE:http://cache:81");
}

#[test]
fn a_5xx_or_a_failed_call_is_an_error_and_a_4xx_is_not() {
    let ok = "GET:http://client-unit-classify:1";
    let uri = "http://client-unit-classify:1/a";
    call(uri, Method::GET, Ok(response(200, &[], None))).unwrap();
    assert_eq!(errors(ok), (1, 1, 0));
    call(uri, Method::GET, Ok(response(404, &[], None))).unwrap();
    assert_eq!(errors(ok), (2, 2, 0), "a 4xx is the caller's");
    call(uri, Method::GET, Ok(response(503, &[], None))).unwrap();
    assert_eq!(errors(ok), (3, 3, 1));
    let failed = call(uri, Method::GET, Err(std::io::Error::other("reset")));
    assert_eq!(
        failed.unwrap_err().to_string(),
        "reset",
        "the client's own error"
    );
    assert_eq!(errors(ok), (4, 4, 2));
}

#[test]
fn a_grpc_status_other_than_0_is_an_error_in_the_head_or_the_trailers() {
    let resource = "POST:http://client-unit-grpc:1";
    let uri = "http://client-unit-grpc:1/test.Greeter/Echo";
    let grpc = ("content-type", "application/grpc");
    let answers = [
        (response(200, &[grpc], Some(("grpc-status", "0"))), 0),
        (response(200, &[grpc], Some(("grpc-status", "5"))), 1),
        (response(200, &[grpc, ("grpc-status", "14")], None), 1),
        (response(200, &[grpc, ("grpc-status", "0")], None), 0),
        // Not gRPC (no gRPC content type): the header means nothing.
        (response(200, &[("grpc-status", "14")], None), 0),
    ];
    let mut expected = 0;
    for (i, (answer, error)) in answers.into_iter().enumerate() {
        call(uri, Method::POST, Ok(answer)).unwrap();
        expected += error;
        assert_eq!(errors(resource).2, expected, "answer {i}");
    }
}

#[test]
fn the_entry_is_held_until_the_body_ends() {
    let resource = "GET:http://client-unit-held:1";
    let client = Answering(|_: &Request<()>| Ok(response(200, &[], None)));
    let mut client = SentinelClientLayer::new().layer(client);
    let request = Request::get("http://client-unit-held:1/").body(()).unwrap();
    let response = now(client.call(request)).unwrap();
    assert_eq!(errors(resource), (1, 0, 0), "inside while the body is read");
    drain(response.into_body());
    assert_eq!(errors(resource), (1, 1, 0));
}

#[test]
fn a_name_function_that_panics_reserves_nothing() {
    let client = Answering(|_: &Request<()>| Ok(response(200, &[], None)));
    let mut client = SentinelClientLayer::new()
        .name(|_| panic!("the user's name function"))
        .layer(client);
    let request = Request::get("http://client-unit-panic:1/")
        .body(())
        .unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(client.call(request));
    }));
    assert!(caught.is_err());
    assert!(metrics::snapshot("GET:http://client-unit-panic:1").is_none());
}
