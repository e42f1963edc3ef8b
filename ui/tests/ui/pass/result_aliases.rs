//! Whether a return type is a `Result` is decided by the type system, not by its name: type
//! aliases and any other spelling need no fallback and work with `is_error`, and a type that
//! is merely *named* `Result` is not one.
use sentinel_runtime::{sentinel, BlockError};

#[derive(Debug, PartialEq)]
enum AppError {
    NotFound,
    Busy,
}

impl From<BlockError> for AppError {
    fn from(_: BlockError) -> Self {
        AppError::Busy
    }
}

type ApiResult<T> = Result<T, AppError>;
type Count = ApiResult<u32>;

fn real_failure(e: &AppError) -> bool {
    *e != AppError::NotFound
}

#[sentinel(qps = 5)]
fn alias() -> ApiResult<u32> {
    Ok(1)
}

#[sentinel(qps = 5)]
fn alias_of_alias() -> Count {
    Err(AppError::NotFound)
}

#[sentinel(qps = 5, is_error = real_failure)]
fn alias_with_is_error(id: u32) -> ApiResult<u32> {
    Ok(id)
}

#[sentinel(qps = 5, is_error = real_failure)]
async fn async_alias_with_is_error(id: u32) -> ApiResult<u32> {
    Ok(id)
}

#[sentinel(qps = 5)]
fn fully_qualified() -> ::core::result::Result<u8, BlockError> {
    Ok(2)
}

#[sentinel(qps = 5)]
fn boxed_error() -> Result<Box<dyn std::fmt::Display>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(Box::new(3))
}

mod shadowed {
    use sentinel_runtime::{sentinel, BlockError};

    /// The module's own `Result`, as many crates define one.
    pub type Result<T> = std::result::Result<T, super::AppError>;

    #[sentinel(qps = 5)]
    pub fn lookup() -> Result<u8> {
        Ok(4)
    }

    /// Not a `Result` at all, whatever its name: it needs a fallback, and is never an error.
    pub struct Outcome(pub u8);

    #[sentinel(qps = 5, fallback = busy)]
    pub fn named_like_one() -> Outcome {
        Outcome(5)
    }

    fn busy(_: BlockError) -> Outcome {
        Outcome(0)
    }
}

mod impostor {
    use sentinel_runtime::{sentinel, BlockError};

    /// A type named `Result` that is not `core::result::Result`.
    pub struct Result(pub u8);

    #[sentinel(qps = 5, fallback = busy)]
    pub fn value() -> Result {
        Result(6)
    }

    fn busy(_: BlockError) -> Result {
        Result(0)
    }
}

pub fn main() {
    assert_eq!(alias(), Ok(1));
    assert_eq!(alias_of_alias(), Err(AppError::NotFound));
    assert_eq!(alias_with_is_error(7), Ok(7));
    let _ = async_alias_with_is_error(8);
    assert_eq!(fully_qualified(), Ok(2));
    assert_eq!(boxed_error().unwrap().to_string(), "3");
    assert_eq!(shadowed::lookup(), Ok(4));
    assert_eq!(shadowed::named_like_one().0, 5);
    assert_eq!(impostor::value().0, 6);
}
