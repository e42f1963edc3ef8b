//! `SentinelMiddleware` on a reqwest client, against real axum servers on 127.0.0.1:0: a limit
//! refuses requests that then never reach the server, 503s and transport errors open a
//! breaker, one name spans two hosts.

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::reqwest::middleware::{ClientBuilder, ClientWithMiddleware, Error};
use sentinel_runtime::reqwest::{reqwest, SentinelMiddleware};
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, OutlierRule};
use sentinel_runtime::{metrics, outlier, BlockError, BlockKind};

use crate::outbound_support::{closed_port, downstream};

fn client(middleware: SentinelMiddleware) -> ClientWithMiddleware {
    // No proxy from the environment: the requests go to 127.0.0.1 directly.
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    ClientBuilder::new(client).with(middleware).build()
}

/// One `GET url`, its body read: the status, or the error.
async fn get(client: &ClientWithMiddleware, url: &str) -> Result<u16, Error> {
    let response = client.get(url).send().await?;
    let status = response.status().as_u16();
    response.bytes().await?;
    Ok(status)
}

/// The block in `err`, if it is one.
fn block(err: &Error) -> Option<&BlockError> {
    match err {
        Error::Middleware(e) => e.downcast_ref::<BlockError>(),
        Error::Reqwest(_) => None,
    }
}

fn reset() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

#[tokio::test]
async fn a_qps_limit_refuses_requests_that_never_reach_the_downstream() {
    let _clock = MockClock::install();
    reset();
    let server = downstream().await;
    let resource = server.get_resource();
    rules::load_flow_rules(vec![FlowRule::qps(&resource, 2.0)]).unwrap();
    let client = client(SentinelMiddleware::new());
    for _ in 0..2 {
        assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    }
    let refused = get(&client, &server.url("/ok")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::Flow),
        "{refused}"
    );
    assert_eq!(server.hits(), 2, "the refused request was not sent");
    let stats = metrics::snapshot(&resource).unwrap();
    assert_eq!(
        (stats.pass_total, stats.complete_total, stats.block_total),
        (2, 2, 1)
    );
    reset();
}

#[tokio::test]
async fn two_503s_open_a_breaker() {
    let clock = MockClock::install();
    reset();
    clock.advance(Duration::from_secs(1));
    let server = downstream().await;
    let resource = server.get_resource();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(&resource, 2)
        .min_requests(2)
        .recovery(Duration::from_secs(10))])
    .unwrap();
    let client = client(SentinelMiddleware::new());
    for _ in 0..2 {
        assert_eq!(get(&client, &server.url("/fail")).await.unwrap(), 503);
    }
    let refused = get(&client, &server.url("/ok")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::CircuitBreaker),
        "{refused}"
    );
    assert_eq!(server.hits(), 2, "the open breaker's request was not sent");
    assert_eq!(metrics::snapshot(&resource).unwrap().error_total, 2);
    clock.advance(Duration::from_secs(11));
    assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    assert_eq!(get(&client, &server.url("/ok")).await.unwrap(), 200);
    reset();
}

#[tokio::test]
async fn a_named_resource_spans_two_hosts() {
    let _clock = MockClock::install();
    reset();
    let (a, b) = (downstream().await, downstream().await);
    rules::load_flow_rules(vec![FlowRule::qps("outbound-reqwest:inventory", 2.0)]).unwrap();
    let client = client(SentinelMiddleware::new().name(|parts| {
        assert_eq!(
            parts.uri.path(),
            "/ok",
            "the function sees the request's head"
        );
        "outbound-reqwest:inventory".into()
    }));
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
    let client = client(SentinelMiddleware::new());
    let url = format!("http://{addr}/ok");
    let failed = get(&client, &url).await.unwrap_err();
    assert!(
        matches!(failed, Error::Reqwest(_)),
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
async fn a_failing_host_is_ejected_by_its_authority_while_a_healthy_one_is_not() {
    let clock = MockClock::install();
    reset();
    const NAME: &str = "outbound-reqwest:outlier";
    let (good, bad) = (downstream().await, downstream().await);
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(NAME, 2).recovery(Duration::from_secs(10))
    ])
    .unwrap();
    let client = client(SentinelMiddleware::new().name(|_| NAME.into()));
    for _ in 0..2 {
        assert_eq!(get(&client, &bad.url("/fail")).await.unwrap(), 503);
        assert_eq!(get(&client, &good.url("/ok")).await.unwrap(), 200);
    }
    assert_eq!(outlier::ejected(NAME), vec![bad.addr.to_string()]);
    let refused = get(&client, &bad.url("/fail")).await.unwrap_err();
    assert_eq!(
        block(&refused).map(BlockError::kind),
        Some(BlockKind::Outlier)
    );
    assert_eq!(bad.hits(), 2, "the ejected host is not called");
    assert_eq!(get(&client, &good.url("/ok")).await.unwrap(), 200);
    clock.advance(Duration::from_secs(10));
    assert_eq!(get(&client, &bad.url("/ok")).await.unwrap(), 200);
    assert!(
        outlier::ejected(NAME).is_empty(),
        "the probe brought it back"
    );
    rules::load_outlier_rules(vec![]).unwrap();
}

#[tokio::test]
async fn an_endpoint_is_the_urls_host_and_port_without_its_user_info() {
    let _clock = MockClock::install();
    reset();
    const NAME: &str = "outbound-reqwest:endpoint-names";
    let server = downstream().await;
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors(NAME, 1).recovery(Duration::from_secs(10))
    ])
    .unwrap();
    let client = client(SentinelMiddleware::new().name(|_| NAME.into()));
    let url = format!("http://user:secret@{}/fail", server.addr);
    assert_eq!(get(&client, &url).await.unwrap(), 503);
    let endpoint = server.addr.to_string();
    assert_eq!(outlier::ejected(NAME), vec![endpoint.clone()]);
    assert!(outlier::healthy(NAME, &[&endpoint]).is_empty());
    rules::load_outlier_rules(vec![]).unwrap();
}
