//! A `Result` alias whose error type cannot hold a block, and no fallback: the message names the
//! error type and both fixes, at the return type.
use sentinel_runtime::sentinel;

#[derive(Debug)]
pub struct ApiError;

pub type ApiResult<T> = Result<T, ApiError>;

#[sentinel(qps = 10)]
fn lookup(id: u64) -> ApiResult<u64> {
    Ok(id)
}

#[sentinel(qps = 10)]
async fn lookup_async(id: u64) -> ApiResult<u64> {
    Ok(id)
}

#[sentinel(qps = 10)]
fn opaque(id: u64) -> Result<impl std::fmt::Display, ApiError> {
    Ok(id)
}

fn main() {}
