//! The standard signals of the tower layer, each opt-in: the IETF RateLimit header fields
//! (draft-ietf-httpapi-ratelimit-headers-11) and RFC 9457 problem details; and a custom
//! rejection's content type taken from its body. Routers are called as services, under the
//! mock clock.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule};
use sentinel_runtime::tower::{block_response, ConnectInfo, SentinelLayer};
use tower::ServiceExt;

fn reset_rules() {
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_hotspot_rules(vec![]).unwrap();
    rules::load_circuit_breaker_rules(vec![]).unwrap();
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn call(app: &Router, request: Request<axum::body::Body>) -> Reply {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

fn get_req(path: &str) -> Request<axum::body::Body> {
    Request::get(path).body(axum::body::Body::empty()).unwrap()
}

fn from(path: &str, peer: &str) -> Request<axum::body::Body> {
    Request::get(path)
        .extension(ConnectInfo(peer.parse::<SocketAddr>().unwrap()))
        .body(axum::body::Body::empty())
        .unwrap()
}

/// A structured-field List's items (no commas inside our items' strings), each as its String
/// and its parameters in order.
fn sf_items(field: &str) -> Vec<(String, Vec<(String, String)>)> {
    field
        .split(',')
        .map(|item| {
            let mut parts = item.trim().split(';');
            let name = parts.next().unwrap();
            assert!(
                name.len() >= 2 && name.starts_with('"') && name.ends_with('"'),
                "an item's value is an sf-string: {item:?}"
            );
            let params = parts
                .map(|p| {
                    let (k, v) = p.split_once('=').expect("key=value");
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            (name[1..name.len() - 1].to_owned(), params)
        })
        .collect()
}

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `r` and `t` of the one `RateLimit` item, and its name.
fn remaining(reply: &Reply) -> (String, u64, u64) {
    let field = reply.header("ratelimit").expect("a RateLimit field");
    let items = sf_items(field);
    assert_eq!(items.len(), 1, "one RateLimit item: {field}");
    let (name, params) = &items[0];
    let int = |k| param(params, k).unwrap().parse::<u64>().unwrap();
    (name.clone(), int("r"), int("t"))
}

#[tokio::test]
async fn rate_limit_fields_count_down_within_an_instant_and_refill_a_second_later() {
    let clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/std/orders", get(|| async { "ok" }))
        .layer(SentinelLayer::new().rate_limit_headers());
    rules::load_flow_rules(vec![FlowRule::qps("GET:/std/orders", 5.0)]).unwrap();

    let mut seen = Vec::new();
    let mut policy = None;
    for i in 0..7 {
        let reply = call(&app, get_req("/std/orders")).await;
        let expected = if i < 5 { 200 } else { 429 };
        assert_eq!(
            reply.status,
            expected,
            "request {i} at {:?}",
            clock.elapsed()
        );
        let field = reply
            .header("ratelimit-policy")
            .expect("a policy")
            .to_owned();
        let items = sf_items(&field);
        assert_eq!(items.len(), 1, "{field}");
        assert_eq!(param(&items[0].1, "q"), Some("5"), "{field}");
        assert_eq!(param(&items[0].1, "w"), Some("1"), "{field}");
        assert!(
            param(&items[0].1, "pk").is_none(),
            "not per client: {field}"
        );
        if let Some(qu) = param(&items[0].1, "qu") {
            assert_eq!(qu, "\"requests\"");
        }
        // Stable across responses.
        assert_eq!(policy.get_or_insert_with(|| field.clone()), &field);
        let (name, r, t) = remaining(&reply);
        assert_eq!(name, items[0].0, "the RateLimit item names the policy");
        if reply.status == 429 {
            let retry: u64 = reply.header("retry-after").unwrap().parse().unwrap();
            assert!(retry >= t, "Retry-After {retry} < t {t}");
        }
        seen.push((r, t));
    }
    assert_eq!(
        seen,
        [(4, 1), (3, 1), (2, 1), (1, 1), (0, 1), (0, 1), (0, 1)],
        "(r, t) at one instant"
    );

    clock.advance(Duration::from_secs(1));
    let reply = call(&app, get_req("/std/orders")).await;
    assert_eq!(reply.status, 200, "at {:?}", clock.elapsed());
    assert_eq!(
        remaining(&reply).1,
        4,
        "a second later the window is whole again, less this one"
    );
    reset_rules();
}

#[tokio::test]
async fn without_the_option_or_without_a_rule_no_field_is_sent() {
    let _clock = MockClock::install();
    reset_rules();
    let plain = Router::new()
        .route("/std/plain", get(|| async { "ok" }))
        .layer(SentinelLayer::new());
    let with = Router::new()
        .route("/std/plain", get(|| async { "ok" }))
        .route("/std/free", get(|| async { "ok" }))
        .layer(SentinelLayer::new().rate_limit_headers());
    rules::load_flow_rules(vec![FlowRule::qps("GET:/std/plain", 1.0)]).unwrap();

    let reply = call(&plain, get_req("/std/plain")).await;
    assert_eq!(reply.status, 200);
    assert!(reply.header("ratelimit").is_none() && reply.header("ratelimit-policy").is_none());
    let refused = call(&plain, get_req("/std/plain")).await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("ratelimit").is_none() && refused.header("ratelimit-policy").is_none());
    // Today's refusal, unchanged.
    assert_eq!(refused.body, "Too Many Requests; retry after 1 s");
    assert_eq!(
        refused.header("content-type"),
        Some("text/plain; charset=utf-8")
    );

    let free = call(&with, get_req("/std/free")).await;
    assert_eq!(free.status, 200);
    assert!(
        free.header("ratelimit").is_none() && free.header("ratelimit-policy").is_none(),
        "a route without rules sends neither field"
    );
    reset_rules();
}

/// Decodes standard base64 (with padding).
fn unbase64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).expect("base64") as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}

#[tokio::test]
async fn a_per_client_rule_has_a_partition_key_per_client_that_hides_the_address() {
    let _clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/std/search", get(|| async { "ok" }))
        .layer(SentinelLayer::new().client_ip(0).rate_limit_headers());
    rules::load_hotspot_rules(vec![HotspotRule::qps_by_name(
        "GET:/std/search",
        "client_ip",
        5.0,
    )])
    .unwrap();
    let (a, b) = ("203.0.113.77:4000", "198.51.100.201:4000");

    let pk_and_r = |reply: &Reply| {
        let field = reply.header("ratelimit-policy").unwrap().to_owned();
        let items = sf_items(&field);
        assert_eq!(items.len(), 1, "{field}");
        assert_eq!(param(&items[0].1, "q"), Some("5"));
        assert_eq!(param(&items[0].1, "w"), Some("1"));
        let pk = param(&items[0].1, "pk")
            .expect("a per-client rule has pk")
            .to_owned();
        assert!(
            pk.len() > 2 && pk.starts_with(':') && pk.ends_with(':'),
            "pk is a Byte Sequence: {pk}"
        );
        let bytes = unbase64(&pk[1..pk.len() - 1]);
        assert!(!bytes.is_empty());
        (pk, bytes, remaining(reply).1, field)
    };

    let mut first_a = None;
    for i in 0..3 {
        let reply = call(&app, from("/std/search", a)).await;
        assert_eq!(reply.status, 200);
        let (pk, bytes, r, field) = pk_and_r(&reply);
        assert_eq!(r, 4 - i, "client a's own count");
        assert_eq!(
            first_a.get_or_insert_with(|| pk.clone()),
            &pk,
            "stable per client"
        );
        assert!(!field.contains("203.0.113.77"), "{field}");
        assert!(
            !bytes.windows(4).any(|w| w == [203u8, 0, 113, 77]),
            "the address's octets in {bytes:?}"
        );
        let limit = reply.header("ratelimit").unwrap();
        assert!(!limit.contains("203.0.113.77"), "{limit}");
    }
    // Another client: its own count and its own key.
    let reply = call(&app, from("/std/search", b)).await;
    let (pk_b, bytes_b, r_b, _) = pk_and_r(&reply);
    assert_eq!(r_b, 4, "client b's count is its own");
    assert_ne!(
        Some(&pk_b),
        first_a.as_ref(),
        "different clients, different keys"
    );
    assert!(!bytes_b.windows(4).any(|w| w == [198u8, 51, 100, 201]));
    // Client a again: its count went on.
    let reply = call(&app, from("/std/search", a)).await;
    assert_eq!(pk_and_r(&reply).2, 1);
    reset_rules();
}

fn problem(reply: &Reply) -> serde_json::Map<String, serde_json::Value> {
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json")
    );
    let value: serde_json::Value = serde_json::from_str(&reply.body).expect("a JSON problem");
    let object = value.as_object().expect("an object").clone();
    for member in ["type", "title", "detail"] {
        let text = object[member].as_str().unwrap_or_default();
        assert!(!text.is_empty(), "{member} in {}", reply.body);
    }
    assert_eq!(
        object["status"].as_u64(),
        Some(u64::from(reply.status.as_u16()))
    );
    assert!(!object.contains_key("resource"), "{}", reply.body);
    object
}

