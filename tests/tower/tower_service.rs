//! The tower layer around plain `service_fn`s (no server): gRPC rejections, inner errors,
//! custom hooks, and exits when the body ends or is dropped.

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::{service_fn, Layer, Service, ServiceExt};

type Body = Full<axum::body::Bytes>;

fn reset_rules() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

fn grpc_request(path: &str) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/grpc")
        .body(Body::default())
        .unwrap()
}

#[tokio::test]
async fn grpc_requests_get_trailers_only_rejections_and_grpc_errors_count() {
    let _clock = MockClock::install();
    reset_rules();
    let name = "POST:/test.Greeter/SayHello";
    rules::load_flow_rules(vec![FlowRule::qps(name, 2.0)]).unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        let response = Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", "14") // UNAVAILABLE: an error
            .body(Body::default())
            .unwrap();
        Ok::<_, Infallible>(response)
    });
    let svc = SentinelLayer::new().layer(inner);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = svc
            .clone()
            .oneshot(grpc_request("/test.Greeter/SayHello"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        statuses.push(
            response.headers()["grpc-status"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
        if statuses.len() == 3 {
            let message = response.headers()["grpc-message"].to_str().unwrap();
            assert_eq!(message, "Too Many Requests; retry after 1 s");
        }
        drop(response);
    }
    assert_eq!(statuses, ["14", "14", "8"]);
    let stats = metrics::snapshot(name).unwrap();
    assert_eq!(
        (stats.pass_qps, stats.block_qps, stats.error_qps),
        (2.0, 1.0, 2.0),
        "{stats:?}"
    );
    reset_rules();
}

#[tokio::test]
async fn inner_errors_exit_once_as_errors_and_open_the_breaker() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count("svc-inner", 2)
        .min_requests(1)
        .recovery(Duration::from_secs(5))])
    .unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Err::<Response<Body>, _>(std::io::Error::other("backend down"))
    });
    let mut svc = SentinelLayer::new()
        .resource(|_| "svc-inner".to_owned())
        .layer(inner);
    for _ in 0..2 {
        let err = svc
            .ready()
            .await
            .unwrap()
            .call(Request::new(Body::default()))
            .await;
        assert!(err.is_err());
    }
    let blocked = svc
        .ready()
        .await
        .unwrap()
        .call(Request::new(Body::default()))
        .await
        .unwrap();
    assert_eq!(blocked.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The breaker lets a probe through when its 5 s of recovery have passed.
    assert_eq!(blocked.headers()["retry-after"], "5");
    let stats = metrics::snapshot("svc-inner").unwrap();
    assert_eq!(
        (stats.pass_qps, stats.error_qps, stats.concurrency),
        (2.0, 2.0, 0),
        "{stats:?}"
    );
    reset_rules();
}

#[tokio::test]
async fn the_entry_is_held_until_the_body_ends_and_hooks_replace_the_defaults() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_flow_rules(vec![FlowRule::concurrency("svc-body", 1)]).unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(
            Response::builder()
                .status(404)
                .body(Body::new("payload".into()))
                .unwrap(),
        )
    });
    let svc = SentinelLayer::new()
        .resource(|_| "svc-body".to_owned())
        .is_error(|status, _| status == StatusCode::NOT_FOUND)
        .on_block(|err, parts| {
            Response::builder()
                .status(509)
                .body(format!("{} {}", parts.uri.path(), err.resource()))
                .unwrap()
        })
        .layer(inner);
    let first = svc
        .clone()
        .oneshot(Request::new(Body::default()))
        .await
        .unwrap();
    let inside = || metrics::snapshot("svc-body").unwrap().concurrency;
    assert_eq!(inside(), 1, "held while the body is unread");
    let second = svc
        .clone()
        .oneshot(Request::get("/again").body(Body::default()).unwrap())
        .await
        .unwrap();
    assert_eq!(second.status().as_u16(), 509);
    let text = second.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&text[..], b"/again svc-body");
    let body = first.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"payload");
    assert_eq!(inside(), 0, "released when the body ended");
    // a response dropped unread releases too
    let third = svc
        .clone()
        .oneshot(Request::new(Body::default()))
        .await
        .unwrap();
    assert_eq!(inside(), 1);
    drop(third);
    assert_eq!(inside(), 0);
    let stats = metrics::snapshot("svc-body").unwrap();
    assert_eq!(
        (stats.pass_qps, stats.block_qps, stats.error_qps),
        (2.0, 1.0, 2.0),
        "404s are errors here: {stats:?}"
    );
    reset_rules();
}

