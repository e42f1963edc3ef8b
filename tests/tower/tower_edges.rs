//! The tower layer at its edges: hotspot exceptions on the layer's params, what an abandoned,
//! cut short or panicking request tells the breakers, hostile names (junk gRPC paths, invented
//! methods), gRPC behind an axum router, and a response future polled after it finished.
//! Tests that load rules install the mock clock first: that runs them one at a time.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::{Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use sentinel_runtime::breaker::CircuitState;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule};
use sentinel_runtime::tower::{ConnectInfo, SentinelLayer};
use tower::{service_fn, Layer, Service, ServiceExt};

use crate::making_resources;

type Body = Full<axum::body::Bytes>;

fn reply(status: u16) -> Result<Response<Body>, Infallible> {
    Ok(Response::builder()
        .status(status)
        .body(Body::default())
        .unwrap())
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::default()).unwrap()
}

/// Polls `future` once, with a waker that does nothing.
fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn circuit(name: &str) -> Option<CircuitState> {
    metrics::snapshot(name).and_then(|s| s.circuit)
}

/// A breaker on `name` that opens on one error and lets one probe through after 5 s.
fn open_on_first_error(name: &'static str) {
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(name, 1)
        .min_requests(1)
        .recovery(Duration::from_secs(5))])
    .unwrap();
}

/// Opens `name`'s breaker with one 500 through `svc`, then lets the recovery time pass: the
/// next request is the half-open probe.
async fn open_then_recover<S>(svc: &S, clock: &MockClock, name: &str)
where
    S: Service<Request<Body>> + Clone,
    S::Error: std::fmt::Debug,
{
    drop(svc.clone().oneshot(get("/fail")).await.unwrap());
    assert_eq!(circuit(name), Some(CircuitState::Open));
    clock.advance(Duration::from_secs(6));
}

#[tokio::test]
async fn hotspot_exceptions_match_the_layers_header_and_client_ip_params() {
    let _clock = MockClock::install();
    let name = "edges-exceptions";
    // One call per second for everyone, 100 for the listed header value and address.
    rules::load_hotspot_rules(vec![HotspotRule::qps(name, 0, 1.0)
        .exception("vip", 100.0)
        .exception("10.0.0.1", 100.0)])
    .unwrap();
    let inner = service_fn(|_: Request<Body>| async { reply(200) });
    let by_header = SentinelLayer::new()
        .resource(move |_| name.into())
        .param(|p| p.headers.get("x-user")?.to_str().ok().map(str::to_owned))
        .layer(inner);
    let by_ip = SentinelLayer::new()
        .resource(move |_| name.into())
        .client_ip(1)
        .layer(inner);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = Request::get("/")
            .header("x-user", "vip")
            .body(Body::default());
        statuses.push(
            by_header
                .clone()
                .oneshot(r.unwrap())
                .await
                .unwrap()
                .status(),
        );
        let r = Request::get("/").header("x-forwarded-for", "10.0.0.1");
        let r = r.body(Body::default()).unwrap();
        statuses.push(by_ip.clone().oneshot(r).await.unwrap().status());
    }
    // An unlisted value still has the rule's threshold.
    let mut others = Vec::new();
    for _ in 0..2 {
        let r = Request::get("/")
            .header("x-user", "bob")
            .body(Body::default());
        others.push(
            by_header
                .clone()
                .oneshot(r.unwrap())
                .await
                .unwrap()
                .status(),
        );
    }
    rules::load_hotspot_rules(vec![]).unwrap();
    assert_eq!(
        statuses, [200; 6],
        "the exceptions' thresholds were not applied"
    );
    assert_eq!(others, [200, 429]);
}