#[tokio::test]
async fn refusals_are_problem_details_without_rule_internals() {
    let _clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/std/users/{id}", get(|| async { "user" }))
        .route("/std/flaky", get(|| async { StatusCode::BAD_GATEWAY }))
        .layer(SentinelLayer::new().problem_details());
    rules::load_flow_rules(vec![FlowRule::qps("GET:/std/users/{id}", 1.0)]).unwrap();
    assert_eq!(call(&app, get_req("/std/users/1")).await.status, 200);
    let reply = call(&app, get_req("/std/users/2")).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("1"), "Retry-After stays");
    let p = problem(&reply);
    assert_eq!(
        p["type"],
        "https://iana.org/assignments/http-problem-types#quota-exceeded"
    );
    assert!(
        !p.contains_key("violated-policies"),
        "no RateLimit fields asked for"
    );
    for secret in ["GET:/std/users/{id}", "/std/users", "{id}", "flow"] {
        assert!(!reply.body.contains(secret), "{secret} in {}", reply.body);
    }

    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count("GET:/std/flaky", 1)
        .min_requests(1)
        .recovery(Duration::from_secs(7))])
    .unwrap();
    assert_eq!(call(&app, get_req("/std/flaky")).await.status, 502);
    let reply = call(&app, get_req("/std/flaky")).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header("retry-after"), Some("7"));
    let p = problem(&reply);
    assert_eq!(
        p["type"],
        "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
    );
    assert!(!reply.body.contains("/std/flaky"), "{}", reply.body);
    reset_rules();
}

