use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 1, fallback = busy)]
fn greet(name: &str) -> String {
    format!("hello {name}")
}

// The function passes `name` as `&str`, not `String`.
fn busy(name: String, _err: BlockError) -> String {
    name
}

fn main() {}
