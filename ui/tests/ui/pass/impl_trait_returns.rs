//! Functions returning `impl Trait` (like axum's `impl IntoResponse`): the fallback returns the
//! body's concrete type, written out; without a fallback, a body returning a `Result` works.
use std::fmt::Debug;

use sentinel_runtime::{sentinel, BlockError};

trait IntoResponse {
    fn status(&self) -> u16;
}

impl IntoResponse for String {
    fn status(&self) -> u16 {
        200
    }
}

#[sentinel(qps = 5, fallback = handler_busy)]
fn handler(n: u8) -> impl IntoResponse {
    format!("n = {n}")
}

/// The body's concrete type, `String`, not `impl IntoResponse`.
fn handler_busy(_: u8, _: BlockError) -> String {
    "busy".to_owned()
}

#[sentinel(qps = 5, fallback = handler_busy)]
async fn handler_async(n: u8) -> impl IntoResponse {
    format!("n = {n}")
}

#[sentinel(qps = 5)]
fn opaque_result() -> impl Debug {
    Ok::<u8, BlockError>(1)
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    assert_eq!(handler(1).status(), 200);
    assert_eq!(handler_async(2).await.status(), 200);
    assert_eq!(format!("{:?}", opaque_result()), "Ok(1)");
}
