use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 1, fallback = busy)]
fn place(id: u64, qty: u32) -> u32 {
    qty + id as u32
}

// The `BlockError` comes last, after the function's arguments.
fn busy(_err: BlockError, _id: u64, _qty: u32) -> u32 {
    0
}

#[sentinel(qps = 1, fallback = no_block_error)]
fn cancel(id: u64) -> u32 {
    id as u32
}

// Forgot the `BlockError` parameter.
fn no_block_error(_id: u64) -> u32 {
    0
}

fn main() {}
