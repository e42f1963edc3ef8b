//! The tower layer in front of a real axum server on 127.0.0.1:0, driven by a raw HTTP/1.1
//! client (one connection per request). Every test installs the mock clock first: that runs
//! them one at a time (rules are process-wide) and keeps the windows still.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule, SystemRule};
use sentinel_runtime::tower::SentinelLayer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::counting_resources;

/// A parsed response: status, headers (lower-case names), body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Serves `app` (with the peer address as `ConnectInfo`) until the test's runtime ends.
async fn serve(app: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

/// One GET with extra headers, `Connection: close`, read to the end (at most 10 s).
async fn get_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("response within 10 s")
        .unwrap();
    parse(&String::from_utf8_lossy(&raw))
}

async fn fetch(addr: SocketAddr, path: &str) -> Reply {
    get_with(addr, path, &[]).await
}

fn parse(raw: &str) -> Reply {
    let (head, body) = raw.split_once("\r\n\r\n").expect("a full response");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn reset_rules() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
    rules::load_system_rules(vec![]).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_rule_answers_503_for_requests_which_are_inbound() {
    let clock = MockClock::install();
    reset_rules();
    clock.advance(Duration::from_secs(1));
    let app = Router::new()
        .route("/a", get(|| async { "a" }))
        .route("/b", get(|| async { "b" }))
        .layer(SentinelLayer::new());
    let addr = serve(app).await;
    let before = metrics::inbound().pass_total;
    assert_eq!(fetch(addr, "/a").await.status, 200);
    assert_eq!(
        metrics::inbound().pass_total - before,
        1,
        "requests are inbound"
    );
    // 3 inbound passes a second over every route together.
    rules::load_system_rules(vec![SystemRule::new().qps(3.0)]).unwrap();
    clock.advance(Duration::from_secs(1));
    let mut statuses = Vec::new();
    for path in ["/a", "/b", "/a", "/b", "/a"] {
        statuses.push(fetch(addr, path).await.status);
    }
    assert_eq!(statuses, vec![200, 200, 200, 503, 503]);
    let blocked = fetch(addr, "/b").await;
    assert_eq!(blocked.header("retry-after"), Some("1"));
    let b = metrics::snapshot("GET:/b").unwrap();
    assert_eq!(b.block_total_by_rule.system, 2);
    reset_rules();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_rule_on_a_route_answers_429_with_retry_after_and_counts_match() {
    let clock = MockClock::install();
    reset_rules();
    rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 5.0)]).unwrap();
    let app = Router::new()
        .route("/users/{id}", get(|| async { "user" }))
        .route("/health", get(|| async { "ok" }))
        .layer(SentinelLayer::new());
    let addr = serve(app).await;

    let (mut ok, mut limited) = (0, 0);
    for i in 0..20 {
        let reply = fetch(addr, &format!("/users/{i}")).await;
        match reply.status {
            200 => ok += 1,
            429 => {
                limited += 1;
                let retry: u64 = reply.header("retry-after").unwrap().parse().unwrap();
                assert!(retry >= 1, "Retry-After {retry}");
                // The status's words and the hint, not the resource (nor the rule).
                assert_eq!(
                    reply.body,
                    format!("Too Many Requests; retry after {retry} s")
                );
            }
            other => panic!("unexpected status {other}: {reply:?}"),
        }
    }
    assert_eq!((ok, limited), (5, 15), "at {:?}", clock.elapsed());
    for _ in 0..10 {
        assert_eq!(
            fetch(addr, "/health").await.status,
            200,
            "/health is its own resource"
        );
    }
    let users = metrics::snapshot("GET:/users/{id}").unwrap();
    assert_eq!(users.pass_qps, 5.0, "{users:?}");
    assert_eq!(users.block_qps, 15.0, "{users:?}");
    assert_eq!(users.complete_qps, 5.0, "{users:?}");
    assert_eq!(users.concurrency, 0, "{users:?}");
    let health = metrics::snapshot("GET:/health").unwrap();
    assert_eq!((health.pass_qps, health.block_qps), (10.0, 0.0));
    assert!(
        metrics::snapshot("GET:/users/3").is_none(),
        "raw paths never name resources"
    );

    // the next second admits again
    clock.advance(Duration::from_secs(1));
    assert_eq!(fetch(addr, "/users/1").await.status, 200);
    reset_rules();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unknown_paths_is_one_resource() {
    let _clock = MockClock::install();
    let _counting = counting_resources().await;
    reset_rules();
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .layer(SentinelLayer::new());
    let addr = serve(app).await;
    let before = metrics::all().len();
    for i in 0..1000 {
        assert_eq!(fetch(addr, &format!("/nope-{i}/x?q={i}")).await.status, 404);
    }
    let all = metrics::all();
    // Other tests of this binary leave unmatched resources of other methods and prefixes: this
    // test's 1 000 paths must all be the one `GET:<unmatched>`, and add at most it (below; no
    // other test makes resources meanwhile: `counting_resources`).
    let unmatched: Vec<_> = all
        .iter()
        .filter(|(n, _)| n.starts_with("GET:") && n.contains("<unmatched>"))
        .collect();
    assert_eq!(unmatched.len(), 1, "{unmatched:?}");
    assert_eq!(unmatched[0].0, "GET:<unmatched>");
    assert_eq!(unmatched[0].1.pass_qps, 1000.0);
    assert!(all.iter().all(|(n, _)| !n.contains("/nope-")));
    assert!(all.len() <= before + 1, "{} -> {}", before, all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hotspot_rule_on_a_header_limits_each_client_separately() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/items", 0, 2.0)]).unwrap();
    let layer = SentinelLayer::new().param(|parts| {
        parts
            .headers
            .get("x-client")?
            .to_str()
            .ok()
            .map(str::to_owned)
    });
    let app = Router::new()
        .route("/items", get(|| async { "items" }))
        .layer(layer);
    let addr = serve(app).await;
    let mut seen = Vec::new();
    for client in ["alice", "alice", "alice", "alice", "bob", "bob", "bob"] {
        let reply = get_with(addr, "/items", &[("x-client", client)]).await;
        if reply.status == 429 {
            assert!(reply.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
        }
        seen.push((client, reply.status));
    }
    assert_eq!(
        seen,
        [
            ("alice", 200),
            ("alice", 200),
            ("alice", 429),
            ("alice", 429),
            ("bob", 200),
            ("bob", 200),
            ("bob", 429)
        ]
    );
    let stats = metrics::snapshot("GET:/items").unwrap();
    assert_eq!((stats.pass_qps, stats.block_qps), (4.0, 3.0), "{stats:?}");
    reset_rules();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_ip_behind_a_trusted_proxy_uses_the_right_end_of_x_forwarded_for() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/ip", 0, 1.0)]).unwrap();
    let app = Router::new()
        .route("/ip", get(|| async { "ip" }))
        .layer(SentinelLayer::new().client_ip(1));
    let addr = serve(app).await;
    // The client forges the leftmost entry differently each time: it does not matter.
    let first = get_with(addr, "/ip", &[("x-forwarded-for", "1.1.1.1, 9.9.9.9")]).await;
    let forged = get_with(addr, "/ip", &[("x-forwarded-for", "2.2.2.2, 9.9.9.9")]).await;
    let other = get_with(addr, "/ip", &[("x-forwarded-for", "1.1.1.1, 8.8.8.8")]).await;
    assert_eq!((first.status, forged.status, other.status), (200, 429, 200));
    reset_rules();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_open_an_error_ratio_breaker_then_503() {
    let _clock = MockClock::install();
    reset_rules();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_ratio("GET:/fail", 0.5)
        .min_requests(5)
        .recovery(Duration::from_secs(10))])
    .unwrap();
    let app = Router::new()
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .layer(SentinelLayer::new());
    let addr = serve(app).await;
    let mut statuses = Vec::new();
    for _ in 0..10 {
        let reply = fetch(addr, "/fail").await;
        if reply.status == 503 {
            assert!(reply.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
        }
        statuses.push(reply.status);
    }
    let errors = statuses.iter().filter(|&&s| s == 500).count();
    assert_eq!(&statuses[..errors], vec![500; errors]);
    assert_eq!(&statuses[errors..], vec![503; 10 - errors]);
    assert_eq!(errors, 5, "{statuses:?}");
    let stats = metrics::snapshot("GET:/fail").unwrap();
    assert_eq!(
        (stats.pass_qps, stats.block_qps, stats.error_qps),
        (5.0, 5.0, 5.0),
        "{stats:?}"
    );
    reset_rules();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_from_a_slow_handler_leaves_no_call_inside() {
    let _clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        )
        .layer(SentinelLayer::new());
    let addr = serve(app).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let inside = || metrics::snapshot("GET:/slow").map_or(0, |s| s.concurrency);
    for _ in 0..200 {
        if inside() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(inside(), 1, "the slow call is inside");
    drop(stream); // the client goes away
    for _ in 0..500 {
        if inside() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(inside(), 0, "the dropped call exited");
    let stats = metrics::snapshot("GET:/slow").unwrap();
    assert_eq!(
        (stats.pass_qps, stats.complete_qps),
        (1.0, 1.0),
        "{stats:?}"
    );
}

/// Guarded by the attribute inside a handler: 2 renders a second, the fallback beyond.
#[sentinel_runtime::sentinel(resource = "tower-inner-render", qps = 2, fallback = render_busy)]
async fn render(id: u32) -> String {
    format!("fresh {id}")
}

fn render_busy(id: u32, _err: sentinel_runtime::BlockError) -> String {
    format!("busy {id}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attribute_guarded_function_inside_a_handler_keeps_its_own_resource_and_limit() {
    let _clock = MockClock::install();
    reset_rules();
    // The route's own limit (3) and the function's (2) are separate resources.
    rules::load_flow_rules(vec![FlowRule::qps("GET:/render/{id}", 3.0)]).unwrap();
    let app = Router::new()
        .route(
            "/render/{id}",
            get(|axum::extract::Path(id): axum::extract::Path<u32>| render(id)),
        )
        .layer(SentinelLayer::new());
    let addr = serve(app).await;
    let mut bodies = Vec::new();
    for i in 0..5 {
        let reply = fetch(addr, &format!("/render/{i}")).await;
        bodies.push((reply.status, reply.body));
    }
    let seen: Vec<(u16, &str)> = bodies.iter().map(|(s, b)| (*s, b.as_str())).collect();
    assert_eq!(
        seen,
        [
            (200, "fresh 0"),
            (200, "fresh 1"),
            (200, "busy 2"),
            (429, seen[3].1),
            (429, seen[4].1),
        ],
        "the function's limit inside the route's"
    );
    let route = metrics::snapshot("GET:/render/{id}").unwrap();
    assert_eq!((route.pass_total, route.block_total), (3, 2), "{route:?}");
    let inner = metrics::snapshot("tower-inner-render").unwrap();
    assert_eq!((inner.pass_total, inner.block_total), (2, 1), "{inner:?}");
    assert_eq!((route.concurrency, inner.concurrency), (0, 0));
    reset_rules();
}
