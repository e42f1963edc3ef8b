//! Refusing a rule file of many bad rules: 10 000 flow rules with a bad threshold, in each
//! format (the error lists the first 100, at their fields' lines, and counts the others).
//! Locating the bad rules costs one pass over the text, not one parse per bad rule.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sentinel_runtime::rules::RuleSet;

const RULES: usize = 10_000;

fn bench(c: &mut Criterion) {
    let (mut yaml, mut json, mut toml) = (
        String::from("flow:\n"),
        String::from("{\"flow\": [\n"),
        String::new(),
    );
    for i in 0..RULES {
        yaml.push_str(&format!("  - resource: r{i}\n    threshold: -1\n"));
        let comma = if i + 1 == RULES { "" } else { "," };
        json.push_str(&format!(
            "  {{\"resource\": \"r{i}\", \"threshold\": -1}}{comma}\n"
        ));
        toml.push_str(&format!("[[flow]]\nresource = \"r{i}\"\nthreshold = -1\n"));
    }
    json.push_str("]}\n");
    let mut g = c.benchmark_group("refuse_10000_bad_rules");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function("yaml", |b| {
        b.iter(|| RuleSet::from_yaml(&yaml).unwrap_err())
    });
    g.bench_function("json", |b| {
        b.iter(|| RuleSet::from_json(&json).unwrap_err())
    });
    g.bench_function("toml", |b| {
        b.iter(|| RuleSet::from_toml(&toml).unwrap_err())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
