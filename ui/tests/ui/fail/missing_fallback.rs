use sentinel_runtime::sentinel;

#[sentinel(qps = 10)]
fn count() -> u32 {
    1
}

#[sentinel(qps = 10)]
fn side_effect() {}

// An alias of a type that is not a `Result` still needs a fallback.
type Total = u64;

#[sentinel(qps = 10)]
fn total() -> Total {
    1
}

fn main() {}
