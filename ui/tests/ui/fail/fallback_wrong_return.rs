use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 1, fallback = busy)]
fn place(id: u64) -> u32 {
    id as u32
}

fn busy(_id: u64, _err: BlockError) -> String {
    String::new()
}

fn main() {}
