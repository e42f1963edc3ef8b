//! An axum service behind `SentinelLayer`, driven by its own client for about 3 seconds:
//! `cargo run -p sentinel-integration --example axum_service`.
//!
//! - `GET /users/{id}` allows 5 requests a second (a flow rule on the route's resource).
//! - `GET /search` allows each client address 3 a second (a hotspot rule on the client IP, the
//!   address before the one trusted proxy).
//! - `GET /report/{id}` calls a function guarded by the attribute: 2 renders a second, a cached
//!   report beyond that (its fallback), so the client always gets a 200.
//! - `GET /flaky` fails every other request: an error-ratio circuit breaker opens on it, and
//!   while open the layer answers 503 for 1 second.
//! - `/health` is unlimited, and unknown paths all count as the single resource
//!   `GET:<unmatched>`.
//!
//! Rejections keep the layer's status and `Retry-After` but carry a JSON body.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use sentinel_runtime::rules::{self, CircuitBreakerRule, FlowRule, HotspotRule};
use sentinel_runtime::tower::{block_response, SentinelLayer};
use sentinel_runtime::{metrics, sentinel, BlockError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The expensive part of `/report/{id}`: at most 2 renders a second, else the cached copy.
#[sentinel(resource = "render_report", qps = 2, fallback = cached_report)]
async fn render_report(id: u32) -> String {
    format!("fresh report {id}\n")
}

fn cached_report(id: u32, _err: BlockError) -> String {
    format!("cached report {id}\n")
}

/// Every other call fails.
async fn flaky() -> (StatusCode, &'static str) {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 1 {
        (StatusCode::INTERNAL_SERVER_ERROR, "failed\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

/// A JSON string literal of `s`.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A response as the client saw it.
struct Seen {
    status: u16,
    retry_after: Option<String>,
    body: String,
}

/// One GET over a fresh connection.
async fn request(addr: SocketAddr, path: &str, forwarded_for: &str) -> Seen {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {forwarded_for}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    Seen {
        status: head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        retry_after: head
            .lines()
            .find_map(|l| l.strip_prefix("retry-after: ").map(str::to_owned)),
        body: body.to_owned(),
    }
}

#[tokio::main]
async fn main() {
    rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 5.0)]).expect("flow rule");
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/search", 0, 3.0)]).expect("hotspot");
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_ratio("GET:/flaky", 0.4)
        .min_requests(4)
        .recovery(Duration::from_secs(1))])
    .expect("breaker");

    let layer = SentinelLayer::new()
        // One trusted proxy: the client is the rightmost X-Forwarded-For entry.
        .client_ip(1)
        // The default rejection (status, Retry-After), with a JSON body.
        .on_block(|err, parts| {
            let mut response = block_response(err, parts);
            // A gRPC rejection (status 200, the code in its headers) stays as it is.
            if response.status() != StatusCode::OK {
                *response.body_mut() = format!(
                    "{{\"error\":\"blocked\",\"kind\":\"{:?}\",\"resource\":{}}}",
                    err.kind(),
                    json_string(err.resource())
                );
                response.headers_mut().insert(
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/json"),
                );
            }
            response
        });
    let app = Router::new()
        .route("/users/{id}", get(|| async { "a user\n" }))
        .route("/search", get(|| async { "results\n" }))
        .route("/report/{id}", get(|Path(id): Path<u32>| render_report(id)))
        .route("/flaky", get(flaky))
        .route("/health", get(|| async { "ok\n" }))
        .layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .expect("serve")
    });
    println!("serving on http://{addr} for 3 seconds");

    let mut seen: BTreeMap<String, BTreeMap<u16, u32>> = BTreeMap::new();
    let mut retry_afters = BTreeMap::new();
    let mut reports = BTreeMap::new();
    let mut json_bodies = BTreeMap::new();
    let start = Instant::now();
    let mut i = 0u32;
    while start.elapsed() < Duration::from_secs(3) {
        let client = if i.is_multiple_of(2) {
            "10.0.0.1"
        } else {
            "10.0.0.2"
        };
        for (label, path) in [
            ("GET /users/{id}", format!("/users/{i}")),
            ("GET /search (2 clients)", "/search".to_owned()),
            ("GET /report/{id}", format!("/report/{i}")),
            ("GET /flaky", "/flaky".to_owned()),
            ("GET /health", "/health".to_owned()),
            ("GET /unknown-*", format!("/unknown-{i}")),
        ] {
            let response = request(addr, &path, &format!("6.6.6.6, {client}")).await;
            *seen
                .entry(label.to_owned())
                .or_default()
                .entry(response.status)
                .or_default() += 1;
            if let Some(retry) = response.retry_after {
                *retry_afters.entry(retry).or_insert(0u32) += 1;
            }
            if path.starts_with("/report/") {
                let kind = response.body.split(' ').next().unwrap_or("").to_owned();
                *reports.entry(kind).or_insert(0u32) += 1;
            }
            if response.status == 429 || response.status == 503 {
                json_bodies.entry(response.status).or_insert(response.body);
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    println!("\nwhat the client saw (status: count):");
    for (label, statuses) in &seen {
        println!("  {label:<24} {statuses:?}");
    }
    println!("Retry-After values on rejections (seconds: count): {retry_afters:?}");
    println!("/report bodies (fresh: rendered, cached: the attribute's fallback): {reports:?}");
    println!("a rejection's body, by status:");
    for (status, body) in &json_bodies {
        println!("  {status}: {body}");
    }
    println!("\nresources (per second now; the breaker's state):");
    for (name, stats) in metrics::all() {
        if name.starts_with("GET:") || name == "render_report" {
            let breaker = stats.circuit.map(|s| format!("  breaker {s:?}"));
            println!(
                "  {name:<18} pass/s {:>4}  block/s {:>4}  inside {}{}",
                stats.pass_qps,
                stats.block_qps,
                stats.concurrency,
                breaker.unwrap_or_default()
            );
        }
    }
}
