//! `SentinelClientLayer` around a tonic `Channel`, calling a real tonic server (HTTP/2 on
//! 127.0.0.1:0, no layer of its own): gRPC errors count for the breaker whether their status
//! comes in the headers (a trailers-only answer) or the trailers, a success's status in the
//! trailers ends its entry, and a refused call's `Status` carries the `BlockError`.

use std::error::Error as _;
use std::time::Duration;

use http::uri::PathAndQuery;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule};
use sentinel_runtime::tower::{Layer, SentinelClientLayer, SentinelClientService};
use sentinel_runtime::{metrics, BlockError, BlockKind};
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Status};

use crate::making_resources;
use crate::tower_tonic::{Bytes, Greeter, METHOD};

/// `Count`: answers a stream of one message, then (for a request of `fail`) INTERNAL in the
/// trailers.
struct Count;

type Messages = tonic::codegen::tokio_stream::Iter<std::vec::IntoIter<Result<Vec<u8>, Status>>>;

impl tonic::server::ServerStreamingService<Vec<u8>> for Count {
    type Response = Vec<u8>;
    type ResponseStream = Messages;
    type Future = std::future::Ready<Result<tonic::Response<Messages>, Status>>;

    fn call(&mut self, request: tonic::Request<Vec<u8>>) -> Self::Future {
        let mut messages = vec![Ok(b"one".to_vec())];
        if request.into_inner() == b"fail" {
            messages.push(Err(Status::internal("broke half-way")));
        }
        let stream = tonic::codegen::tokio_stream::iter(messages);
        std::future::ready(Ok(tonic::Response::new(stream)))
    }
}

/// The service `test.Streamer` with one server-streaming method, `Count`.
#[derive(Clone)]
struct Streamer;

impl tonic::server::NamedService for Streamer {
    const NAME: &'static str = "test.Streamer";
}

impl tower::Service<http::Request<tonic::body::Body>> for Streamer {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(Bytes);
            Ok(grpc.server_streaming(Count, request).await)
        })
    }
}

const COUNT: &str = "/test.Streamer/Count";

type Guarded = tonic::client::Grpc<SentinelClientService<Channel>>;

/// Serves `Greeter` and `Streamer` (no layer) until the test's runtime ends; a client through the client
/// layer, with the server as its origin, and the calls' resource name.
async fn serve() -> (Guarded, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        Server::builder()
            .add_service(Greeter)
            .add_service(Streamer)
            .serve_with_incoming(incoming),
    );
    let origin = format!("http://{addr}");
    let channel = Endpoint::from_shared(origin.clone())
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let guarded = SentinelClientLayer::new().layer(channel);
    // The origin, so that the layer sees the host (a channel adds it after its layers).
    let client = tonic::client::Grpc::with_origin(guarded, origin.parse().unwrap());
    (client, format!("POST:{origin}"))
}

async fn echo(client: &mut Guarded, body: &[u8]) -> Result<Vec<u8>, Status> {
    client.ready().await.map_err(Status::from_error)?;
    let call = client.unary(
        tonic::Request::new(body.to_vec()),
        PathAndQuery::from_static(METHOD),
        Bytes,
    );
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("a reply within 10 s")
        .map(tonic::Response::into_inner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_errors_open_a_breaker_and_a_refused_call_carries_its_block() {
    let clock = MockClock::install();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    clock.advance(Duration::from_secs(1));
    let (mut client, resource) = serve().await;
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(&resource, 2)
        .min_requests(2)
        .recovery(Duration::from_secs(10))])
    .unwrap();

    // A success: `grpc-status: 0` in the trailers, the entry ended there.
    assert_eq!(echo(&mut client, b"a").await.unwrap(), b"a");
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!(
        (stats.complete_total, stats.error_total),
        (1, 0),
        "{stats:?}"
    );

    // UNAVAILABLE (a trailers-only answer: the status in the headers), twice: errors.
    for _ in 0..2 {
        let failed = echo(&mut client, b"fail").await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
    }
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!(
        (stats.complete_total, stats.error_total),
        (3, 2),
        "{stats:?}"
    );

    // The breaker is open: the call is refused before it is sent. tonic turns the layer's
    // error into a `Status` (UNKNOWN) whose source is the `BlockError`.
    let refused = echo(&mut client, b"b").await.unwrap_err();
    let block = refused
        .source()
        .and_then(|e| e.downcast_ref::<BlockError>())
        .unwrap_or_else(|| panic!("a BlockError in {refused:?}"));
    assert_eq!(block.kind(), BlockKind::CircuitBreaker);
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!((stats.pass_total, stats.block_total), (3, 1), "{stats:?}");
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_error_in_the_trailers_counts_and_the_entry_lasts_until_them() {
    let _making = making_resources().await;
    let (mut client, resource) = serve().await;
    for (request, errors) in [(&b"ok"[..], 0), (&b"fail"[..], 1)] {
        client.ready().await.unwrap();
        let call = client.server_streaming(
            tonic::Request::new(request.to_vec()),
            PathAndQuery::from_static(COUNT),
            Bytes,
        );
        let mut stream = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("an answer within 10 s")
            .unwrap()
            .into_inner();
        let before = metrics::snapshot(&resource).unwrap();
        assert_eq!(
            before.pass_total,
            before.complete_total + 1,
            "inside: {before:?}"
        );
        assert_eq!(
            stream.message().await.unwrap().as_deref(),
            Some(&b"one"[..])
        );
        let end = stream.message().await;
        assert_eq!(end.is_err(), errors == 1, "{end:?}");
        let after = metrics::snapshot(&resource).unwrap();
        assert_eq!(
            after.complete_total, after.pass_total,
            "ended at the trailers: {after:?}"
        );
        assert_eq!(after.error_total, errors, "{after:?}");
    }
}
