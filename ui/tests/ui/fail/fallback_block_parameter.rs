//! A fallback's last parameter is the `BlockError`, by value or by reference; anything else is
//! refused with a message saying so, at the fallback.
use sentinel_runtime::sentinel;

#[sentinel(qps = 10, fallback = busy)]
fn lookup(id: u64) -> u64 {
    id
}

fn busy(id: u64, _: &str) -> u64 {
    id
}

#[sentinel(qps = 10, fallback = busy_async)]
async fn lookup_async(id: u64) -> u64 {
    id
}

async fn busy_async(id: u64, _: Option<sentinel_runtime::BlockError>) -> u64 {
    id
}

fn main() {}
