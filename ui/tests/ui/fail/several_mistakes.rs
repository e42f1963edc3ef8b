use sentinel_runtime::sentinel;

#[sentinel(qps = 0, timeout = 5, concurrency = 1.5, fallback = 3)]
fn f() -> u32 {
    1
}

fn main() {}
