//! Instructions per guarded call, counted exactly with callgrind on one thread (no race between
//! threads moves the count). Cases, by the first argument:
//!
//! - `qps`: `#[sentinel(qps = 1e9)]`, entry + exit, every call admitted;
//! - `stats`: `#[sentinel]` with no rule (statistics only);
//! - `hot`: one hotspot rule, called over 1 024 keys already in its table;
//! - `param`: `EntryBuilder::new(name).param(&key).enter()` and the entry's drop, one hotspot
//!   rule, over the same 1 024 keys already in its table (what the tower layer's per-client
//!   path and a handler's hand-written entry take).
//!
//! Build with `cargo bench -p sentinel-benches --bench call_instructions --no-run`, then run the binary it names under
//! `valgrind --tool=callgrind --toggle-collect='call_instructions::guarded_*'` with the case and
//! N, then 2N calls: the difference of the two totals over N is one call.
//! `scripts/instructions.sh` does all of it.

use std::hint::black_box;

const KEYS: u64 = 1_024;

#[sentinel_runtime::sentinel(
    resource = "instructions-hot",
    hotspot(param = key, qps = 1000000, capacity = 1000000)
)]
fn guarded_hot(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

#[sentinel_runtime::sentinel(resource = "instructions-qps", qps = 1000000000)]
fn guarded_qps(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

#[sentinel_runtime::sentinel(resource = "instructions-stats")]
fn guarded_stats(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    Ok(key)
}

#[inline(never)]
fn guarded_param(key: u64) -> Result<u64, sentinel_runtime::BlockError> {
    let entry = sentinel_runtime::EntryBuilder::new("instructions-param")
        .param(&key)
        .enter()?;
    drop(black_box(entry));
    Ok(key)
}

fn main() {
    // `cargo bench -p sentinel-benches` passes `--bench`; the case and the number are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let case = args.first().map_or("hot", String::as_str);
    let calls: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let key = |i: u64| (i % KEYS).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let call: fn(u64) -> Result<u64, sentinel_runtime::BlockError> = match case {
        "qps" => guarded_qps,
        "stats" => guarded_stats,
        "param" => {
            sentinel_runtime::rules::load_hotspot_rules(vec![
                sentinel_runtime::rules::HotspotRule::qps("instructions-param", 0, 1e6)
                    .capacity(1_000_000),
            ])
            .expect("a valid rule");
            guarded_param
        }
        _ => guarded_hot,
    };
    // Every key in the table first (its insertion is not the admission path), and every
    // resource's first call made.
    for i in 0..KEYS {
        black_box(call(black_box(key(i)))).expect("passes");
    }
    for i in 0..calls {
        black_box(call(black_box(key(i)))).expect("passes");
    }
    println!("{case}: {calls} guarded calls over {KEYS} keys");
}
