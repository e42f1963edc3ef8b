//! Free functions of any visibility, with and without arguments and fallbacks.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel]
pub fn stats_only() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "pass-qps", qps = 100, fallback = busy)]
pub(crate) fn with_fallback(id: u64, mut qty: u32) -> u32 {
    qty += 1;
    qty + id as u32
}

fn busy(_id: u64, _qty: u32, _err: BlockError) -> u32 {
    0
}

#[sentinel(qps = 2.5, concurrency = 3)]
fn float_qps_and_concurrency() -> std::io::Result<u8> {
    Ok(1)
}

mod inner {
    use sentinel_runtime::{sentinel, BlockError};

    #[sentinel(resource = "pass-super")]
    pub(super) fn restricted() -> Result<u8, BlockError> {
        Ok(2)
    }
}

/// Doc comments and other attributes are kept.
#[must_use]
#[inline]
#[sentinel(resource = "pass-attrs", fallback = busy_str)]
#[allow(clippy::needless_return)]
fn documented() -> &'static str {
    return "kept";
}

fn busy_str(_: BlockError) -> &'static str {
    "busy"
}

#[sentinel(resource = "pass-patterns")]
fn patterns((a, b): (u8, u8), [c, ..]: [u8; 2]) -> Result<u8, BlockError> {
    Ok(a + b + c)
}

#[sentinel(resource = "pass-unsafe", fallback = unsafe_busy)]
unsafe fn raw_read(p: *const u8) -> u8 {
    unsafe { *p }
}

unsafe fn unsafe_busy(_: *const u8, _: BlockError) -> u8 {
    0
}

pub fn main() {
    stats_only().unwrap();
    assert_eq!(with_fallback(1, 1), 3);
    float_qps_and_concurrency().unwrap();
    inner::restricted().unwrap();
    assert_eq!(documented(), "kept");
    assert_eq!(patterns((1, 2), [3, 4]), Ok(6));
    let x = 5u8;
    assert_eq!(unsafe { raw_read(&x) }, 5);
}
