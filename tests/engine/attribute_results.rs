//! `#[sentinel]` decides with the type system whether a return type is a `Result`: aliases and
//! any other spelling return the block as their error without a fallback, count `Err` as an
//! error, and work with `is_error`; other types are never errors by themselves.
//!
//! Each test installs the MockClock first, which also serialises the tests of this binary.

use std::fmt::{Debug, Display};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::{metrics, sentinel, BlockError, BlockKind};

fn stats(resource: &str) -> metrics::ResourceStats {
    metrics::snapshot(resource).expect("the guarded function has been called")
}

#[derive(Debug, PartialEq)]
enum AppError {
    NotFound,
    Timeout,
    Busy(BlockKind),
}

impl From<BlockError> for AppError {
    fn from(e: BlockError) -> Self {
        AppError::Busy(e.kind())
    }
}

type ApiResult<T> = Result<T, AppError>;

#[sentinel(resource = "results-alias", qps = 3)]
fn find(id: u32) -> ApiResult<u32> {
    match id {
        0 => Err(AppError::NotFound),
        _ => Ok(id),
    }
}

#[test]
fn an_alias_returns_the_block_as_its_error_and_counts_err_as_error() {
    let _clock = MockClock::install();
    assert_eq!(find(1), Ok(1));
    assert_eq!(find(0), Err(AppError::NotFound));
    assert_eq!(find(0), Err(AppError::NotFound));
    assert_eq!(find(2), Err(AppError::Busy(BlockKind::Flow)));
    let s = stats("results-alias");
    assert_eq!((s.pass_qps, s.block_qps, s.error_qps), (3.0, 1.0, 2.0));
}

fn only_timeouts(e: &AppError) -> bool {
    *e == AppError::Timeout
}

#[sentinel(resource = "results-alias-is-error", is_error = only_timeouts)]
fn call(outcome: ApiResult<()>) -> ApiResult<()> {
    outcome
}

#[sentinel(resource = "results-alias-is-error-async", is_error = only_timeouts)]
async fn call_async(outcome: ApiResult<()>) -> ApiResult<()> {
    outcome
}

#[test]
fn is_error_reads_the_error_type_through_an_alias() {
    let _clock = MockClock::install();
    assert_eq!(call(Err(AppError::NotFound)), Err(AppError::NotFound));
    assert_eq!(call(Err(AppError::Timeout)), Err(AppError::Timeout));
    assert_eq!(call(Ok(())), Ok(()));
    assert_eq!(stats("results-alias-is-error").error_qps, 1.0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        assert_eq!(
            call_async(Err(AppError::NotFound)).await,
            Err(AppError::NotFound)
        );
        assert_eq!(
            call_async(Err(AppError::Timeout)).await,
            Err(AppError::Timeout)
        );
    });
    assert_eq!(stats("results-alias-is-error-async").error_qps, 1.0);
}

mod lib_style {
    /// A crate's own `Result`, shadowing the prelude's.
    pub type Result<T> = std::result::Result<T, super::AppError>;

    #[sentinel_runtime::sentinel(resource = "results-shadowed")]
    pub fn load(fail: bool) -> Result<u8> {
        if fail {
            return Err(super::AppError::Timeout);
        }
        Ok(1)
    }
}

/// Returns a `Result` behind `impl Trait`: still counted by the body's concrete type.
#[sentinel(resource = "results-opaque")]
fn opaque(fail: bool) -> impl Debug {
    if fail {
        Err(AppError::Timeout)
    } else {
        Ok(1)
    }
}

#[test]
fn every_spelling_of_result_counts_err_as_error() {
    let _clock = MockClock::install();
    assert_eq!(lib_style::load(false), Ok(1));
    assert_eq!(lib_style::load(true), Err(AppError::Timeout));
    assert_eq!(stats("results-shadowed").error_qps, 1.0);
    assert_eq!(format!("{:?}", opaque(true)), "Err(Timeout)");
    assert_eq!(format!("{:?}", opaque(false)), "Ok(1)");
    assert_eq!(stats("results-opaque").error_qps, 1.0);
}

mod impostor {
    use sentinel_runtime::{sentinel, BlockError};

    /// Named `Result`, but not one: never an error by itself.
    #[derive(Debug, PartialEq)]
    pub enum Result {
        Err,
        Ok,
    }

    #[sentinel(resource = "results-impostor", fallback = busy)]
    pub fn answer(ok: bool) -> Result {
        if ok {
            Result::Ok
        } else {
            Result::Err
        }
    }

    fn busy(_: bool, _: BlockError) -> Result {
        Result::Err
    }
}

#[test]
fn a_type_merely_named_result_is_not_one() {
    let _clock = MockClock::install();
    assert_eq!(impostor::answer(false), impostor::Result::Err);
    assert_eq!(impostor::answer(true), impostor::Result::Ok);
    let s = stats("results-impostor");
    assert_eq!((s.pass_qps, s.error_qps), (2.0, 0.0));
}

#[sentinel(resource = "results-coercions", qps = 1)]
fn boxed(n: u8) -> ApiResult<Vec<Box<dyn Display>>> {
    if n == 0 {
        return Ok(vec![]);
    }
    Ok(vec![Box::new(n), Box::new("and a str")])
}

#[test]
fn the_body_is_checked_against_the_declared_type_coercions_included() {
    let _clock = MockClock::install();
    let shown: Vec<String> = boxed(7).unwrap().iter().map(|d| d.to_string()).collect();
    assert_eq!(shown, ["7", "and a str"]);
    assert!(
        matches!(boxed(0), Err(AppError::Busy(BlockKind::Flow))),
        "the second call in the second is blocked (qps = 1)"
    );
}