#[tokio::test]
async fn authority_rules_answer_403_by_the_origin_header_and_grpc_permission_denied() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_authority_rules(vec![rules::AuthorityRule::allow(
        "GET:<unmatched>",
        ["billing"],
    )])
    .unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(Response::new(Body::default()))
    });
    let svc = SentinelLayer::new()
        .origin(|parts| {
            parts
                .headers
                .get("x-app")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .layer(inner);
    let call = |app: Option<&str>| {
        let mut request = Request::get("/anything");
        if let Some(app) = app {
            request = request.header("x-app", app);
        }
        svc.clone().oneshot(request.body(Body::default()).unwrap())
    };
    assert_eq!(
        call(Some("billing")).await.unwrap().status(),
        StatusCode::OK
    );
    let denied = call(Some("guest")).await.unwrap();
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    assert!(denied.headers().get("retry-after").is_none());
    assert_eq!(
        call(None).await.unwrap().status(),
        StatusCode::FORBIDDEN,
        "no origin: denied by the allow-list"
    );
    rules::load_authority_rules(vec![rules::AuthorityRule::allow(
        "POST:/test.Admin/Reset",
        ["billing"],
    )])
    .unwrap();
    let grpc = SentinelLayer::new()
        .layer(service_fn(|_req: Request<Body>| async {
            Ok::<_, Infallible>(Response::new(Body::default()))
        }))
        .oneshot(grpc_request("/test.Admin/Reset"))
        .await
        .unwrap();
    assert_eq!(grpc.headers()["grpc-status"], "7", "PERMISSION_DENIED");
    rules::load_authority_rules(vec![]).unwrap();
    reset_rules();
}

#[tokio::test(start_paused = true)]
async fn a_throttled_request_awaits_its_turn_without_blocking_the_executor() {
    let clock = MockClock::install();
    reset_rules();
    clock.advance(Duration::from_secs(1));
    let name = "GET:<unmatched>";
    rules::load_flow_rules(vec![
        FlowRule::qps(name, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    let inner = service_fn(|req: Request<Body>| async move {
        Ok::<_, Infallible>(Response::new(Body::from(req.uri().path().to_owned())))
    });
    let svc = SentinelLayer::new().layer(inner);
    let get = |path: &str| Request::get(path).body(Body::default()).unwrap();
    let passes = || metrics::snapshot(name).map_or(0, |s| s.pass_total);
    let before = passes();
    let first = svc.clone().oneshot(get("/slow")).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    // The second request's turn is a second away: it waits on a timer...
    let second = tokio::spawn(svc.clone().oneshot(get("/slow")));
    tokio::task::yield_now().await;
    assert!(!second.is_finished(), "waiting for its turn");
    // ...while this current-thread executor serves another request (a service with no rule).
    let other = SentinelLayer::new()
        .resource(|_| "tower-throttle-other".to_owned())
        .layer(inner);
    let reply = other.oneshot(get("/other")).await.unwrap();
    assert_eq!(reply.status(), StatusCode::OK);
    assert!(!second.is_finished(), "still waiting");
    let second = second.await.unwrap().unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    let body = second.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"/slow");
    assert_eq!(passes() - before, 2);
    assert!(
        clock.elapsed() >= Duration::from_secs(2),
        "the wait moved the mock clock"
    );
    reset_rules();
}

/// A service that must be polled ready before each call, as `tower`'s limits are; a clone
/// starts unready.
struct ReadyFirst {
    ready: bool,
}

impl Clone for ReadyFirst {
    fn clone(&self) -> Self {
        ReadyFirst { ready: false }
    }
}

impl Service<Request<Body>> for ReadyFirst {
    type Response = Response<Body>;
    type Error = &'static str;
    type Future = std::future::Ready<Result<Response<Body>, &'static str>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), &'static str>> {
        self.ready = true;
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        let was_ready = std::mem::replace(&mut self.ready, false);
        std::future::ready(if was_ready {
            Ok(Response::new(Body::default()))
        } else {
            Err("called without poll_ready")
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_service_polled_ready_handles_the_request_admitted_or_throttled() {
    let clock = MockClock::install();
    reset_rules();
    clock.advance(Duration::from_secs(1));
    let name = "tower-ready-first";
    let mut svc = SentinelLayer::new()
        .resource(|_| "tower-ready-first".to_owned())
        .layer(ReadyFirst { ready: false });
    let get = || Request::get("/").body(Body::default()).unwrap();
    // Admitted at once (no rule), then throttled (a second's wait each): every call goes to the
    // service that was polled ready, and the next `poll_ready` readies the one for the next.
    for _ in 0..2 {
        let response = svc.ready().await.unwrap().call(get()).await;
        assert_eq!(response.map(|r| r.status()), Ok(StatusCode::OK));
    }
    assert_eq!(clock.elapsed(), Duration::from_secs(1), "nobody waited");
    rules::load_flow_rules(vec![
        FlowRule::qps(name, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    for _ in 0..3 {
        let response = svc.ready().await.unwrap().call(get()).await;
        assert_eq!(response.map(|r| r.status()), Ok(StatusCode::OK));
    }
    assert!(clock.elapsed() >= Duration::from_secs(3), "two waited");
    reset_rules();
}

/// `block_response` is the default rejection: an `on_block` that starts from it and only
/// changes the body keeps the status, `Retry-After` and, for gRPC, the trailers-only answer.
#[tokio::test]
async fn on_block_can_start_from_the_default_response_and_change_only_the_body() {
    use sentinel_runtime::tower::block_response;
    let _clock = MockClock::install();
    reset_rules();
    let breaker = CircuitBreakerRule::error_count("svc-json", 1)
        .min_requests(1)
        .recovery(Duration::from_secs(7));
    rules::load_circuit_breaker_rules(vec![breaker]).unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(
            Response::builder()
                .status(500)
                .body(Body::default())
                .unwrap(),
        )
    });
    let svc = SentinelLayer::new()
        .resource(|_| "svc-json".to_owned())
        .on_block(|err, parts| {
            let mut response = block_response(err, parts);
            if response.status() != StatusCode::OK {
                *response.body_mut() = format!("{{\"blocked\":\"{:?}\"}}", err.kind());
            }
            response
        })
        .layer(inner);
    // A 500 opens the breaker; the next request is answered by the hook.
    let first = svc
        .clone()
        .oneshot(Request::new(Body::default()))
        .await
        .unwrap();
    assert_eq!(first.status(), 500);
    drop(first);
    let blocked = svc
        .clone()
        .oneshot(Request::new(Body::default()))
        .await
        .unwrap();
    assert_eq!(blocked.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        blocked.headers()["retry-after"],
        "7",
        "the breaker's recovery"
    );
    let body = blocked.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], br#"{"blocked":"CircuitBreaker"}"#);
    // A gRPC request gets the default trailers-only rejection, untouched by the hook.
    let grpc = svc.clone().oneshot(grpc_request("/x.Y/Z")).await.unwrap();
    assert_eq!(grpc.status(), StatusCode::OK);
    assert_eq!(grpc.headers()["grpc-status"], "14");
    let body = grpc.into_body().collect().await.unwrap().to_bytes();
    assert!(body.is_empty());
    reset_rules();
}
