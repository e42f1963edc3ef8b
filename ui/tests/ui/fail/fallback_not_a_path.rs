use sentinel_runtime::sentinel;

#[sentinel(fallback = "busy")]
fn a() -> u8 {
    1
}

#[sentinel(fallback = |e| 0)]
fn b() -> u8 {
    1
}

fn main() {}
