use sentinel_runtime::sentinel;

#[sentinel(qps = 10)]
fn count() -> u32 {
    1
}

#[sentinel(qps = 10)]
fn side_effect() {}

fn main() {}
