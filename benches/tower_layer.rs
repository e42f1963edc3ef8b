//! A trivial axum handler: without a layer, with `SentinelLayer` and one flow rule, and with
//! tower-governor's layer, in one run. Each iteration sends one request through the router
//! (`oneshot`, no sockets) on a current-thread tokio runtime, each router prepared as a server
//! prepares it ([`served`]); what a layer adds is its figure minus the plain router's.
//!
//! A second group limits each client: requests from 1024 peer addresses in turn (axum's
//! `ConnectInfo`), through `SentinelLayer::client_ip(0)` with a hotspot rule, and through
//! tower-governor's `PeerIpKeyExtractor` (its default use).

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http::{Request, Response};
use http_body_util::BodyExt;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::util::MapResponseLayer;
use tower::ServiceExt;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};
use tower_governor::GovernorLayer;

async fn user() -> &'static str {
    "ok"
}

fn router() -> Router {
    Router::new().route("/users/{id}", get(user))
}

/// `app` as a server runs it: `axum::serve` takes `Router::into_make_service`, which calls
/// `with_state(())` so that each handler and its layers become a service once. A router called
/// without it (`oneshot` on the `Router` as built) applies every layer again on every request,
/// a cost no server pays, which the figures would carry.
fn served(app: Router) -> Router {
    app.with_state(())
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    // High enough that every request passes: this measures the layers' cost, not rejections.
    rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 2e9)]).expect("valid rule");
    let plain = served(router());
    let sentinel = served(router().layer(SentinelLayer::new()));
    let config = GovernorConfigBuilder::default()
        .key_extractor(GlobalKeyExtractor)
        .per_nanosecond(1)
        .burst_size(u32::MAX)
        .finish()
        .expect("a valid governor config");
    let governed = served(router().layer(GovernorLayer::new(config)));
    // The floor of any layer that holds something until the response body ends: it wraps the
    // body (so axum boxes it again) and does nothing else.
    let pass_through = served(
        router().layer(MapResponseLayer::new(|response: Response<Body>| {
            response.map(|body| body.map_frame(|frame| frame))
        })),
    );
    let send = |app: &Router| {
        let app = app.clone();
        runtime.block_on(async move {
            let request = Request::get("/users/7")
                .body(Body::empty())
                .expect("a request");
            let response = app.oneshot(request).await.expect("infallible");
            assert!(response.status().is_success());
            black_box(response);
        })
    };
    let mut group = c.benchmark_group("axum handler");
    group.bench_function("no layer", |b| b.iter(|| send(&plain)));
    group.bench_function("SentinelLayer, one flow rule", |b| {
        b.iter(|| send(&sentinel))
    });
    group.bench_function("tower-governor GovernorLayer", |b| {
        b.iter(|| send(&governed))
    });
    group.bench_function("pass-through layer wrapping the body", |b| {
        b.iter(|| send(&pass_through))
    });
    group.finish();
    per_client(c, &runtime);
}

/// Per-client limits: the same handler, each request from the next of 1024 addresses.
fn per_client(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let peers: Vec<SocketAddr> = (0..1024u32)
        .map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 40_000)))
        .collect();
    // High enough that every request passes.
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/users/{id}", 0, 1e9)])
        .expect("valid rule");
    let plain = served(router());
    let sentinel = served(router().layer(SentinelLayer::new().client_ip(0)));
    let config = GovernorConfigBuilder::default()
        .key_extractor(PeerIpKeyExtractor)
        .per_nanosecond(1)
        .burst_size(u32::MAX)
        .finish()
        .expect("a valid governor config");
    let governed = served(router().layer(GovernorLayer::new(config)));
    let mut next = 0;
    let mut send = |app: &Router| {
        let app = app.clone();
        let peer = peers[next % peers.len()];
        next += 1;
        runtime.block_on(async move {
            let mut request = Request::get("/users/7")
                .body(Body::empty())
                .expect("a request");
            request.extensions_mut().insert(ConnectInfo(peer));
            let response = app.oneshot(request).await.expect("infallible");
            assert!(response.status().is_success());
            black_box(response);
        })
    };
    let mut group = c.benchmark_group("axum handler, per client");
    group.bench_function("no layer", |b| b.iter(|| send(&plain)));
    group.bench_function("SentinelLayer, client_ip hotspot rule", |b| {
        b.iter(|| send(&sentinel))
    });
    group.bench_function("tower-governor GovernorLayer, PeerIpKeyExtractor", |b| {
        b.iter(|| send(&governed))
    });
    group.finish();
    rules::load_hotspot_rules(vec![]).expect("no rules");
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
