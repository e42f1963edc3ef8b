use sentinel_runtime::{sentinel, BlockError};

trait IntoResponse {}

impl IntoResponse for String {}
impl IntoResponse for &'static str {}

#[sentinel(qps = 1, fallback = busy)]
fn handler(n: u8) -> impl IntoResponse {
    format!("n = {n}")
}

// Another `impl IntoResponse` is another type: this must return `String`.
fn busy(_: u8, _: BlockError) -> impl IntoResponse {
    "busy"
}

#[sentinel(qps = 1, fallback = busy)]
async fn handler_async(n: u8) -> impl IntoResponse {
    format!("n = {n}")
}

fn main() {}
