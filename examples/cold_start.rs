//! The first call of a fresh process, measured: `cargo run -p sentinel-integration --release --example cold_start`.
//!
//! Each case runs in fresh child processes of this program (a process's one-time set-up can only
//! be seen once per process). Like a server, each child first starts four idle threads, then:
//!
//! - `attribute`: times the first call of a `#[sentinel(qps = ..)]` function, then the median of
//!   1 000 later calls (the steady state), then the first call on a new thread;
//! - `rule`: the same for `entry("name")` of a resource whose rule was loaded first;
//! - `layer`: the same through `SentinelLayer` (a tower `oneshot` on a prepared router);
//! - `server`: a real axum server on 127.0.0.1:0 behind `SentinelLayer` (a tokio runtime with
//!   two workers), sent one request after another over fresh connections; the first request's
//!   latency against the second's and the median of the next ten.
//!
//! The parent prints, per case, the median over the children of what each child measured.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::sentinel;
use sentinel_runtime::tower::SentinelLayer;

const CHILDREN: usize = 9;

#[sentinel(resource = "cold_start_attribute", qps = 1_000_000_000)]
fn guarded(x: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(std::hint::black_box(x) + 1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("child") => child(args.get(2).map(String::as_str).unwrap_or("attribute")),
        _ => parent(),
    }
}

fn parent() {
    let exe = std::env::current_exe().expect("the path of this program");
    println!(
        "first call of a fresh process with 4 idle threads, median of {CHILDREN} processes (µs)\n"
    );
    println!(
        "{:<10} {:>12} {:>12} {:>12} {:>16}",
        "case", "first call", "steady", "added", "new thread"
    );
    for case in ["attribute", "rule", "layer", "server"] {
        let mut rows: Vec<[f64; 3]> = Vec::new();
        for _ in 0..CHILDREN {
            let out = Command::new(&exe)
                .args(["child", case])
                .output()
                .expect("a child process");
            let text = String::from_utf8_lossy(&out.stdout);
            let nums: Vec<f64> = text
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if !out.status.success() || nums.len() != 3 {
                eprintln!(
                    "child {case} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                std::process::exit(1);
            }
            rows.push([nums[0], nums[1], nums[2]]);
        }
        let med = |i: usize| {
            let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (first, steady, thread) = (med(0), med(1), med(2));
        let thread_label = if case == "server" {
            "-".to_string()
        } else {
            format!("{thread:.1}")
        };
        println!(
            "{case:<10} {first:>12.1} {steady:>12.2} {:>12.1} {thread_label:>16}",
            first - steady
        );
    }
    println!(
        "\n(server: first request, median of the next ten requests; each over a new connection)"
    );
}

/// Starts four threads that wait until the process ends, as a server's runtime would have.
fn idle_threads() {
    let ready = Arc::new(Barrier::new(5));
    for _ in 0..4 {
        let ready = ready.clone();
        std::thread::spawn(move || {
            ready.wait();
            loop {
                std::thread::park();
            }
        });
    }
    ready.wait();
}

/// Microseconds `f` took.
fn micros(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e6
}

/// The median time of 1 000 calls of `f`, in microseconds.
fn steady(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..1000).map(|_| micros(&mut f)).collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn child(case: &str) {
    idle_threads();
    let (first, steady, thread) = match case {
        "attribute" => {
            let first = micros(|| {
                let _ = guarded(1);
            });
            let steady = steady(|| {
                let _ = guarded(2);
            });
            let thread = std::thread::spawn(|| {
                micros(|| {
                    let _ = guarded(3);
                })
            })
            .join()
            .unwrap_or(f64::NAN);
            (first, steady, thread)
        }
        "rule" => {
            if let Err(e) = rules::load_flow_rules(vec![FlowRule::qps("cold_start_rule", 1e9)]) {
                eprintln!("{e}");
                std::process::exit(1);
            }
            let call = || {
                let entry = sentinel_runtime::entry("cold_start_rule");
                std::hint::black_box(&entry);
            };
            let first = micros(call);
            let steady = steady(call);
            let thread = std::thread::spawn(move || micros(call))
                .join()
                .unwrap_or(f64::NAN);
            (first, steady, thread)
        }
        "layer" => layer(),
        _ => server(),
    };
    println!("{first:.1} {steady:.3} {thread:.1}");
}

fn router() -> axum::Router {
    axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .layer(SentinelLayer::new())
}

fn layer() -> (f64, f64, f64) {
    use tower::ServiceExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let app = router().with_state::<()>(());
    let request = || {
        http::Request::get("/hello")
            .body(axum::body::Body::empty())
            .expect("a request")
    };
    let once = |app: &axum::Router| {
        let app = app.clone();
        let req = request();
        micros(|| {
            let response = rt.block_on(app.oneshot(req));
            std::hint::black_box(response.is_ok());
        })
    };
    let first = once(&app);
    let mut times: Vec<f64> = (0..1000).map(|_| once(&app)).collect();
    times.sort_by(f64::total_cmp);
    let steady = times[times.len() / 2];
    let thread_app = app.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let req = request();
        micros(|| {
            let response = rt.block_on(thread_app.oneshot(req));
            std::hint::black_box(response.is_ok());
        })
    })
    .join()
    .unwrap_or(f64::NAN);
    (first, steady, thread)
}

fn server() -> (f64, f64, f64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router()).await;
        });
        let first = request(addr).await;
        let mut times = Vec::new();
        for _ in 0..10 {
            times.push(request(addr).await);
        }
        times.sort_by(f64::total_cmp);
        server.abort();
        (first, times[times.len() / 2], 0.0)
    })
}

/// One GET over a new connection, in microseconds (at most 10 s).
async fn request(addr: SocketAddr) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let start = Instant::now();
    let work = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    match tokio::time::timeout(Duration::from_secs(10), work).await {
        Ok(Ok(raw)) if raw.starts_with(b"HTTP/1.1 200") => start.elapsed().as_secs_f64() * 1e6,
        other => {
            eprintln!("request failed: {other:?}");
            std::process::exit(1);
        }
    }
}
