//! `SentinelClientLayer` around hyper-util's client, against real axum servers on
//! 127.0.0.1:0: a limit refuses calls that then never reach the server, 503s and transport
//! errors open a breaker, one name spans two hosts, system rules leave outbound calls alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, OutlierRule, SystemRule};
use sentinel_runtime::tower::{
    BoxError, Layer, SentinelBody, SentinelClientLayer, SentinelClientService,
};
use sentinel_runtime::{metrics, outlier, BlockError, BlockKind, EntryBuilder};
use tower::ServiceExt;

use crate::outbound_support::{closed_port, downstream};

type Body = Empty<bytes::Bytes>;
type Guarded = SentinelClientService<Client<HttpConnector, Body>>;

fn client(layer: SentinelClientLayer) -> Guarded {
    layer.layer(Client::builder(TokioExecutor::new()).build_http())
}

/// One `GET url` through `client`, its body read to the end: the status, or the error.
async fn get(client: &Guarded, url: &str) -> Result<StatusCode, BoxError> {
    let request = Request::get(url).body(Body::new()).unwrap();
    let call = client.clone().oneshot(request);
    let response: Response<SentinelBody<_>> = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("an answer within 10 s")?;
    let status = response.status();
    response.into_body().collect().await?;
    Ok(status)
}

/// The block in `err`, if it is one.
fn block(err: &BoxError) -> Option<&BlockError> {
    err.downcast_ref::<BlockError>()
}

fn reset() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_system_rules(vec![]).unwrap();
}

#[tokio::test]
async fn a_qps_limit_refuses_calls_that_never_reach_the_downstream() {
    let _clock = MockClock::install();
    reset();
    let server = downstream().await;
    let resource = server.get_resource();
    rules::load_flow_rules(vec![FlowRule::qps(&resource, 2.0)]).unwrap();
    let client = client(SentinelClientLayer::new());
    for _ in 0..2 {
        assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    }
    let refused = get(&client, &server.url("/ok")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::Flow),
        "{refused}"
    );
    assert_eq!(server.hits(), 2, "the refused call was not sent");
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!(
        (stats.pass_total, stats.complete_total, stats.block_total),
        (2, 2, 1)
    );
    reset();
}

#[tokio::test]
async fn two_503s_open_a_breaker_and_a_good_probe_closes_it() {
    let clock = MockClock::install();
    reset();
    clock.advance(Duration::from_secs(1));
    let server = downstream().await;
    let resource = server.get_resource();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(&resource, 2)
        .min_requests(2)
        .recovery(Duration::from_secs(10))])
    .unwrap();
    let client = client(SentinelClientLayer::new());
    for _ in 0..2 {
        assert_eq!(get(&client, &server.url("/fail")).await.unwrap(), 503);
    }
    let refused = get(&client, &server.url("/ok")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::CircuitBreaker),
        "{refused}"
    );
    assert_eq!(server.hits(), 2, "the open breaker's call was not sent");
    assert_eq!(metrics::snapshot(&resource).unwrap().error_total, 2);
    // After the recovery time one probe goes through; its success closes the breaker.
    clock.advance(Duration::from_secs(11));
    assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    assert_eq!(server.hits(), 4);
    reset();
}

#[tokio::test]
async fn a_named_resource_spans_two_hosts() {
    let _clock = MockClock::install();
    reset();
    let (a, b) = (downstream().await, downstream().await);
    rules::load_flow_rules(vec![FlowRule::qps("outbound-tower:inventory", 2.0)]).unwrap();
    let client = client(SentinelClientLayer::new().name(|_| "outbound-tower:inventory".into()));
    assert_eq!(get(&client, &a.url("/ok")).await.unwrap(), 200);
    assert_eq!(get(&client, &b.url("/ok")).await.unwrap(), 200);
    for server in [&a, &b] {
        let refused = get(&client, &server.url("/ok")).await.unwrap_err();
        assert!(
            block(&refused).is_some(),
            "one limit for both hosts: {refused}"
        );
    }
    assert_eq!((a.hits(), b.hits()), (1, 1));
    assert!(
        metrics::snapshot(&a.get_resource()).is_none(),
        "no per-host resource"
    );
    reset();
}

