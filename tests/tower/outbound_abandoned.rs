//! A call its caller gives up on (its own `tokio::time::timeout` drops the future) counts as
//! an error for outbound resources, through the tower client layer and the reqwest middleware,
//! against a real downstream on 127.0.0.1:0 that accepts and never answers: for breakers and
//! outlier rules; the setting that turns it off; telling a block from other errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::reqwest::middleware::{ClientBuilder, ClientWithMiddleware};
use sentinel_runtime::reqwest::{reqwest, SentinelMiddleware};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, OutlierRule};
use sentinel_runtime::tower::{Layer, SentinelClientLayer, SentinelClientService};
use sentinel_runtime::{metrics, outlier, BlockKind};
use tower::ServiceExt;

use crate::outbound_support::{silent, Silent};

/// The caller's own bound on each call.
const GIVE_UP: Duration = Duration::from_millis(50);

type Body = Empty<bytes::Bytes>;
type Guarded = SentinelClientService<Client<HttpConnector, Body>>;

fn tower_client(layer: SentinelClientLayer) -> Guarded {
    layer.layer(Client::builder(TokioExecutor::new()).build_http())
}

fn reqwest_client(middleware: SentinelMiddleware) -> ClientWithMiddleware {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    ClientBuilder::new(client).with(middleware).build()
}

/// How one call through a client ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// The caller's timeout dropped it.
    GaveUp,
    /// Refused by a rule of this kind.
    Blocked(BlockKind),
    /// Anything else (an answer, or another error).
    Other(String),
}

async fn call_tower(client: &Guarded, url: &str) -> Ended {
    let request = Request::get(url).body(Body::new()).unwrap();
    match tokio::time::timeout(GIVE_UP, client.clone().oneshot(request)).await {
        Err(_) => Ended::GaveUp,
        Ok(Err(e)) => match sentinel_runtime::tower::block_error(&e) {
            Some(block) => Ended::Blocked(block.kind()),
            None => Ended::Other(e.to_string()),
        },
        Ok(Ok(response)) => Ended::Other(response.status().to_string()),
    }
}

async fn call_reqwest(client: &ClientWithMiddleware, url: &str) -> Ended {
    match tokio::time::timeout(GIVE_UP, client.get(url).send()).await {
        Err(_) => Ended::GaveUp,
        Ok(Err(e)) => match sentinel_runtime::reqwest::block_error(&e) {
            Some(block) => Ended::Blocked(block.kind()),
            None => Ended::Other(e.to_string()),
        },
        Ok(Ok(response)) => Ended::Other(response.status().to_string()),
    }
}

/// The breaker: 5 errors in a 10 s window open it.
fn five_errors(resource: &str) -> CircuitBreakerRule {
    CircuitBreakerRule::error_count(resource, 5)
        .window(Duration::from_secs(10), 10)
        .recovery(Duration::from_secs(10))
}

/// Five calls the caller gives up on; then whether the sixth was refused without reaching
/// the server. Time on the MockClock follows each call's bound.
async fn five_abandoned_then_one(
    clock: &MockClock,
    server: &Silent,
    mut call: impl AsyncFnMut() -> Ended,
) -> Ended {
    for i in 0..5 {
        assert_eq!(call().await, Ended::GaveUp, "call {i}");
        clock.advance(GIVE_UP);
    }
    assert_eq!(
        server.accepted(),
        5,
        "each abandoned call reached the server"
    );
    call().await
}

