//! Instructions per guarded hotspot call, counted exactly with callgrind on one thread (no
//! race between threads moves the count): a `#[sentinel]` function with one hotspot rule,
//! called over 1 024 keys already in its table.
//!
//! Build with `cargo bench --bench hotspot_instructions --no-run`, then run the binary it names
//! under `valgrind --tool=callgrind --toggle-collect='hotspot_instructions::guarded_hot'` with
//! N and 2N calls as its argument: the difference of the two totals over N is one call.

use std::hint::black_box;

const KEYS: u64 = 1_024;

#[sentinel_runtime::sentinel(
    resource = "instructions-hot",
    hotspot(param = key, qps = 1000000, capacity = 1000000)
)]
fn guarded_hot(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

fn main() {
    // `cargo bench` passes `--bench`; the number is ours.
    let calls: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let key = |i: u64| (i % KEYS).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // Every key in the table first (its insertion is not the admission path).
    for i in 0..KEYS {
        black_box(guarded_hot(black_box(key(i)))).expect("passes");
    }
    for i in 0..calls {
        black_box(guarded_hot(black_box(key(i)))).expect("passes");
    }
    println!("{calls} guarded calls over {KEYS} keys");
}