#[tokio::test]
async fn a_transport_error_counts_as_an_error_and_opens_a_breaker() {
    let clock = MockClock::install();
    reset();
    clock.advance(Duration::from_secs(1));
    let addr = closed_port().await;
    let resource = format!("GET:http://{addr}");
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(&resource, 1)
        .min_requests(1)
        .recovery(Duration::from_secs(10))])
    .unwrap();
    let client = client(SentinelClientLayer::new());
    let url = format!("http://{addr}/ok");
    let failed = get(&client, &url).await.unwrap_err();
    assert!(
        block(&failed).is_none(),
        "the connection's own error: {failed}"
    );
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!((stats.complete_total, stats.error_total), (1, 1));
    let refused = get(&client, &url).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::CircuitBreaker)
    );
    reset();
}

#[tokio::test]
async fn system_rules_never_refuse_an_outbound_call() {
    let _clock = MockClock::install();
    reset();
    let server = downstream().await;
    rules::load_system_rules(vec![SystemRule::new().concurrency(1)]).unwrap();
    // The process is full: one inbound call inside.
    let inside = EntryBuilder::new("outbound-tower-inbound")
        .inbound()
        .enter()
        .unwrap();
    let full = EntryBuilder::new("outbound-tower-inbound")
        .inbound()
        .enter();
    assert_eq!(full.unwrap_err().kind(), BlockKind::System);
    let client = client(SentinelClientLayer::new());
    assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    drop(inside);
    reset();
}

#[tokio::test(start_paused = true)]
async fn a_throttled_call_waits_for_its_turn_then_is_sent() {
    let clock = MockClock::install();
    reset();
    clock.advance(Duration::from_secs(1));
    let resource = "GET:http://outbound-tower-throttled:81";
    rules::load_flow_rules(vec![
        FlowRule::qps(resource, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let inner = tower::service_fn(move |_: Request<()>| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, std::io::Error>(Response::new(String::from("ok"))) }
    });
    let client = SentinelClientLayer::new().layer(inner);
    for _ in 0..2 {
        let request = Request::get("http://outbound-tower-throttled:81/")
            .body(())
            .unwrap();
        let response = client.clone().oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    }
    assert_eq!(sent.load(Ordering::SeqCst), 2, "both sent");
    assert!(
        clock.elapsed() >= Duration::from_secs(2),
        "the second waited its turn: {:?}",
        clock.elapsed()
    );
    let stats = metrics::snapshot(resource).unwrap();
    assert_eq!((stats.pass_total, stats.complete_total), (2, 2));
    reset();
}

#[tokio::test]
async fn a_failing_host_is_ejected_while_a_healthy_one_is_not_and_a_probe_brings_it_back() {
    let clock = MockClock::install();
    reset();
    const NAME: &str = "outbound-tower:outlier";
    let (good, bad) = (downstream().await, downstream().await);
    rules::load_outlier_rules(vec![OutlierRule::consecutive_errors(NAME, 2)
        .recovery(Duration::from_secs(10))
        .max_ejection_percent(0.5)])
    .unwrap();
    // One name for the dependency's two hosts: the endpoint is each request's authority.
    let client = client(SentinelClientLayer::new().name(|_| NAME.into()));
    for _ in 0..2 {
        assert_eq!(get(&client, &bad.url("/fail")).await.unwrap(), 503);
        assert_eq!(get(&client, &good.url("/ok")).await.unwrap(), 200);
    }
    let (bad_endpoint, good_endpoint) = (bad.addr.to_string(), good.addr.to_string());
    assert_eq!(outlier::ejected(NAME), vec![bad_endpoint.clone()]);
    assert_eq!(
        outlier::healthy(NAME, &[&bad_endpoint, &good_endpoint]),
        vec![good_endpoint.as_str()]
    );
    let refused = get(&client, &bad.url("/fail")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::Outlier)
    );
    assert_eq!(bad.hits(), 2, "the ejected host is not called");
    assert_eq!(get(&client, &good.url("/ok")).await.unwrap(), 200);

    // After the recovery time one probe goes through; a success brings the host back.
    clock.advance(Duration::from_secs(10));
    assert_eq!(get(&client, &bad.url("/ok")).await.unwrap(), 200);
    assert!(
        outlier::ejected(NAME).is_empty(),
        "the probe brought it back"
    );
    assert_eq!(bad.hits(), 3);
    rules::load_outlier_rules(vec![]).unwrap();
    reset();
}
