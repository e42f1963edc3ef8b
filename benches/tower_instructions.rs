//! Instructions the tower layer adds per request, counted exactly with callgrind on one thread.
//! The services are those of `benches/tower_layer.rs` (a trivial axum handler, each router
//! prepared as a server prepares it), by the first argument:
//!
//! - `none`: the plain router;
//! - `identity`: a layer that returns the response unchanged (the floor of any layer applied
//!   with `Router::layer`: axum boxes and clones the layered service and its future);
//! - `passthrough`: a layer that only wraps the response body (the floor of any layer that
//!   holds something until the body ends);
//! - `sized`: the same, with a wrapper that keeps the body's size hint (so the response keeps
//!   its `content-length`, as `SentinelLayer`'s body does; `passthrough`'s loses it);
//! - `norule`: `SentinelLayer::new()` on a route without rules (statistics only);
//! - `sentinel`: `SentinelLayer` with one flow rule, every request admitted;
//! - `nested`: the same router mounted with `nest_service` (axum then builds each request's
//!   matched path anew);
//! - `governor`: tower-governor's `GovernorLayer` with a global key, every request admitted.
//!
//! Per client, each request from the next of 64 peer addresses (axum's `ConnectInfo`, inserted
//! into every request of these cases, so their floor is `identity_peer`, not `identity`):
//!
//! - `identity_peer`: `identity`, with the peer addresses;
//! - `hotspot`: `SentinelLayer::new().client_ip(0)` with a hotspot rule on the client's
//!   address, every request admitted;
//! - `governor_peer`: tower-governor keyed by `PeerIpKeyExtractor`, every request admitted.
//!
//! The client layer, around a client that answers at once (`Ready`: a `Service` returning a
//! ready `Response<String>`), each request's body read to its end (the entry is held until
//! then); their floor is `client_none`:
//!
//! - `client_none`: the bare client;
//! - `client_norule`: `SentinelClientLayer::new()` around it, no rules (statistics only; the
//!   default name `GET:http://inventory:8080` from the per-thread cache);
//! - `client`: the same with one flow rule on that name, every request admitted.
//!
//! Each run sends 200 unmeasured requests, then N requests through `measured`, one
//! `block_on(oneshot)` each. Build with `cargo bench -p sentinel-benches --bench tower_instructions --no-run`, then
//! run the binary it names under
//! `valgrind --tool=callgrind --toggle-collect='tower_instructions::measured'` with the case and
//! N, then 3N requests: the difference of the two totals over 2N is one request.
//! `scripts/tower_instructions.sh` does all of it and prints each layer's figure minus `none`.

use std::hint::black_box;

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use http::{Request, Response};
use http_body_util::BodyExt;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::tower::{Layer, SentinelClientLayer, SentinelClientService, SentinelLayer};
use tower::util::MapResponseLayer;
use tower::ServiceExt;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};
use tower_governor::GovernorLayer;

/// Requests sent before the measured ones (first-call set-up, caches).
const WARM_UP: u64 = 200;

/// The peer addresses of the per-client cases.
const PEERS: u32 = 64;

async fn user() -> &'static str {
    "ok"
}

fn router() -> Router {
    Router::new().route("/users/{id}", get(user))
}

/// As `axum::serve` prepares a router (see `benches/tower_layer.rs`).
fn served(app: Router) -> Router {
    app.with_state(())
}

fn app(case: &str) -> Router {
    match case {
        "none" => served(router()),
        "identity" | "identity_peer" => served(router().layer(MapResponseLayer::new(
            // axum's own body, unchanged: not boxed again.
            |response: Response<Body>| response,
        ))),
        "passthrough" => served(router().layer(MapResponseLayer::new(
            |response: Response<Body>| response.map(|body| body.map_frame(|frame| frame)),
        ))),
        "sized" => served(
            router().layer(MapResponseLayer::new(|response: Response<Body>| {
                response.map(|body| body.map_err(|e| e))
            })),
        ),
        "sentinel" => {
            // High enough that every request passes: the layer's cost, not rejections.
            rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 2e9)])
                .expect("valid rule");
            served(router().layer(SentinelLayer::new()))
        }
        "sentinel_headers" => {
            // `sentinel` with the RateLimit fields on every response.
            rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 2e9)])
                .expect("valid rule");
            served(router().layer(SentinelLayer::new().rate_limit_headers()))
        }
        "norule" => served(router().layer(SentinelLayer::new())),
        "hotspot" => {
            rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/users/{id}", 0, 2e9)])
                .expect("valid rule");
            served(router().layer(SentinelLayer::new().client_ip(0)))
        }
        "hotspot_headers" => {
            // `hotspot` with the RateLimit fields (a `pk` per client) on every response.
            rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/users/{id}", 0, 2e9)])
                .expect("valid rule");
            served(router().layer(SentinelLayer::new().client_ip(0).rate_limit_headers()))
        }
        "nested" => {
            // Mounted with `nest_service`: axum builds the matched path for each request.
            rules::load_flow_rules(vec![FlowRule::qps("GET:/api/users/{id}", 2e9)])
                .expect("valid rule");
            served(Router::new().nest_service("/api", router().layer(SentinelLayer::new())))
        }
        "governor" => {
            let config = GovernorConfigBuilder::default()
                .key_extractor(GlobalKeyExtractor)
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .finish()
                .expect("a valid governor config");
            served(router().layer(GovernorLayer::new(config)))
        }
        "governor_peer" => {
            let config = GovernorConfigBuilder::default()
                .key_extractor(PeerIpKeyExtractor)
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .finish()
                .expect("a valid governor config");
            served(router().layer(GovernorLayer::new(config)))
        }
        other => {
            panic!(
                "unknown case {other:?}: none, identity, passthrough, sized, norule, sentinel, \
                 nested, governor, identity_peer, hotspot, governor_peer, client_none, \
                 client_norule, client, sentinel_headers or hotspot_headers"
            )
        }
    }
}

