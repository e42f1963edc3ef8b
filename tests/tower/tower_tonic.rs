//! The tower layer in front of a real tonic server (HTTP/2 on 127.0.0.1:0), called by a real
//! tonic client: gRPC status codes for each kind of block, the method path as the resource,
//! gRPC errors counted for circuit breakers, and every entry exited. The service is written by
//! hand with a bytes codec (no protobuf compiler needed).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut};
use http::uri::PathAndQuery;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, AuthorityRule, CircuitBreakerRule, FlowRule};
use sentinel_runtime::tower::SentinelLayer;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Endpoint, Server};
use tonic::{Code, Status};
use tower::Service;

/// Raw bytes as messages (also the codec of `outbound_grpc`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Bytes;

impl Codec for Bytes {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Bytes;
    type Decoder = Bytes;

    fn encoder(&mut self) -> Bytes {
        Bytes
    }

    fn decoder(&mut self) -> Bytes {
        Bytes
    }
}

impl Encoder for Bytes {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Bytes {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
}

/// `Echo`: returns the request; a request of `fail` fails with UNAVAILABLE.
struct Echo;

impl tonic::server::UnaryService<Vec<u8>> for Echo {
    type Response = Vec<u8>;
    type Future = std::future::Ready<Result<tonic::Response<Vec<u8>>, Status>>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        let body = request.into_inner();
        std::future::ready(if body == b"fail" {
            Err(Status::unavailable("the backend is down"))
        } else {
            Ok(tonic::Response::new(body))
        })
    }
}

/// The service `test.Greeter` with one unary method, `Echo` (also the downstream of
/// `outbound_grpc`).
#[derive(Clone)]
pub(crate) struct Greeter;

impl tonic::server::NamedService for Greeter {
    const NAME: &'static str = "test.Greeter";
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Service<http::Request<tonic::body::Body>> for Greeter {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(Bytes);
            Ok(grpc.unary(Echo, request).await)
        })
    }
}

pub(crate) const METHOD: &str = "/test.Greeter/Echo";
const RESOURCE: &str = "POST:/test.Greeter/Echo";

/// Serves `Greeter` behind the layer until the test's runtime ends; returns a connected client.
async fn serve(layer: SentinelLayer) -> tonic::client::Grpc<tonic::transport::Channel> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(Greeter)
            .serve_with_incoming(incoming),
    );
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    tonic::client::Grpc::new(channel)
}

/// One call of `Echo` with `body` (and an `x-app` origin if given): its reply or status.
async fn echo(
    client: &mut tonic::client::Grpc<tonic::transport::Channel>,
    body: &[u8],
    app: Option<&str>,
) -> Result<Vec<u8>, Status> {
    client.ready().await.unwrap();
    let mut request = tonic::Request::new(body.to_vec());
    if let Some(app) = app {
        request.metadata_mut().insert("x-app", app.parse().unwrap());
    }
    let call = client.unary(request, PathAndQuery::from_static(METHOD), Bytes);
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("a reply within 10 s")
        .map(tonic::Response::into_inner)
}

fn reset() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_authority_rules(vec![]).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_calls_get_grpc_codes_for_every_kind_of_block_and_exit_once() {
    let clock = MockClock::install();
    reset();
    clock.advance(Duration::from_secs(1));
    let layer = SentinelLayer::new()
        .origin(|parts| parts.headers.get("x-app")?.to_str().ok().map(str::to_owned));
    let mut client = serve(layer).await;

    // A flow rule on the method: RESOURCE_EXHAUSTED once it is spent.
    rules::load_flow_rules(vec![FlowRule::qps(RESOURCE, 2.0)]).unwrap();
    assert_eq!(echo(&mut client, b"a", None).await.unwrap(), b"a");
    assert_eq!(echo(&mut client, b"b", None).await.unwrap(), b"b");
    let limited = echo(&mut client, b"c", None).await.unwrap_err();
    assert_eq!(limited.code(), Code::ResourceExhausted, "{limited:?}");
    assert_eq!(limited.message(), "Too Many Requests; retry after 1 s");
    rules::load_flow_rules(vec![]).unwrap();

    // An authority rule: PERMISSION_DENIED for the denied origin only.
    rules::load_authority_rules(vec![AuthorityRule::deny(RESOURCE, ["crawler"])]).unwrap();
    let denied = echo(&mut client, b"d", Some("crawler")).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    assert_eq!(echo(&mut client, b"e", Some("shop")).await.unwrap(), b"e");
    rules::load_authority_rules(vec![]).unwrap();

    // UNAVAILABLE replies count as errors: an error-count breaker opens on them, and then the
    // layer answers UNAVAILABLE itself.
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(RESOURCE, 2)
        .min_requests(2)
        .recovery(Duration::from_secs(10))])
    .unwrap();
    clock.advance(Duration::from_secs(1));
    for _ in 0..2 {
        let failed = echo(&mut client, b"fail", None).await.unwrap_err();
        assert_eq!(failed.message(), "the backend is down");
    }
    let open = echo(&mut client, b"f", None).await.unwrap_err();
    assert_eq!(open.code(), Code::Unavailable, "{open:?}");
    assert_eq!(open.message(), "Service Unavailable; retry after 10 s");

    let stats = metrics::snapshot(RESOURCE).unwrap();
    assert_eq!(stats.concurrency, 0, "every entry exited: {stats:?}");
    assert_eq!(stats.pass_total, stats.complete_total, "{stats:?}");
    assert_eq!(stats.error_total, 2, "{stats:?}");
    assert_eq!(
        (
            stats.block_total_by_rule.flow,
            stats.block_total_by_rule.authority,
            stats.block_total_by_rule.circuit_breaker
        ),
        (1, 1, 1)
    );
    reset();
}
