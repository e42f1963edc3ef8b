//! Protecting the calls a service makes: `cargo run -p sentinel-integration --example outbound`.
//!
//! A flaky downstream (an axum server on 127.0.0.1) is called through reqwest with
//! `SentinelMiddleware` and through hyper-util's client with `SentinelClientLayer`. When it
//! starts answering 503, each client's circuit breaker opens after three failures, and the
//! calls after that are refused without being sent (the server's count of requests shows it).
//! Once it is healthy again and the breaker's recovery time (1 s) has passed, one probe goes
//! through and closes the breaker. Then two instances of a dependency, one failing, behind one
//! name: an outlier rule ejects the failing instance (its calls refused without being sent),
//! `outlier::healthy` answers a balancer, and a probe brings the instance back. Runs in about
//! 4 s.

use std::error::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sentinel_runtime::breaker::on_state_change;
use sentinel_runtime::reqwest::middleware::{self, ClientBuilder, ClientWithMiddleware};
use sentinel_runtime::reqwest::{reqwest, SentinelMiddleware};
use sentinel_runtime::rules::{self, CircuitBreakerRule, OutlierRule};
use sentinel_runtime::tower::{BoxError, Layer, SentinelClientLayer, SentinelClientService};
use sentinel_runtime::{outlier, BlockError};
use tower::ServiceExt;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The downstream: answers `/stock` with 200, or 503 while `broken`; counts what reaches it.
struct Flaky {
    broken: Arc<AtomicBool>,
    hits: Arc<AtomicUsize>,
    url: String,
}

