//! An axum service behind `SentinelLayer`, driven by its own client for about 3 seconds:
//! `cargo run --example axum_service`.
//!
//! `GET /users/{id}` allows 5 requests a second (429 beyond, with `Retry-After`), each client
//! address 3 a second on `GET /search` (a hotspot rule on the client IP), `/health` is
//! unlimited, and unknown paths all count as the single resource `GET:<unmatched>`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::tower::SentinelLayer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One GET over a fresh connection; returns the status and the `Retry-After` header.
async fn request(addr: SocketAddr, path: &str, forwarded_for: &str) -> (u16, Option<String>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {forwarded_for}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let retry = raw
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: ").map(str::to_owned));
    (status, retry)
}

#[tokio::main]
async fn main() {
    rules::load_flow_rules(vec![FlowRule::qps("GET:/users/{id}", 5.0)]).expect("flow rule");
    rules::load_hotspot_rules(vec![HotspotRule::qps("GET:/search", 0, 3.0)]).expect("hotspot");

    // One trusted proxy: the client is the rightmost X-Forwarded-For entry.
    let app = Router::new()
        .route("/users/{id}", get(|| async { "a user\n" }))
        .route("/search", get(|| async { "results\n" }))
        .route("/health", get(|| async { "ok\n" }))
        .layer(SentinelLayer::new().client_ip(1));
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
            ("GET /health", "/health".to_owned()),
            ("GET /unknown-*", format!("/unknown-{i}")),
        ] {
            let (status, retry) = request(addr, &path, &format!("6.6.6.6, {client}")).await;
            *seen
                .entry(label.to_owned())
                .or_default()
                .entry(status)
                .or_default() += 1;
            if let Some(retry) = retry {
                *retry_afters.entry(retry).or_insert(0u32) += 1;
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
    println!("\nresources the layer created:");
    for (name, stats) in metrics::all() {
        if name.starts_with("GET:") {
            println!(
                "  {name:<18} pass/s {:>4}  block/s {:>4}  inside {}",
                stats.pass_qps, stats.block_qps, stats.concurrency
            );
        }
    }
}
