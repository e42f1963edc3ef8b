//! Every form a fallback takes, lint-clean under `clippy::pedantic`: sync and async functions,
//! sync and async fallbacks, the block by value and by reference, methods, patterns, `impl
//! Trait`, and `Result`s without a fallback. The file warns on `clippy::pedantic` and CI runs clippy
//! with `-D warnings` over it, so a lint the attribute's expansion causes in users' code fails the
//! build.
//!
//! A library (`crate-type = ["lib"]` in Cargo.toml), as the code that cares about pedantic lints
//! usually is: lints about exported functions (`must_use_candidate`, `missing_errors_doc`) see
//! the guarded functions exactly as they would see them without the attribute. What each form
//! does when blocked is tested in `tests/engine/attribute_patterns.rs` and `tests/engine/attribute.rs`.
#![warn(clippy::pedantic)]

use std::fmt::Display;

use sentinel_runtime::{sentinel, BlockError};

/// An application error that can hold a block.
#[derive(Debug)]
pub enum ApiError {
    /// The call was blocked.
    Busy(BlockError),
    /// Nothing has this id.
    NotFound(u64),
}

impl From<BlockError> for ApiError {
    fn from(e: BlockError) -> Self {
        ApiError::Busy(e)
    }
}

/// A `Result` alias, as applications write one.
pub type ApiResult<T> = Result<T, ApiError>;

// ---- no fallback: the block is the `Result`'s error ----

/// Blocked: `Err(ApiError::Busy(..))`.
///
/// # Errors
/// `NotFound` for id 0, `Busy` when blocked.
#[sentinel(resource = "forms.lookup", qps = 1)]
pub fn lookup(id: u64) -> ApiResult<u64> {
    if id == 0 {
        return Err(ApiError::NotFound(id));
    }
    Ok(id * 2)
}

/// The same, async.
///
/// # Errors
/// `Busy` when blocked.
#[sentinel(resource = "forms.lookup_async", qps = 1)]
pub async fn lookup_async(id: u64) -> ApiResult<u64> {
    Ok(id + 1)
}

// ---- sync functions ----

/// A fallback taking the block by value (and using it).
#[must_use]
#[sentinel(resource = "forms.by_value", qps = 1, fallback = by_value_busy)]
pub fn by_value(id: u64) -> String {
    format!("item {id}")
}

fn by_value_busy(id: u64, err: BlockError) -> String {
    let err = ApiError::from(err);
    format!("item {id}: {err:?}")
}

/// A fallback taking the block by reference.
///
/// Without `#[must_use]`, clippy asks for it, as it would without the attribute: the
/// expectation fails the build if the attribute ever hides this function from the lint.
#[expect(
    clippy::must_use_candidate,
    reason = "the guarded function is linted as the plain one would be"
)]
#[sentinel(resource = "forms.by_ref", qps = 1, fallback = by_ref_busy)]
pub fn by_ref(name: &str) -> String {
    format!("hello {name}")
}

fn by_ref_busy(name: &str, err: &BlockError) -> String {
    format!("{name}: {err}")
}

/// A fallback returning `Result` where the function does.
///
/// # Errors
/// `NotFound` for id 0.
#[sentinel(resource = "forms.result_fallback", qps = 1, fallback = stale)]
pub fn fresh(id: u64) -> ApiResult<u64> {
    if id == 0 {
        return Err(ApiError::NotFound(id));
    }
    Ok(id)
}

#[allow(clippy::unnecessary_wraps)] // its signature is the guarded function's
fn stale(id: u64, _: &BlockError) -> ApiResult<u64> {
    Ok(id + 1_000)
}

/// `impl Trait` with a fallback of the body's type.
#[must_use]
#[sentinel(resource = "forms.shown", qps = 1, fallback = shown_busy)]
pub fn shown(n: u8) -> impl Display {
    format!("n = {n}")
}

fn shown_busy(n: u8, err: &BlockError) -> String {
    format!("n = {n} ({:?})", err.kind())
}

// ---- async functions ----