/// A client that answers every request at once with a 200 and a short body.
#[derive(Clone, Copy)]
struct Ready;

impl tower::Service<Request<()>> for Ready {
    type Response = Response<String>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Response<String>, std::convert::Infallible>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::convert::Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Ok(Response::new(String::from("ok"))))
    }
}

/// What a case sends its requests to: a router, or a client.
enum Target {
    Router(Router),
    Client(Ready),
    Guarded(SentinelClientService<Ready>),
}

/// The client cases' target.
fn client(case: &str) -> Option<Target> {
    match case {
        "client_none" => Some(Target::Client(Ready)),
        "client_norule" => Some(Target::Guarded(SentinelClientLayer::new().layer(Ready))),
        "client" => {
            rules::load_flow_rules(vec![FlowRule::qps("GET:http://inventory:8080", 2e9)])
                .expect("valid rule");
            Some(Target::Guarded(SentinelClientLayer::new().layer(Ready)))
        }
        _ => None,
    }
}

/// One request through a client, its body read to its end.
fn send_client<S, B>(runtime: &tokio::runtime::Runtime, client: &S)
where
    S: tower::Service<Request<()>, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
    B: axum::body::HttpBody,
    B::Error: std::fmt::Debug,
{
    let client = client.clone();
    runtime.block_on(async move {
        let request = Request::get("http://inventory:8080/items/7")
            .body(())
            .expect("a request");
        let response = client.oneshot(request).await.expect("answered");
        assert!(response.status().is_success());
        black_box(response.into_body().collect().await.expect("a body"));
    })
}

fn send_to(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    path: &'static str,
    peer: Option<SocketAddr>,
) {
    match target {
        Target::Router(app) => send(runtime, app, path, peer),
        Target::Client(client) => send_client(runtime, client),
        Target::Guarded(client) => send_client(runtime, client),
    }
}

fn send(
    runtime: &tokio::runtime::Runtime,
    app: &Router,
    path: &'static str,
    peer: Option<SocketAddr>,
) {
    let app = app.clone();
    runtime.block_on(async move {
        let mut request = Request::get(path).body(Body::empty()).expect("a request");
        if let Some(peer) = peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let response = app.oneshot(request).await.expect("infallible");
        assert!(response.status().is_success());
        black_box(response);
    })
}

/// The measured requests (callgrind counts only inside this function).
#[inline(never)]
fn measured(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    path: &'static str,
    peers: &[SocketAddr],
    requests: u64,
) {
    for i in 0..requests {
        send_to(runtime, black_box(target), path, peer(peers, i));
    }
}

/// The `i`th request's peer address, if the case has any.
fn peer(peers: &[SocketAddr], i: u64) -> Option<SocketAddr> {
    (!peers.is_empty()).then(|| peers[(i % peers.len() as u64) as usize])
}

fn main() {
    // `cargo bench -p sentinel-benches` passes `--bench`; the case and the number are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let case = args.first().map_or("sentinel", String::as_str);
    let requests: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let target = client(case).unwrap_or_else(|| Target::Router(app(case)));
    let path = if case == "nested" {
        "/api/users/7"
    } else {
        "/users/7"
    };
    let peers: Vec<SocketAddr> = if matches!(
        case,
        "identity_peer" | "hotspot" | "hotspot_headers" | "governor_peer"
    ) {
        (0..PEERS)
            .map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 40_000)))
            .collect()
    } else {
        Vec::new()
    };
    for i in 0..WARM_UP {
        send_to(&runtime, &target, path, peer(&peers, i));
    }
    measured(&runtime, &target, path, &peers, requests);
    println!("{case}: {requests} requests after {WARM_UP} unmeasured");
}
