use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 1, fallback = busy)]
fn place(id: u64, qty: u32) -> u32 {
    qty + id as u32
}

// Forgot the `qty` parameter.
fn busy(_id: u64, _err: BlockError) -> u32 {
    0
}

fn main() {}
