//! Single-expression bodies compile without any warning in the user's crate (no
//! `unused_braces` around the body): sync and async functions, methods, `Result` functions with
//! and without a fallback, an `unsafe fn`, a function that never returns.
//!
//! The bodies are on one line on purpose: rustc's `unused_braces` lint only fires there.
#![deny(warnings)]

use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10, fallback = busy)]
fn plain(x: u32) -> u32 { x }

fn busy(_: u32, _: BlockError) -> u32 {
    0
}

#[sentinel(qps = 10, fallback = busy)]
async fn plain_async(x: u32) -> u32 { x }

#[sentinel(qps = 10)]
fn result(x: u32) -> Result<u32, BlockError> { Ok(x) }

#[sentinel(qps = 10)]
async fn result_async(x: u32) -> Result<u32, BlockError> { Ok(x) }

#[sentinel(qps = 10, fallback = result_busy)]
fn result_with_fallback(x: u32) -> Result<u32, String> { Ok(x) }

fn result_busy(_: u32, e: BlockError) -> Result<u32, String> {
    Err(e.to_string())
}

#[sentinel(qps = 10, fallback = result_busy)]
async fn result_with_fallback_async(x: u32) -> Result<u32, String> { Ok(x) }

#[sentinel(fallback = unit_busy)]
fn unit(x: Vec<u8>) { drop(x) }

fn unit_busy(_: Vec<u8>, _: BlockError) {}

/// # Safety
/// `p` must point to a readable `u8`.
#[sentinel(qps = 10, fallback = read_busy)]
unsafe fn read(p: *const u8) -> u8 { unsafe { *p } }

unsafe fn read_busy(_: *const u8, _: BlockError) -> u8 {
    0
}

#[sentinel(fallback = diverge_busy)]
fn diverge(code: u8) -> ! { panic!("{code}") }

fn diverge_busy(_: u8, _: BlockError) -> ! {
    panic!("busy")
}

struct Counter {
    n: u32,
}

impl Counter {
    #[sentinel(qps = 10, fallback = Self::get_busy)]
    fn get(&self) -> u32 { self.n }

    fn get_busy(&self, _: BlockError) -> u32 {
        0
    }

    #[sentinel(qps = 10)]
    fn bump(&mut self) -> Result<&mut u32, BlockError> { Ok(&mut self.n) }

    #[sentinel(qps = 10, fallback = Self::get_async_busy)]
    async fn get_async(&self) -> u32 { self.n }

    async fn get_async_busy(&self, _: BlockError) -> u32 {
        0
    }

    #[sentinel(qps = 10)]
    async fn check_async(&self) -> Result<u32, BlockError> { Ok(self.n) }
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    assert_eq!(plain(1), 1);
    assert_eq!(plain_async(2).await, 2);
    assert_eq!(result(3), Ok(3));
    assert_eq!(result_async(4).await, Ok(4));
    assert_eq!(result_with_fallback(5), Ok(5));
    assert_eq!(result_with_fallback_async(6).await, Ok(6));
    unit(vec![7]);
    let byte = 8u8;
    // SAFETY: `&byte` is a valid pointer to a u8.
    assert_eq!(unsafe { read(&byte) }, 8);
    assert!(std::panic::catch_unwind(|| diverge(9)).is_err());
    let mut c = Counter { n: 10 };
    assert_eq!(c.get(), 10);
    *c.bump().unwrap() += 1;
    assert_eq!(c.get_async().await, 11);
    assert_eq!(c.check_async().await, Ok(11));
}