#[tokio::test]
async fn a_probe_whose_client_goes_away_before_the_answer_does_not_close_the_breaker() {
    let clock = MockClock::install();
    let name = "edges-abandoned-probe";
    open_on_first_error(name);
    let inner = service_fn(|req: Request<Body>| async move {
        if req.uri().path() == "/hang" {
            std::future::pending::<()>().await;
        }
        reply(500)
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    open_then_recover(&svc, &clock, name).await;
    // The probe's client disconnects: its future is dropped before the backend answers.
    let mut probe = Box::pin(svc.clone().oneshot(get("/hang")));
    assert!(poll_once(probe.as_mut()).is_pending());
    drop(probe);
    let after_drop = circuit(name);
    let stats = metrics::snapshot(name).unwrap();
    // The probe's place was given back: the next request probes, and its 500 reopens.
    drop(svc.clone().oneshot(get("/fail")).await.unwrap());
    let after_next = circuit(name);
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!(
        after_drop,
        Some(CircuitState::HalfOpen),
        "an unanswered probe decided"
    );
    assert_eq!((stats.concurrency, stats.complete_total), (0, 2));
    assert_eq!(after_next, Some(CircuitState::Open));
}

#[tokio::test]
async fn a_grpc_stream_cut_before_its_status_does_not_decide_a_probe() {
    let clock = MockClock::install();
    let name = "edges-cut-stream";
    open_on_first_error(name);
    // "/fail" answers 500; anything else starts a gRPC stream whose status would come in the
    // trailers, after a first message.
    let inner = service_fn(|req: Request<Body>| async move {
        if req.uri().path() == "/fail" {
            let body = Full::default().map_err(|e| match e {}).boxed_unsync();
            return Ok::<_, Infallible>(Response::builder().status(500).body(body).unwrap());
        }
        let body = OneMessageThenSilence { sent: false }.boxed_unsync();
        Ok(Response::builder()
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap())
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    drop(svc.clone().oneshot(get("/fail")).await.unwrap());
    assert_eq!(circuit(name), Some(CircuitState::Open));
    clock.advance(Duration::from_secs(6));
    let r = Request::post("/stream").header("content-type", "application/grpc");
    let response = svc
        .clone()
        .oneshot(r.body(Body::default()).unwrap())
        .await
        .unwrap();
    let mut body = response.into_body();
    // The first message arrives, then the client goes away.
    assert!(body.frame().await.unwrap().unwrap().is_data());
    drop(body);
    let state = circuit(name);
    let concurrency = metrics::snapshot(name).unwrap().concurrency;
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!(
        state,
        Some(CircuitState::HalfOpen),
        "a stream without a status decided"
    );
    assert_eq!(concurrency, 0);
}

/// A gRPC response body: one message, then nothing more (the status never comes).
struct OneMessageThenSilence {
    sent: bool,
}

impl http_body::Body for OneMessageThenSilence {
    type Data = axum::body::Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Infallible>>> {
        if std::mem::replace(&mut self.sent, true) {
            return Poll::Pending;
        }
        Poll::Ready(Some(Ok(Frame::data(axum::body::Bytes::from_static(
            b"msg",
        )))))
    }
}

#[tokio::test]
async fn an_answered_http_probe_decides_even_when_the_client_drops_the_body() {
    let clock = MockClock::install();
    let name = "edges-http-body-dropped";
    open_on_first_error(name);
    let inner = service_fn(|req: Request<Body>| async move {
        reply(if req.uri().path() == "/fail" {
            500
        } else {
            200
        })
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    open_then_recover(&svc, &clock, name).await;
    // The status is the answer: a 200 closes, whether or not the client reads the body.
    drop(svc.clone().oneshot(get("/ok")).await.unwrap());
    let state = circuit(name);
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!(state, Some(CircuitState::Closed));
}

#[tokio::test]
async fn a_panicking_service_counts_as_an_error() {
    let _clock = MockClock::install();
    let name = "edges-panic";
    open_on_first_error(name);
    let inner = service_fn(|_: Request<Body>| async {
        if true {
            panic!("the handler failed");
        }
        reply(200)
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    // A panic-catching layer outside this one: the future unwinds, and is dropped afterwards.
    let mut future = Box::pin(svc.clone().oneshot(get("/")));
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(future.as_mut())));
    assert!(caught.is_err());
    drop(future);
    let stats = metrics::snapshot(name).unwrap();
    let state = circuit(name);
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!((stats.error_total, stats.concurrency), (1, 0));
    assert_eq!(state, Some(CircuitState::Open));
}

/// The names of every resource whose name contains `part`.
fn names_with(part: &str) -> Vec<String> {
    let mut names: Vec<String> = metrics::all()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.contains(part))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn junk_grpc_paths_and_invented_methods_leave_one_resource_each() {
    let _making = making_resources().await;
    let svc = SentinelLayer::new().layer(service_fn(|_: Request<Body>| async { reply(404) }));
    for i in 0..50 {
        // Not a gRPC method path: a protobuf name has no '-' and does not start with a digit.
        for path in [format!("/junk-grpc/{i}"), format!("/junk.Svc/{i}x")] {
            let r = Request::post(path).header("content-type", "application/grpc");
            drop(
                svc.clone()
                    .oneshot(r.body(Body::default()).unwrap())
                    .await
                    .unwrap(),
            );
        }
        let r = Request::builder()
            .method(format!("EDGESM{i}").as_str())
            .uri("/nope");
        drop(
            svc.clone()
                .oneshot(r.body(Body::default()).unwrap())
                .await
                .unwrap(),
        );
    }
    // A well-formed but huge method path is not kept as a name either.
    let long = format!("/junk.Svc/M{}", "x".repeat(60_000));
    let r = Request::post(long).header("content-type", "application/grpc");
    drop(
        svc.clone()
            .oneshot(r.body(Body::default()).unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(names_with("junk"), Vec::<String>::new());
    assert_eq!(names_with("EDGESM"), Vec::<String>::new());
    assert!(metrics::snapshot("POST:<unmatched>").is_some());
    assert!(metrics::snapshot("OTHER:<unmatched>").unwrap().pass_total >= 50);
}

#[tokio::test]
async fn invented_methods_on_a_matched_route_share_one_resource() {
    let _making = making_resources().await;
    let app = axum::Router::new()
        .route("/edges-any", axum::routing::any(|| async { "ok" }))
        .layer(SentinelLayer::new());
    for i in 0..20 {
        let r = Request::builder().method(format!("EDGESX{i}").as_str());
        let r = r.uri("/edges-any").body(axum::body::Body::empty()).unwrap();
        let response = app.clone().oneshot(r).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let r = Request::get("/edges-any")
        .body(axum::body::Body::empty())
        .unwrap();
    drop(app.clone().oneshot(r).await.unwrap());
    assert_eq!(
        names_with("/edges-any"),
        ["GET:/edges-any", "OTHER:/edges-any"]
    );
}

#[tokio::test]
async fn grpc_methods_behind_an_axum_router_are_named_by_their_method_path() {
    let _making = making_resources().await;
    let grpc = service_fn(|_: Request<axum::body::Body>| async {
        Ok::<_, Infallible>(
            Response::builder()
                .header("content-type", "application/grpc")
                .header("grpc-status", "0")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
    });
    // The route tonic's `Routes::add_service` gives a service, with the layer as the docs say.
    let app = axum::Router::new()
        .route_service("/edges.Greeter/{*rest}", grpc)
        .layer(SentinelLayer::new());
    for method in ["SayHello", "SayBye", "SayHello"] {
        let r = Request::post(format!("/edges.Greeter/{method}"))
            .header("content-type", "application/grpc");
        let response = app
            .clone()
            .oneshot(r.body(axum::body::Body::empty()).unwrap());
        assert_eq!(response.await.unwrap().headers()["grpc-status"], "0");
    }
    // A junk path under the service falls back to the route.
    let r = Request::post("/edges.Greeter/a/b").header("content-type", "application/grpc");
    drop(
        app.clone()
            .oneshot(r.body(axum::body::Body::empty()).unwrap())
            .await
            .unwrap(),
    );
    // A method's first call, before its answer showed the service has it, counts under the
    // service's `<unmatched>` (a client's invented methods stay there).
    assert_eq!(
        names_with("edges.Greeter"),
        [
            "POST:/edges.Greeter/<unmatched>",
            "POST:/edges.Greeter/SayBye",
            "POST:/edges.Greeter/SayHello",
            "POST:/edges.Greeter/{*rest}"
        ]
    );
    assert_eq!(
        metrics::snapshot("POST:/edges.Greeter/SayHello")
            .unwrap()
            .pass_total,
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_response_future_polled_again_after_it_finished_stays_pending() {
    let clock = MockClock::install();
    clock.advance(Duration::from_secs(1));
    let name = "edges-poll-again";
    // Admitted, throttled (a turn 100 ms ahead, awaited), and blocked futures.
    rules::load_flow_rules(vec![
        FlowRule::qps(name, 10.0).throttle(Duration::from_secs(1))
    ])
    .unwrap();
    let inner = service_fn(|_: Request<Body>| async { reply(200) });
    let mut svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    let mut finished = 0;
    for _ in 0..2 {
        let mut future = Box::pin(svc.call(get("/")));
        let response = std::future::poll_fn(|cx| future.as_mut().poll(cx)).await;
        assert_eq!(response.unwrap().status(), 200);
        // Polled again: pending, not a panic.
        assert!(poll_once(future.as_mut()).is_pending());
        finished += 1;
    }
    rules::load_flow_rules(vec![FlowRule::qps(name, 0.0)]).unwrap();
    let mut future = Box::pin(svc.call(get("/")));
    let response = poll_once(future.as_mut());
    assert!(matches!(response, Poll::Ready(Ok(r)) if r.status() == 429));
    assert!(poll_once(future.as_mut()).is_pending());
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(finished, 2);
}

#[tokio::test(start_paused = true)]
async fn a_panic_after_a_throttling_wait_counts_as_an_error() {
    let clock = MockClock::install();
    clock.advance(Duration::from_secs(1));
    let name = "edges-throttled-panic";
    rules::load_flow_rules(vec![
        FlowRule::qps(name, 1.0).throttle(Duration::from_secs(10))
    ])
    .unwrap();
    let inner = service_fn(|_: Request<Body>| async {
        if true {
            panic!("the handler failed");
        }
        reply(200)
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    // The executor catches each panic and drops the task's future afterwards. The first
    // request is admitted at once, the second waits a second for its turn.
    for _ in 0..2 {
        let task = tokio::spawn(svc.clone().oneshot(get("/")));
        assert!(task.await.unwrap_err().is_panic());
    }
    let stats = metrics::snapshot(name).unwrap();
    rules::load_flow_rules(vec![]).unwrap();
    assert!(
        clock.elapsed() >= Duration::from_secs(2),
        "the second one waited"
    );
    assert_eq!(
        (stats.pass_total, stats.error_total, stats.concurrency),
        (2, 2, 0)
    );
}

/// Counts the calls of a `get` handler on `route` behind the layer.
fn counted_get_route(route: &str) -> (axum::Router, Arc<AtomicUsize>) {
    counted_route(route, false)
}

/// A route whose handler (`GET`, or `POST` if `post`) counts its runs.
fn counted_route(route: &str, post: bool) -> (axum::Router, Arc<AtomicUsize>) {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let handler = move || {
        counter.fetch_add(1, Ordering::SeqCst);
        async { "done" }
    };
    let method = if post {
        axum::routing::post(handler)
    } else {
        axum::routing::get(handler)
    };
    let app = axum::Router::new()
        .route(route, method)
        .layer(SentinelLayer::new());
    (app, served)
}

#[tokio::test]
async fn a_grpc_content_type_does_not_escape_a_wildcard_routes_rule() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("GET:/wildfiles/{*path}", 1.0)]).unwrap();
    let (app, served) = counted_get_route("/wildfiles/{*path}");
    let plain = || Request::get("/wildfiles/report");
    let sneaky = || Request::get("/wildfiles/report").header("content-type", "application/grpc");
    for r in [plain(), plain(), sneaky(), sneaky(), sneaky()] {
        let r = r.body(axum::body::Body::empty()).unwrap();
        drop(app.clone().oneshot(r).await.unwrap());
    }
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(served.load(Ordering::SeqCst), 1, "ran past a 1 qps rule");
    assert_eq!(names_with("/wildfiles"), ["GET:/wildfiles/{*path}"]);
}

/// A `POST` (as every gRPC call is) under a REST catch-all route of one plain segment: the route's
/// shape is a tonic service's (`/{service}/{*rest}`), but its segment is no package-qualified
/// service name, so a gRPC content type must not turn its paths into names.
#[tokio::test]
async fn a_grpc_content_type_does_not_escape_a_one_segment_catch_all_routes_rule() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("POST:/catchall/{*rest}", 1.0)]).unwrap();
    let (app, served) = counted_route("/catchall/{*rest}", true);
    for i in 0..5 {
        let r = Request::post(format!("/catchall/login{i}"))
            .header("content-type", "application/grpc")
            .body(axum::body::Body::empty())
            .unwrap();
        drop(app.clone().oneshot(r).await.unwrap());
    }
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(served.load(Ordering::SeqCst), 1, "ran past a 1 qps rule");
    assert_eq!(names_with("/catchall"), ["POST:/catchall/{*rest}"]);
}

#[tokio::test]
async fn head_requests_do_not_escape_the_get_rule_of_the_handler_they_run() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("GET:/head-report", 1.0)]).unwrap();
    let (app, served) = counted_get_route("/head-report");
    for method in ["GET", "GET", "HEAD", "HEAD", "HEAD"] {
        let r = Request::builder().method(method).uri("/head-report");
        drop(
            app.clone()
                .oneshot(r.body(axum::body::Body::empty()).unwrap())
                .await
                .unwrap(),
        );
    }
    rules::load_flow_rules(vec![]).unwrap();
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "the handler ran past its 1 qps rule"
    );
    assert_eq!(names_with("/head-report"), ["GET:/head-report"]);
}

#[tokio::test]
async fn an_ipv4_client_on_a_dual_stack_listener_matches_its_exception() {
    // What a dual-stack listener (`[::]:port`) reports for an IPv4 client, where the host has
    // IPv6 at all.
    if let Ok(listener) = std::net::TcpListener::bind("[::]:0") {
        let port = listener.local_addr().unwrap().port();
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let peer = listener.accept().unwrap().1;
        assert_eq!(peer.ip().to_string(), "::ffff:127.0.0.1");
    }
    let _clock = MockClock::install();
    let name = "edges-mapped";
    rules::load_hotspot_rules(vec![
        HotspotRule::qps(name, 0, 1.0).exception("10.0.0.1", 100.0)
    ])
    .unwrap();
    let inner = service_fn(|_: Request<Body>| async { reply(200) });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .client_ip(0)
        .layer(inner);
    let mapped: SocketAddr = "[::ffff:10.0.0.1]:4000".parse().unwrap();
    let mut statuses = vec![];
    for _ in 0..3 {
        let r = Request::get("/").extension(ConnectInfo(mapped));
        let response = svc.clone().oneshot(r.body(Body::default()).unwrap()).await;
        statuses.push(response.unwrap().status().as_u16());
    }
    // The same address as the rightmost X-Forwarded-For entry behind one trusted proxy.
    let behind_proxy = SentinelLayer::new()
        .resource(move |_| name.into())
        .client_ip(1)
        .layer(service_fn(|_: Request<Body>| async { reply(200) }));
    for _ in 0..3 {
        let r = Request::get("/")
            .header("x-forwarded-for", "::ffff:10.0.0.1")
            .extension(ConnectInfo(mapped));
        let response = behind_proxy
            .clone()
            .oneshot(r.body(Body::default()).unwrap());
        statuses.push(response.await.unwrap().status().as_u16());
    }
    rules::load_hotspot_rules(vec![]).unwrap();
    assert_eq!(statuses, [200; 6], "10.0.0.1 has 100 qps");
}

#[tokio::test]
async fn calls_cut_by_an_outer_timeout_still_count_as_slow() {
    let clock = MockClock::install();
    let name = "edges-timeout";
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::slow_request_ratio(
        name,
        Duration::from_millis(100),
        0.5,
    )
    .min_requests(2)
    .recovery(Duration::from_secs(5))])
    .unwrap();
    let inner =
        service_fn(|_: Request<Body>| std::future::pending::<Result<Response<Body>, Infallible>>());
    let mut svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .layer(inner);
    for _ in 0..2 {
        svc.ready().await.unwrap();
        let mut future = Box::pin(svc.call(get("/")));
        assert!(poll_once(future.as_mut()).is_pending());
        // An outer timeout at twice the breaker's max_rt drops the future.
        clock.advance(Duration::from_millis(200));
        drop(future);
    }
    let state = circuit(name);
    let next = svc.ready().await.unwrap().call(get("/")).await.unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    assert_eq!(next.status(), 503);
    assert_eq!(
        state,
        Some(CircuitState::Open),
        "2 calls of 200 ms > 100 ms"
    );
}

/// A gRPC response body: its status in the trailers, and nothing else.
struct StatusInTrailers {
    sent: bool,
}

impl http_body::Body for StatusInTrailers {
    type Data = axum::body::Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Infallible>>> {
        if std::mem::replace(&mut self.sent, true) {
            return Poll::Ready(None);
        }
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }
}

#[tokio::test]
async fn an_is_error_that_panics_on_the_trailers_counts_as_an_error() {
    let _clock = MockClock::install();
    let name = "edges-panicking-is-error";
    let inner = service_fn(|_: Request<Body>| async {
        let response = Response::builder().header("content-type", "application/grpc");
        Ok::<_, Infallible>(response.body(StatusInTrailers { sent: false }).unwrap())
    });
    let svc = SentinelLayer::new()
        .resource(move |_| name.into())
        .is_error(|_, headers| {
            assert!(!headers.contains_key("grpc-status"), "a bug in is_error");
            false
        })
        .layer(inner);
    let r = Request::post("/pkg.Svc/Call").header("content-type", "application/grpc");
    let response = svc.oneshot(r.body(Body::default()).unwrap()).await.unwrap();
    let mut body = response.into_body();
    // A panic-catching layer outside catches the panic, and drops the body only afterwards.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll_once(std::pin::pin!(body.frame()))
    }));
    assert!(caught.is_err());
    drop(body);
    let stats = metrics::snapshot(name).unwrap();
    assert_eq!(
        (stats.error_total, stats.complete_total, stats.concurrency),
        (1, 1, 0)
    );
}
