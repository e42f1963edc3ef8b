//! What a blocked client is told by the tower layer: the status's own words and a retry hint,
//! never the rule, the resource or the caller's origin; `Retry-After` from the rule that
//! blocked (a QPS window, a throttling queue). Routers are called as services (no server).

use std::convert::Infallible;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, AuthorityRule, CircuitBreakerRule, FlowRule, HotspotRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::{service_fn, Layer, Service, ServiceExt};

fn reset_rules() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_authority_rules(vec![]).unwrap();
}

async fn call(app: &Router, request: Request<axum::body::Body>) -> (StatusCode, String, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap(), retry)
}

fn get_req(path: &str, app_header: Option<&str>) -> Request<axum::body::Body> {
    let mut b = Request::get(path);
    if let Some(app) = app_header {
        b = b.header("x-app", app);
    }
    b.body(axum::body::Body::empty()).unwrap()
}

/// The words a client may see in a default rejection: nothing of the rule or the resource.
fn assert_says_nothing_inside(text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.to_lowercase().contains(&secret.to_lowercase()),
            "the rejection {text:?} tells the client {secret:?}"
        );
    }
}

#[tokio::test]
async fn default_rejections_say_what_the_status_says_and_when_to_retry() {
    let clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/users/{id}", get(|| async { "user" }))
        .route("/admin", get(|| async { "admin" }))
        .route("/flaky", get(|| async { StatusCode::BAD_GATEWAY }))
        .layer(
            SentinelLayer::new()
                .param(|parts| parts.headers.get("x-app")?.to_str().ok().map(str::to_owned))
                .origin(|parts| parts.headers.get("x-app")?.to_str().ok().map(str::to_owned)),
        );
    let secrets = [
        "GET:/users/{id}",
        "/users",
        "hotspot",
        "parameter",
        "rule",
        "resource",
        "ms",
        "secret-tenant",
        "GET:/admin",
        "origin",
        "breaker",
    ];

    // A hotspot block: 429, the words, and a hint in whole seconds.
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("GET:/users/{id}", 0, 1.0).window(Duration::from_secs(10))
    ])
    .unwrap();
    let (status, _, _) = call(&app, get_req("/users/1", Some("secret-tenant"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body, retry) = call(&app, get_req("/users/2", Some("secret-tenant"))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_says_nothing_inside(&body, &secrets);
    assert_eq!(body, format!("Too Many Requests; retry after {retry} s"));
    assert_eq!(
        retry,
        "10",
        "the value's next slot, at {:?}",
        clock.elapsed()
    );

    // An authority block: 403 and its words only.
    rules::load_authority_rules(vec![AuthorityRule::deny("GET:/admin", ["secret-tenant"])])
        .unwrap();
    let (status, body, retry) = call(&app, get_req("/admin", Some("secret-tenant"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!((body.as_str(), retry.as_str()), ("Forbidden", ""));

    // A circuit breaker: 503 with the recovery as the hint.
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count("GET:/flaky", 1)
        .min_requests(1)
        .recovery(Duration::from_secs(7))])
    .unwrap();
    assert_eq!(call(&app, get_req("/flaky", None)).await.0, 502);
    let (status, body, retry) = call(&app, get_req("/flaky", None)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_says_nothing_inside(&body, &secrets);
    assert_eq!(
        (body.as_str(), retry.as_str()),
        ("Service Unavailable; retry after 7 s", "7")
    );
    reset_rules();
}

#[tokio::test]
async fn a_grpc_rejection_message_says_only_the_status() {
    let _clock = MockClock::install();
    reset_rules();
    let name = "POST:/replies.Greeter/SayHello";
    rules::load_flow_rules(vec![FlowRule::qps(name, 0.0)]).unwrap();
    let inner = service_fn(|_req: Request<axum::body::Body>| async {
        Ok::<_, Infallible>(Response::new(axum::body::Body::empty()))
    });
    let svc = SentinelLayer::new().layer(inner);
    let request = Request::post("/replies.Greeter/SayHello")
        .header("content-type", "application/grpc")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = svc.oneshot(request).await.unwrap();
    assert_eq!(response.headers()["grpc-status"], "8");
    let message = response.headers()["grpc-message"].to_str().unwrap();
    assert_eq!(message, "Too Many Requests; retry after 1 s");
    reset_rules();
}

/// `Retry-After` of a QPS rule: when its window admits again, not 1 whatever the window.
#[tokio::test]
async fn retry_after_of_a_qps_rule_is_when_its_window_admits_again() {
    let clock = MockClock::install();
    reset_rules();
    // 2 a minute, in 6 buckets of 10 s.
    rules::load_flow_rules(vec![
        FlowRule::qps("POST:/orders", 2.0).window(Duration::from_secs(60), 6)
    ])
    .unwrap();
    let app = Router::new()
        .route("/orders", post(|| async { "ok" }))
        .layer(SentinelLayer::new());
    let order = || {
        Request::post("/orders")
            .body(axum::body::Body::empty())
            .unwrap()
    };
    assert_eq!(call(&app, order()).await.0, StatusCode::OK);
    clock.advance(Duration::from_secs(25));
    assert_eq!(call(&app, order()).await.0, StatusCode::OK);
    clock.advance(Duration::from_secs(5)); // 30 s in
    let (status, body, retry) = call(&app, order()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // The first pass's bucket [0 s, 10 s) leaves the window at 60 s: 30 s from now.
    assert_eq!(retry, "30", "at {:?}", clock.elapsed());
    clock.advance(Duration::from_secs(29));
    assert_eq!(call(&app, order()).await.2, "1", "at {:?}", clock.elapsed());
    clock.advance(Duration::from_secs(1)); // 60 s: the first pass has left
    assert_eq!(call(&app, order()).await.0, StatusCode::OK);
    let (status, _, retry) = call(&app, order()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // The second pass (at 25 s, bucket [20 s, 30 s)) leaves at 80 s.
    assert_eq!(retry, "20", "at {:?}", clock.elapsed());
    reset_rules();
}

/// `Retry-After` of a throttling rule: when a turn within its `max_wait` comes.
#[tokio::test]
async fn retry_after_of_a_throttling_rule_is_when_its_queue_has_room() {
    let clock = MockClock::install();
    reset_rules();
    // One pass every 10 s, queueing at most 15 s.
    rules::load_flow_rules(vec![FlowRule::qps("replies-throttled", 1.0)
        .window(Duration::from_secs(10), 1)
        .throttle(Duration::from_secs(15))])
    .unwrap();
    let inner = service_fn(|_req: Request<axum::body::Body>| async {
        Ok::<_, Infallible>(Response::new(axum::body::Body::empty()))
    });
    let mut svc = SentinelLayer::new()
        .resource(|_| "replies-throttled".to_owned())
        .layer(inner);
    let req = || Request::get("/").body(axum::body::Body::empty()).unwrap();
    // Turns at 0 s and 10 s are taken (the futures are kept, not awaited)...
    let first = svc.ready().await.unwrap().call(req());
    let second = svc.ready().await.unwrap().call(req());
    // ...so the next would be 20 s away, 5 s more than the queue takes.
    let blocked = svc.ready().await.unwrap().call(req()).await.unwrap();
    assert_eq!(blocked.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        blocked.headers()["retry-after"],
        "5",
        "at {:?}",
        clock.elapsed()
    );
    drop((first, second));
    reset_rules();
}