/// An async fallback by reference.
#[sentinel(resource = "forms.async_ref", qps = 1, fallback = async_ref_busy)]
pub async fn async_ref(id: u64) -> String {
    format!("async {id}")
}

async fn async_ref_busy(id: u64, err: &BlockError) -> String {
    std::future::ready(()).await;
    format!("async {id}: {err}")
}

/// An async fallback by value.
///
/// # Errors
/// `Busy` when blocked.
#[sentinel(resource = "forms.async_value", qps = 1, fallback = async_value_busy)]
pub async fn async_value(id: u64) -> ApiResult<u64> {
    Ok(id)
}

async fn async_value_busy(_: u64, err: BlockError) -> ApiResult<u64> {
    std::future::ready(()).await;
    Err(err.into())
}

/// A sync fallback of an async function.
#[sentinel(resource = "forms.async_sync", qps = 1, fallback = async_sync_busy)]
pub async fn async_sync(id: u64) -> u64 {
    id
}

fn async_sync_busy(_: u64, _: &BlockError) -> u64 {
    0
}

// ---- patterns, as axum handlers write extractors ----

/// A stand-in for axum's `Path` extractor.
pub struct Path<T>(pub T);

/// Extractor patterns with a fallback.
#[sentinel(resource = "forms.pattern", qps = 1, fallback = pattern_busy)]
pub async fn pattern(Path(id): Path<u64>, (a, b): (u8, u8)) -> String {
    format!("{id} {a} {b}")
}

async fn pattern_busy(Path(id): Path<u64>, _: (u8, u8), err: &BlockError) -> String {
    std::future::ready(()).await;
    format!("{id}: {err}")
}

// ---- methods ----

/// A service with guarded methods.
pub struct Service {
    name: String,
    calls: u32,
}

impl Service {
    /// `&self`, fallback by reference.
    #[must_use]
    #[sentinel(resource = "forms.method", qps = 1, fallback = Self::name_busy)]
    pub fn name(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.name)
    }

    fn name_busy(&self, _: &str, err: &BlockError) -> String {
        format!("{}: {err}", self.name)
    }

    /// `&mut self`, fallback by value.
    #[sentinel(resource = "forms.method_mut", qps = 1, fallback = Self::bump_busy)]
    pub fn bump(&mut self) -> u32 {
        self.calls += 1;
        self.calls
    }

    fn bump_busy(&mut self, err: BlockError) -> u32 {
        drop(ApiError::from(err));
        self.calls
    }

    /// `self` by value, async, with a sync fallback.
    #[sentinel(resource = "forms.method_async", qps = 1, fallback = Self::finish_busy)]
    pub async fn finish(self) -> u32 {
        self.calls
    }

    fn finish_busy(self, _: &BlockError) -> u32 {
        self.calls + 100
    }
}

// ---- an axum handler (docs/attribute.md shows this section: a test keeps the two the same) ----

/// The guide's handler (docs/attribute.md).
pub mod handler {
    // README: an axum handler
    use axum::extract::{Path, State};
    use axum::http::StatusCode;
    use sentinel_runtime::{sentinel, BlockError};

    #[derive(Clone)]
    pub struct AppState {
        pub greeting: &'static str,
    }

    /// `GET /users/{id}`: 100 calls a second, then 429 from the fallback.
    ///
    /// # Errors
    /// 429 when blocked.
    #[sentinel(resource = "get_user", qps = 100, fallback = get_user_busy)]
    pub async fn get_user(
        Path(id): Path<u64>,
        State(state): State<AppState>,
    ) -> Result<String, StatusCode> {
        Ok(format!("{} user {id}", state.greeting))
    }

    // Gets the same arguments (the extractors whole) and the block, here by reference; an
    // async handler's fallback may be async or not.
    fn get_user_busy(
        _: Path<u64>,
        _: State<AppState>,
        err: &BlockError,
    ) -> Result<String, StatusCode> {
        eprintln!("get_user: {err}");
        Err(StatusCode::TOO_MANY_REQUESTS)
    }
    // README: end
}
