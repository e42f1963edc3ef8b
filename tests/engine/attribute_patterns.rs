//! Arguments written as patterns (axum's extractors), fallbacks taking the block by reference,
//! and one attribute per function, driven with the MockClock.
//!
//! Each test installs the MockClock first, which also serialises the tests of this binary.

use std::cell::Cell;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind};

/// Stand-ins of axum's extractors: tuple structs of one field.
struct Path<T>(T);
struct State<S>(S);
struct Json<T>(T);

#[derive(Clone)]
struct AppState {
    greeting: &'static str,
}

/// Runs a future to completion on a current-thread runtime.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
        .block_on(fut)
}

#[sentinel(resource = "pat-user", qps = 1, fallback = user_busy)]
async fn get_user(Path(id): Path<u64>, State(state): State<AppState>) -> String {
    format!("{} {id}", state.greeting)
}

async fn user_busy(Path(id): Path<u64>, State(state): State<AppState>, err: &BlockError) -> String {
    format!("{} {id}: busy ({:?})", state.greeting, err.kind())
}

#[test]
fn extractor_patterns_reach_the_body_destructured_and_the_fallback_whole() {
    let _clock = MockClock::install();
    let state = AppState { greeting: "hi" };
    assert_eq!(block_on(get_user(Path(7), State(state.clone()))), "hi 7");
    assert_eq!(
        block_on(get_user(Path(8), State(state))),
        "hi 8: busy (Flow)"
    );
    let s = metrics::snapshot("pat-user").expect("entered");
    assert_eq!((s.pass_qps, s.block_qps), (1.0, 1.0));
}

#[sentinel(resource = "pat-create", qps = 1, fallback = create_busy)]
fn create(Json(mut body): Json<Vec<u8>>, (mut total, step): (u32, u32)) -> (usize, u32) {
    body.push(0);
    total += step;
    (body.len(), total)
}

fn create_busy(Json(body): Json<Vec<u8>>, pair: (u32, u32), err: BlockError) -> (usize, u32) {
    assert_eq!(err.kind(), BlockKind::Flow);
    (body.len() + 100, pair.0 + pair.1 + 100)
}

#[test]
fn mut_bindings_and_tuples_work_in_the_body_and_reach_the_fallback_unchanged() {
    let _clock = MockClock::install();
    assert_eq!(create(Json(vec![1, 2]), (10, 5)), (3, 15));
    // Blocked: the fallback gets the arguments as passed, the body's changes never happened.
    assert_eq!(create(Json(vec![1, 2]), (10, 5)), (102, 115));
}

struct Counter {
    hits: Cell<u32>,
}

impl Counter {
    #[sentinel(resource = "pat-method", qps = 1, fallback = Self::hit_busy)]
    fn hit(&self, Path((a, b)): Path<(u32, u32)>) -> u32 {
        self.hits.set(self.hits.get() + 1);
        a + b
    }

    fn hit_busy(&self, Path((a, _)): Path<(u32, u32)>, err: &BlockError) -> u32 {
        assert_eq!(err.kind(), BlockKind::Flow);
        a + 1_000 + self.hits.get()
    }
}

#[test]
fn methods_with_patterns_and_a_fallback_by_reference() {
    let _clock = MockClock::install();
    let c = Counter { hits: Cell::new(0) };
    assert_eq!(c.hit(Path((1, 2))), 3);
    assert_eq!(c.hit(Path((4, 5))), 4 + 1_000 + 1);
}

#[sentinel(resource = "pat-ref-mut", qps = 1, fallback = bump_busy)]
fn bump(Path(ref mut n): Path<u32>) -> u32 {
    *n += 1;
    *n
}

fn bump_busy(Path(n): Path<u32>, _: &BlockError) -> u32 {
    n
}

#[test]
fn a_ref_mut_binding_borrows_the_argument_as_in_the_plain_function() {
    let _clock = MockClock::install();
    assert_eq!(bump(Path(1)), 2);
    assert_eq!(bump(Path(1)), 1);
}

// ---- a real axum router in front of a guarded handler with extractor patterns ----

mod axum_handler {
    use axum::extract::{Path, State};
    use axum::http::StatusCode;
    use sentinel_runtime::{sentinel, BlockError};

    #[derive(Clone)]
    pub struct AppState {
        pub greeting: &'static str,
    }

    #[sentinel(resource = "pat-axum-user", qps = 2, fallback = get_user_busy)]
    pub async fn get_user(
        Path(id): Path<u64>,
        State(state): State<AppState>,
    ) -> Result<String, StatusCode> {
        Ok(format!("{} user {id}", state.greeting))
    }

    fn get_user_busy(
        Path(id): Path<u64>,
        _: State<AppState>,
        err: &BlockError,
    ) -> Result<String, StatusCode> {
        assert_eq!(err.kind(), sentinel_runtime::BlockKind::Flow, "user {id}");
        Err(StatusCode::TOO_MANY_REQUESTS)
    }
}

#[test]
fn an_axum_router_serves_a_guarded_handler_with_extractor_patterns() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let _clock = MockClock::install();
    let app = axum::Router::new()
        .route("/users/{id}", axum::routing::get(axum_handler::get_user))
        .with_state(axum_handler::AppState { greeting: "hi" });
    let statuses = block_on(async {
        let mut seen = Vec::new();
        for id in 1..=3 {
            let request = Request::get(format!("/users/{id}"))
                .body(Body::empty())
                .expect("a valid request");
            let response = app.clone().oneshot(request).await.expect("infallible");
            let status = response.status();
            let body = response.into_body().collect().await.expect("a body");
            seen.push((
                status,
                String::from_utf8_lossy(&body.to_bytes()).into_owned(),
            ));
        }
        seen
    });
    assert_eq!(
        statuses,
        [
            (StatusCode::OK, "hi user 1".to_owned()),
            (StatusCode::OK, "hi user 2".to_owned()),
            (StatusCode::TOO_MANY_REQUESTS, String::new()),
        ]
    );
}

/// The guide's handler (`docs/attribute.md`) is the one `examples/fallback_forms.rs` compiles
/// (and CI lints with `clippy::pedantic`), word for word.
#[test]
fn the_guides_handler_is_the_compiled_one() {
    let example = include_str!("../../examples/fallback_forms.rs");
    let start = example
        .find("// README: an axum handler\n")
        .expect("the start marker")
        + "// README: an axum handler\n".len();
    let end = example.find("    // README: end").expect("the end marker");
    let compiled: Vec<&str> = example[start..end]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect();
    let guide = include_str!("../../docs/attribute.md");
    let block = guide
        .split("```rust,ignore\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").expect("a closed block")])
        .find(|block| block.contains("#[sentinel(resource = \"get_user\""))
        .expect("docs/attribute.md shows the handler");
    let shown: Vec<&str> = block.lines().collect();
    assert_eq!(shown, compiled);
}
