//! The cost the attribute adds to a call: a trivial guarded function against the same function
//! unguarded, in one run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sentinel_runtime::{sentinel, BlockError};

#[inline(never)]
fn plain(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

#[inline(never)]
#[sentinel(resource = "bench-guarded-qps", qps = 2000000000, fallback = busy)]
fn guarded_qps(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

#[inline(never)]
#[sentinel(resource = "bench-guarded-stats", fallback = busy)]
fn guarded_stats(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

#[inline(never)]
#[sentinel(resource = "bench-guarded-result")]
fn guarded_result(a: u64, b: u64) -> Result<u64, BlockError> {
    Ok(a.wrapping_mul(31).wrapping_add(b))
}

fn busy(_: u64, _: u64, _: BlockError) -> u64 {
    0
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("guarded_call");
    g.bench_function("unguarded", |b| {
        b.iter(|| plain(black_box(3), black_box(4)))
    });
    g.bench_function("#[sentinel(qps, fallback)]", |b| {
        b.iter(|| guarded_qps(black_box(3), black_box(4)))
    });
    g.bench_function("#[sentinel(fallback)], statistics only", |b| {
        b.iter(|| guarded_stats(black_box(3), black_box(4)))
    });
    g.bench_function("#[sentinel] on a Result fn, statistics only", |b| {
        b.iter(|| guarded_result(black_box(3), black_box(4)))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
