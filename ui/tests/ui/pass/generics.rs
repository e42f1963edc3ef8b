//! Generic functions, where-clauses, lifetimes and `impl Trait` in both positions.
use std::fmt::Display;

use sentinel_runtime::{sentinel, BlockError};

#[sentinel(resource = "pass-generic", fallback = largest_busy)]
fn largest<T>(items: &[T]) -> Option<&T>
where
    T: PartialOrd,
{
    items.iter().fold(None, |m, x| match m {
        Some(m) if m >= x => Some(m),
        _ => Some(x),
    })
}

fn largest_busy<T: PartialOrd>(_: &[T], _: BlockError) -> Option<&T> {
    None
}

#[sentinel(resource = "pass-lifetimes")]
fn pick<'a, 'b: 'a>(a: &'a str, b: &'b str) -> Result<&'a str, BlockError> {
    Ok(if a.len() >= b.len() { a } else { b })
}

#[sentinel(resource = "pass-impl-arg", fallback = describe_busy)]
fn describe(value: impl Display, times: usize) -> String {
    value.to_string().repeat(times)
}

fn describe_busy(_: impl Display, _: usize, _: BlockError) -> String {
    String::new()
}

#[sentinel(resource = "pass-impl-ret", fallback = evens_busy)]
fn evens(limit: u32) -> impl Iterator<Item = u32> {
    (0..limit).filter(|n| n % 2 == 0).collect::<Vec<_>>().into_iter()
}

fn evens_busy(_: u32, _: BlockError) -> std::vec::IntoIter<u32> {
    Vec::new().into_iter()
}

#[sentinel(resource = "pass-const-generic")]
fn sum<const N: usize>(xs: [u32; N]) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    let parsed: u32 = "1".parse()?;
    Ok(xs.iter().sum::<u32>() + parsed)
}

pub fn main() {
    assert_eq!(largest(&[1, 5, 3]), Some(&5));
    assert_eq!(pick("ab", "c").unwrap(), "ab");
    assert_eq!(describe('x', 3), "xxx");
    assert_eq!(evens(5).collect::<Vec<_>>(), vec![0, 2, 4]);
    assert_eq!(sum([1, 2]).unwrap(), 4);
}
