//! The downstream of the outbound tests: a real axum server on 127.0.0.1:0 that counts the
//! requests it receives (so a test can tell a refused call never reached it), answering
//! `/ok` with 200 and `/fail` with 503. It runs on the test's runtime and stops with it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

/// A running downstream.
pub(crate) struct Downstream {
    pub(crate) addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Downstream {
    /// How many requests reached the server.
    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// `http://{addr}{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The default resource name of a `GET` to this server: `GET:http://127.0.0.1:{port}`.
    pub(crate) fn get_resource(&self) -> String {
        format!("GET:http://{}", self.addr)
    }
}

/// Starts a downstream on the current runtime.
pub(crate) async fn downstream() -> Downstream {
    let hits = Arc::new(AtomicUsize::new(0));
    let (ok, fail) = (hits.clone(), hits.clone());
    let app = Router::new()
        .route(
            "/ok",
            get(move || async move {
                ok.fetch_add(1, Ordering::SeqCst);
                "ok"
            }),
        )
        .route(
            "/fail",
            get(move || async move {
                fail.fetch_add(1, Ordering::SeqCst);
                (StatusCode::SERVICE_UNAVAILABLE, "down")
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Downstream { addr, hits }
}

/// An address on 127.0.0.1 where nothing listens (bound, then closed): connecting fails.
pub(crate) async fn closed_port() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// A downstream that accepts connections and never answers (nor closes them while it runs): a
/// dependency that hangs. It counts the connections it accepted.
pub(crate) struct Silent {
    pub(crate) addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
}

impl Silent {
    /// How many connections reached the server.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// `http://{addr}{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The default resource name of a `GET` to this server.
    pub(crate) fn get_resource(&self) -> String {
        format!("GET:http://{}", self.addr)
    }
}

/// Starts a silent downstream on the current runtime.
pub(crate) async fn silent() -> Silent {
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    Silent { addr, accepted }
}
