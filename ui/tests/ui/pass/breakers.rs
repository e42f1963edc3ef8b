//! Every `breaker(...)` form, several per function, and `is_error`.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(breaker(error_ratio = 0.5, min_requests = 10, window = "10s", recovery = "5s", probes = 3))]
fn ratio() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(
    resource = "pass-breakers",
    qps = 100,
    breaker(slow_rt = "200ms", slow_ratio = 0.5, recovery = "30s"),
    breaker(error_count = 20, recovery = "1m"),
    fallback = busy
)]
fn several(x: u8) -> u8 {
    x
}

fn busy(_: u8, _: BlockError) -> u8 {
    0
}

#[derive(Debug)]
enum AppError {
    NotFound,
    Busy,
}

impl From<BlockError> for AppError {
    fn from(_: BlockError) -> Self {
        AppError::Busy
    }
}

fn only_real_failures(e: &AppError) -> bool {
    !matches!(e, AppError::NotFound)
}

#[sentinel(is_error = only_real_failures, breaker(error_ratio = 1, recovery = "1h"))]
fn lookup(id: u32) -> Result<u32, AppError> {
    if id == 0 {
        Err(AppError::NotFound)
    } else {
        Ok(id)
    }
}

#[sentinel(is_error = only_real_failures)]
async fn lookup_async(id: u32) -> Result<u32, AppError> {
    Ok(id)
}

pub fn main() {
    ratio().unwrap();
    assert_eq!(several(3), 3);
    assert!(lookup(0).is_err());
    let _ = lookup_async(1);
}