#[tokio::test]
async fn with_both_options_a_problem_names_the_violated_policies() {
    let _clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/std/both", get(|| async { "ok" }))
        .layer(SentinelLayer::new().rate_limit_headers().problem_details());
    rules::load_flow_rules(vec![
        FlowRule::qps("GET:/std/both", 2.0),
        FlowRule::qps("GET:/std/both", 100.0).window(Duration::from_secs(60), 60),
    ])
    .unwrap();
    for _ in 0..2 {
        assert_eq!(call(&app, get_req("/std/both")).await.status, 200);
    }
    let reply = call(&app, get_req("/std/both")).await;
    assert_eq!(reply.status, 429);
    let names: Vec<String> = sf_items(reply.header("ratelimit-policy").unwrap())
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names.len(), 2, "one item per rule");
    let p = problem(&reply);
    let violated: Vec<&str> = p["violated-policies"]
        .as_array()
        .expect("violated-policies")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        violated,
        [names[0].as_str()],
        "only the 2/s rule has nothing left"
    );
    let (name, r, _) = remaining(&reply);
    assert_eq!((name.as_str(), r), (names[0].as_str(), 0));
    reset_rules();
}

#[tokio::test]
async fn a_custom_json_rejection_says_it_is_json() {
    let _clock = MockClock::install();
    reset_rules();
    let json = Router::new()
        .route("/std/json", get(|| async { "ok" }))
        .layer(SentinelLayer::new().on_block(|err, parts| {
            let mut response = block_response(err, parts);
            *response.body_mut() = format!("{{\"error\":\"{:?}\"}}", err.kind());
            response
        }));
    let own = Router::new()
        .route("/std/own", get(|| async { "ok" }))
        .layer(SentinelLayer::new().on_block(|err, parts| {
            let mut response = block_response(err, parts);
            *response.body_mut() = "{\"error\":1}".into();
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/vnd.shop+json"),
            );
            response
        }));
    let text = Router::new()
        .route("/std/text", get(|| async { "ok" }))
        .layer(SentinelLayer::new().on_block(|err, parts| {
            let mut response = block_response(err, parts);
            *response.body_mut() = "[busy] come back later".into();
            response
        }));
    rules::load_flow_rules(vec![
        FlowRule::qps("GET:/std/json", 0.0),
        FlowRule::qps("GET:/std/own", 0.0),
        FlowRule::qps("GET:/std/text", 0.0),
    ])
    .unwrap();
    let reply = call(&json, get_req("/std/json")).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.body, r#"{"error":"Flow"}"#);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("retry-after"), Some("1"));

    let reply = call(&own, get_req("/std/own")).await;
    assert_eq!(
        reply.header("content-type"),
        Some("application/vnd.shop+json"),
        "the handler's own content type is kept"
    );
    let reply = call(&text, get_req("/std/text")).await;
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; charset=utf-8"),
        "text stays text"
    );
    reset_rules();
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waits_its_turn_gets_the_fields_too() {
    let clock = MockClock::install();
    reset_rules();
    let app = Router::new()
        .route("/std/paced", get(|| async { "ok" }))
        .layer(SentinelLayer::new().client_ip(0).rate_limit_headers());
    rules::load_hotspot_rules(vec![HotspotRule::qps_by_name(
        "GET:/std/paced",
        "client_ip",
        1.0,
    )
    .throttle(Duration::from_secs(10))])
    .unwrap();
    let peer = "192.0.2.10:4000";
    let first = call(&app, from("/std/paced", peer)).await;
    assert_eq!(first.status, 200);
    assert_eq!(remaining(&first).1, 0, "a quota of 1, spent");
    // The second waits for its turn (a second later), then is answered with the fields.
    let second = call(&app, from("/std/paced", peer)).await;
    assert_eq!(second.status, 200);
    assert!(
        clock.elapsed() >= Duration::from_secs(1),
        "it waited: {:?}",
        clock.elapsed()
    );
    let policy = second.header("ratelimit-policy").expect("a policy");
    assert!(policy.contains(";q=1;w=1;pk=:"), "{policy}");
    assert_eq!(remaining(&second).1, 0);
    reset_rules();
}
