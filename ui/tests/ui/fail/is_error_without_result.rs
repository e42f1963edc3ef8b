use sentinel_runtime::{sentinel, BlockError};

fn never(_: &BlockError) -> bool {
    false
}

#[sentinel(is_error = never, fallback = busy)]
fn count() -> u32 {
    1
}

fn busy(_: BlockError) -> u32 {
    0
}

fn main() {}