async fn flaky() -> Result<Flaky> {
    let broken = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicUsize::new(0));
    let (b, h) = (broken.clone(), hits.clone());
    let app = Router::new().route(
        "/stock",
        get(move || async move {
            h.fetch_add(1, Ordering::SeqCst);
            if b.load(Ordering::SeqCst) {
                (StatusCode::SERVICE_UNAVAILABLE, "down")
            } else {
                (StatusCode::OK, "7 in stock")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/stock", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(Flaky { broken, hits, url })
}

/// What one call's outcome was, in a few words.
fn outcome(result: std::result::Result<u16, String>) -> String {
    match result {
        Ok(status) => format!("answered {status}"),
        Err(refusal) => refusal,
    }
}

/// One call through reqwest and the middleware.
async fn via_reqwest(client: &ClientWithMiddleware, url: &str) -> std::result::Result<u16, String> {
    match client.get(url).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(middleware::Error::Middleware(e)) if e.downcast_ref::<BlockError>().is_some() => {
            Err(format!("refused, not sent ({e})"))
        }
        Err(e) => Err(format!("failed: {e}")),
    }
}

type Hyper = SentinelClientService<
    Client<hyper_util::client::legacy::connect::HttpConnector, Empty<bytes::Bytes>>,
>;

/// One call through hyper-util's client and the layer, its body read to the end (the entry
/// is held until then).
async fn via_hyper(client: &Hyper, url: &str) -> std::result::Result<u16, String> {
    let request = http::Request::get(url)
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    let result: std::result::Result<_, BoxError> = async {
        let response = client.clone().oneshot(request).await?;
        let status = response.status().as_u16();
        response.into_body().collect().await?;
        Ok(status)
    }
    .await;
    result.map_err(|e| match e.downcast_ref::<BlockError>() {
        Some(block) => format!("refused, not sent ({block})"),
        None => format!("failed: {e}"),
    })
}

/// The story for one client: healthy, broken (the breaker opens), healthy again (it closes).
async fn story<F, Fut>(label: &str, flaky: &Flaky, call: F) -> Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<u16, String>>,
{
    println!("\n== {label} ==");
    flaky.broken.store(false, Ordering::SeqCst);
    for i in 1..=2 {
        println!("  call {i} (healthy):      {}", outcome(call().await));
    }
    flaky.broken.store(true, Ordering::SeqCst);
    let before = flaky.hits.load(Ordering::SeqCst);
    for i in 3..=7 {
        println!("  call {i} (broken):       {}", outcome(call().await));
    }
    let reached = flaky.hits.load(Ordering::SeqCst) - before;
    println!("  the downstream saw {reached} of those 5 calls");
    flaky.broken.store(false, Ordering::SeqCst);
    println!("  (healthy again; waiting out the breaker's 1 s recovery)");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    for i in 8..=9 {
        println!("  call {i} (healthy):      {}", outcome(call().await));
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    on_state_change(|change| {
        println!(
            "            >>> breaker of `{}`: {} -> {}",
            change.resource, change.from, change.to
        );
    });
    let flaky = flaky().await?;
    let host = flaky.url.trim_end_matches("/stock").to_owned();

    // reqwest names the calls by default: `GET:http://127.0.0.1:{port}`.
    let reqwest_resource = format!("GET:{host}");
    // The hyper client names its calls itself (one name for all the dependency's hosts).
    let hyper_resource = "inventory (hyper)";
    let breaker = |resource: &str| {
        CircuitBreakerRule::error_count(resource, 3)
            .min_requests(3)
            .recovery(Duration::from_secs(1))
    };
    rules::load_circuit_breaker_rules(vec![breaker(&reqwest_resource), breaker(hyper_resource)])?;

    let reqwest_client = ClientBuilder::new(reqwest::Client::builder().no_proxy().build()?)
        .with(SentinelMiddleware::new())
        .build();
    story(
        &format!("reqwest + SentinelMiddleware, resource `{reqwest_resource}`"),
        &flaky,
        || via_reqwest(&reqwest_client, &flaky.url),
    )
    .await?;

    let hyper_client: Hyper = SentinelClientLayer::new()
        .name(|_| hyper_resource.to_owned())
        .layer(Client::builder(TokioExecutor::new()).build_http());
    story(
        &format!("hyper-util + SentinelClientLayer, resource `{hyper_resource}`"),
        &flaky,
        || via_hyper(&hyper_client, &flaky.url),
    )
    .await?;

    // ---- Outlier ejection: two instances of the dependency, one of them failing ----------------
    println!("\n== outlier ejection: two instances of `inventory`, one failing ==");
    drop(flaky);
    let (a, b) = (self::flaky().await?, self::flaky().await?);
    b.broken.store(true, Ordering::SeqCst);
    let endpoint = |f: &Flaky| {
        f.url
            .trim_start_matches("http://")
            .trim_end_matches("/stock")
            .to_owned()
    };
    let (ea, eb) = (endpoint(&a), endpoint(&b));
    rules::load_outlier_rules(vec![
        OutlierRule::consecutive_errors("inventory", 2).recovery(Duration::from_secs(1))
    ])?;
    // One name for the dependency; each request's endpoint is its authority.
    let pool: Hyper = SentinelClientLayer::new()
        .name(|_| "inventory".to_owned())
        .layer(Client::builder(TokioExecutor::new()).build_http());
    for i in 1..=3 {
        println!(
            "  call {i} to {eb}: {}",
            outcome(via_hyper(&pool, &b.url).await)
        );
    }
    println!("  ejected: {:?}", outlier::ejected("inventory"));
    println!(
        "  a balancer asks which are healthy: {:?}",
        outlier::healthy("inventory", &[&ea, &eb])
    );
    println!(
        "  call to {ea}: {}",
        outcome(via_hyper(&pool, &a.url).await)
    );
    println!(
        "  {eb} saw {} calls (the refused one never reached it)",
        b.hits.load(Ordering::SeqCst)
    );
    b.broken.store(false, Ordering::SeqCst);
    println!("  ({eb} healthy again; waiting out its 1 s ejection)");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    println!(
        "  probe to {eb}: {}",
        outcome(via_hyper(&pool, &b.url).await)
    );
    println!("  ejected now: {:?}", outlier::ejected("inventory"));
    rules::load_outlier_rules(vec![])?;

    rules::load_circuit_breaker_rules(vec![])?;
    Ok(())
}