#[tokio::test]
async fn five_calls_the_caller_gave_up_on_open_the_breaker_of_the_tower_client() {
    let clock = MockClock::install();
    let server = silent().await;
    let resource = server.get_resource();
    rules::load_circuit_breaker_rules(vec![five_errors(&resource)]).unwrap();
    let client = tower_client(SentinelClientLayer::new());
    let url = server.url("/hangs");
    let sixth = five_abandoned_then_one(&clock, &server, async || call_tower(&client, &url).await);
    assert_eq!(sixth.await, Ended::Blocked(BlockKind::CircuitBreaker));
    assert_eq!(server.accepted(), 5, "the refused call was not sent");
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!((stats.complete_total, stats.error_total), (5, 5));
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

#[tokio::test]
async fn five_requests_the_caller_gave_up_on_open_the_breaker_of_the_reqwest_middleware() {
    let clock = MockClock::install();
    let server = silent().await;
    let resource = server.get_resource();
    rules::load_circuit_breaker_rules(vec![five_errors(&resource)]).unwrap();
    let client = reqwest_client(SentinelMiddleware::new());
    let url = server.url("/hangs");
    let sixth =
        five_abandoned_then_one(&clock, &server, async || call_reqwest(&client, &url).await);
    assert_eq!(sixth.await, Ended::Blocked(BlockKind::CircuitBreaker));
    assert_eq!(server.accepted(), 5, "the refused request was not sent");
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!((stats.complete_total, stats.error_total), (5, 5));
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

#[tokio::test]
async fn turned_off_a_call_the_caller_gave_up_on_decides_nothing() {
    let clock = MockClock::install();
    let (a, b) = (silent().await, silent().await);
    rules::load_circuit_breaker_rules(vec![
        five_errors(&a.get_resource()),
        five_errors(&b.get_resource()),
    ])
    .unwrap();
    let tower = tower_client(SentinelClientLayer::new().abandoned_is_error(false));
    let url = a.url("/hangs");
    let sixth = five_abandoned_then_one(&clock, &a, async || call_tower(&tower, &url).await);
    assert_eq!(sixth.await, Ended::GaveUp, "the breaker stayed closed");
    let reqwest = reqwest_client(SentinelMiddleware::new().abandoned_is_error(false));
    let url = b.url("/hangs");
    let sixth = five_abandoned_then_one(&clock, &b, async || call_reqwest(&reqwest, &url).await);
    assert_eq!(sixth.await, Ended::GaveUp, "the breaker stayed closed");
    for server in [&a, &b] {
        assert_eq!(server.accepted(), 6, "the sixth call was sent");
        let stats = metrics::snapshot(&server.get_resource()).unwrap();
        assert_eq!((stats.complete_total, stats.error_total), (6, 0));
    }
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

/// Paused tokio time: the turn's wait and the caller's timeouts run in virtual time.
#[tokio::test(start_paused = true)]
async fn a_throttled_call_counts_as_an_error_if_given_up_on_once_sent_and_not_while_it_waits() {
    let clock = MockClock::install();
    let resource = "GET:http://outbound-abandoned-throttled:81";
    rules::load_flow_rules(vec![
        FlowRule::qps(resource, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    // A client that never answers.
    let inner = tower::service_fn(move |_: Request<()>| {
        counter.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<http::Response<String>, std::io::Error>>()
    });
    let client = SentinelClientLayer::new().layer(inner);
    let call = |give_up: Duration| {
        let request = Request::get("http://outbound-abandoned-throttled:81/")
            .body(())
            .unwrap();
        tokio::time::timeout(give_up, client.clone().oneshot(request))
    };
    let counts = || {
        let stats = metrics::snapshot(resource).unwrap();
        (
            sent.load(Ordering::SeqCst),
            stats.complete_total,
            stats.error_total,
        )
    };
    assert!(call(Duration::from_secs(5)).await.is_err(), "given up");
    assert_eq!(
        counts(),
        (1, 1, 1),
        "sent at once, then given up on: an error"
    );
    // The next turn is 1 s away: given up on while it waits, it was never sent.
    assert!(call(Duration::from_millis(100)).await.is_err());
    assert_eq!(counts(), (1, 1, 1), "never sent: no verdict");
    // Its turn comes, it is sent, and given up on: an error.
    assert!(call(Duration::from_secs(5)).await.is_err());
    assert_eq!(counts(), (2, 2, 2));
    assert!(
        clock.elapsed() >= Duration::from_secs(1),
        "it waited its turn"
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[tokio::test]
async fn a_host_that_hangs_is_ejected_by_an_outlier_rule_as_a_failing_one_is() {
    let clock = MockClock::install();
    const NAME: &str = "outbound-abandoned:outlier";
    let (hangs, answers) = (silent().await, crate::outbound_support::downstream().await);
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(NAME, 2).recovery(Duration::from_secs(10))
    ])
    .unwrap();
    let client = reqwest_client(SentinelMiddleware::new().name(|_| NAME.into()));
    for _ in 0..2 {
        assert_eq!(call_reqwest(&client, &hangs.url("/")).await, Ended::GaveUp);
        assert_eq!(
            call_reqwest(&client, &answers.url("/ok")).await,
            Ended::Other("200 OK".into())
        );
        clock.advance(GIVE_UP);
    }
    assert_eq!(outlier::ejected(NAME), vec![hangs.addr.to_string()]);
    let refused = call_reqwest(&client, &hangs.url("/")).await;
    assert_eq!(refused, Ended::Blocked(BlockKind::Outlier));
    assert_eq!(hangs.accepted(), 2, "the ejected host is not called");
    rules::load_outlier_rules(vec![]).unwrap();
}
