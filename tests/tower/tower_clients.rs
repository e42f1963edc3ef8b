//! Per-client limits of the tower layer against clients that own many addresses (an IPv6
//! /64), and routes exempt from system rules. Routers are called as services (no server); the
//! peer address is the request's `ConnectInfo`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use http::{Request, StatusCode};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule, SystemRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::ServiceExt;

fn reset_rules() {
    rules::load_hotspot_rules(vec![]).unwrap();
    rules::load_system_rules(vec![]).unwrap();
}

fn from(path: &str, ip: &str) -> Request<axum::body::Body> {
    let peer = SocketAddr::new(ip.parse().unwrap(), 40_000);
    Request::get(path)
        .extension(ConnectInfo(peer))
        .body(axum::body::Body::empty())
        .unwrap()
}

async fn status(app: &Router, request: Request<axum::body::Body>) -> StatusCode {
    app.clone().oneshot(request).await.unwrap().status()
}

/// How many of the requests from `ips` to `path` pass.
async fn passed(app: &Router, path: &str, ips: &[String]) -> usize {
    let mut passed = 0;
    for ip in ips {
        if status(app, from(path, ip)).await == StatusCode::OK {
            passed += 1;
        }
    }
    passed
}

fn app(route: &str, layer: SentinelLayer) -> Router {
    Router::new()
        .route(route, get(|| async { "ok" }))
        .layer(layer)
}

#[tokio::test]
async fn an_ipv6_client_is_limited_by_its_64_not_by_each_address() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("GET:/login6", 0, 1.0).window(Duration::from_secs(10))
    ])
    .unwrap();
    let default = app("/login6", SentinelLayer::new().client_ip(0));
    // One client rotating through 200 addresses of its /64: one limit.
    let rotating: Vec<String> = (1..=200).map(|i| format!("2001:db8:1:2::{i:x}")).collect();
    assert_eq!(passed(&default, "/login6", &rotating).await, 1);
    let also_rotating: Vec<String> = (1..=50)
        .map(|i| format!("2001:db8:1:2:{i:x}:{i:x}:{i:x}:{i:x}"))
        .collect();
    assert_eq!(passed(&default, "/login6", &also_rotating).await, 0);
    // Other /64s are other clients; IPv4 clients are one per address.
    let others: Vec<String> = ["2001:db8:1:3::1", "2001:db8:2:2::1", "10.0.0.1", "10.0.0.2"]
        .map(String::from)
        .to_vec();
    assert_eq!(passed(&default, "/login6", &others).await, 4);
    // An IPv4-mapped address is the IPv4 address it maps.
    assert_eq!(
        passed(&default, "/login6", &["::ffff:10.0.0.1".to_owned()]).await,
        0
    );
    reset_rules();
}

#[tokio::test]
async fn the_ipv6_prefix_is_configurable_and_exceptions_name_it_by_its_text() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/login48", 0, 1.0)
        .window(Duration::from_secs(10))
        .exception("2001:db8:9:1::/64", 3.0)])
    .unwrap();
    // A /64 exception, under the default prefix: 3 for the VIP's /64, 1 for its neighbour.
    let by_64 = app("/login48", SentinelLayer::new().client_ip(0));
    let vip: Vec<String> = (1..=10).map(|i| format!("2001:db8:9:1::{i}")).collect();
    assert_eq!(passed(&by_64, "/login48", &vip).await, 3, "the exception");
    let next: Vec<String> = (1..=10).map(|i| format!("2001:db8:9:2::{i}")).collect();
    assert_eq!(passed(&by_64, "/login48", &next).await, 1);

    reset_rules();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("GET:/login48", 0, 1.0).window(Duration::from_secs(10))
    ])
    .unwrap();
    // /48: the whole site is one client.
    let by_48 = app(
        "/login48",
        SentinelLayer::new().client_ip(0).ipv6_prefix(48),
    );
    let site: Vec<String> = (1..=10).map(|i| format!("2001:db8:7:{i:x}::1")).collect();
    assert_eq!(passed(&by_48, "/login48", &site).await, 1);
    // /128 (and anything above, clamped): one client per address again.
    for bits in [128, 200] {
        reset_rules();
        rules::load_hotspot_rules(vec![
            HotspotRule::qps("GET:/login48", 0, 1.0).window(Duration::from_secs(10))
        ])
        .unwrap();
        let by_address = app(
            "/login48",
            SentinelLayer::new().client_ip(0).ipv6_prefix(bits),
        );
        let hosts: Vec<String> = (1..=10).map(|i| format!("2001:db8:8::{i}")).collect();
        assert_eq!(passed(&by_address, "/login48", &hosts).await, 10, "/{bits}");
    }
    reset_rules();
}

#[tokio::test]
async fn routes_exempt_from_system_rules_pass_while_the_others_are_shed() {
    let clock = MockClock::install();
    reset_rules();
    clock.advance(Duration::from_secs(1));
    let app = Router::new()
        .route("/work", get(|| async { "ok" }))
        .route("/health", get(|| async { "ok" }))
        .route("/probe/{id}", get(|| async { "ok" }))
        .layer(SentinelLayer::new().exempt_from_system(["/health", "/probe/{id}"]));
    let get = |path: &str| Request::get(path).body(axum::body::Body::empty()).unwrap();
    // 2 inbound passes a second, over every route together.
    rules::load_system_rules(vec![SystemRule::new().qps(2.0)]).unwrap();
    clock.advance(Duration::from_secs(1));
    let before = sentinel_runtime::metrics::inbound().pass_total;
    let mut seen = Vec::new();
    for path in ["/work", "/health", "/probe/1", "/work", "/health", "/work"] {
        seen.push((path, status(&app, get(path)).await.as_u16()));
    }
    for _ in 0..10 {
        assert_eq!(status(&app, get("/health")).await, StatusCode::OK);
        assert_eq!(status(&app, get("/probe/7")).await, StatusCode::OK);
    }
    assert_eq!(
        seen,
        [
            ("/work", 200),
            ("/health", 200),
            ("/probe/1", 200),
            ("/work", 200),
            ("/health", 200),
            ("/work", 503)
        ],
        "at {:?}",
        clock.elapsed()
    );
    // Exempt routes are not inbound traffic: they neither use up nor are refused by the limit.
    assert_eq!(sentinel_runtime::metrics::inbound().pass_total - before, 2);
    reset_rules();
}
