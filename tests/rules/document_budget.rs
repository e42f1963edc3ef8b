//! A rule document's budget on what it expands to (aliases resolved), besides its bytes, and
//! the longest resource name: a document over either is refused naming the limit, one within
//! is read; the same budget for YAML, JSON and TOML, and for every reader (`from_*`, a file,
//! serde's `Deserialize` of `RuleSet`, through the same reader).

use sentinel_runtime::rules::files::MAX_EXPANDED_BYTES;
use sentinel_runtime::rules::{RuleSet, MAX_RESOURCE_NAME_BYTES};

#[path = "../support/expanding_yaml.rs"]
mod expanding_yaml;
use expanding_yaml::{expanding_yaml, ALIASES};

fn names_the_budget(text: &str) -> bool {
    text.contains(&format!("{} MiB", MAX_EXPANDED_BYTES >> 20))
}

/// `count` flow rules aliasing one name of `name_bytes` bytes.
fn aliasing(name_bytes: usize, count: usize) -> String {
    let mut doc = format!(
        "flow:\n  - resource: &n {}\n    threshold: 1\n",
        "n".repeat(name_bytes)
    );
    for _ in 0..count {
        doc.push_str("  - {resource: *n, threshold: 1}\n");
    }
    doc
}

#[test]
fn a_yaml_document_aliasing_a_long_name_is_refused_naming_the_budget() {
    let err = RuleSet::from_yaml(&expanding_yaml()).expect_err("refused");
    let text = err.to_string();
    assert!(names_the_budget(&text), "{text}");
    // At the rule where the budget ran out, well before the end of the document (YAML's
    // parser places an alias's value where it is anchored: line 2).
    assert_eq!(err.entries()[0].line, Some(2), "{text}");
    let at: usize = text
        .split_once("flow[")
        .and_then(|(_, rest)| rest.split_once(']'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("names the rule: {text}"));
    assert!(at < ALIASES / 10, "{text}");
    // From a file as well.
    let dir = std::env::temp_dir().join(format!("sentinel-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("rules.yaml");
    std::fs::write(&file, expanding_yaml()).expect("written");
    let file_err = RuleSet::from_path(&file).expect_err("refused");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(names_the_budget(&file_err.to_string()), "{file_err}");
}

#[test]
fn aliases_within_the_budget_are_read() {
    // 4 000 aliases of a 100-byte name: about 0.8 MiB read, far below the budget.
    let set = RuleSet::from_yaml(&aliasing(100, ALIASES)).expect("read");
    assert_eq!(set.flow.len(), ALIASES + 1);
    assert!(set.flow.iter().all(|r| r.resource == "n".repeat(100)));
    // Far above it: the same 4 000 aliases of a name of 5 000 bytes (20 MB).
    let err = RuleSet::from_yaml(&aliasing(5_000, ALIASES)).expect_err("refused");
    assert!(names_the_budget(&err.to_string()), "{err}");
}

#[test]
fn documents_without_aliases_count_too_and_a_megabyte_of_rules_is_within() {
    // 1 MiB of ordinary rules, in each format: read.
    let mut json = String::from("{\"flow\": [");
    let mut yaml = String::from("flow:\n");
    let mut toml = String::new();
    let mut i = 0;
    while json.len() < 1 << 20 {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "{{\"resource\": \"budget-{i}\", \"threshold\": {i}}}"
        ));
        yaml.push_str(&format!("  - {{resource: budget-{i}, threshold: {i}}}\n"));
        toml.push_str(&format!(
            "[[flow]]\nresource = \"budget-{i}\"\nthreshold = {i}\n"
        ));
        i += 1;
    }
    json.push_str("]}");
    for (name, read) in [
        ("json", RuleSet::from_json(&json)),
        ("yaml", RuleSet::from_yaml(&yaml)),
        ("toml", RuleSet::from_toml(&toml)),
    ] {
        assert_eq!(read.expect(name).flow.len(), i, "{name}");
    }
    // Values past the budget with no alias at all (600 000 numbers, 32 bytes each counted),
    // in JSON and TOML: refused naming it, whatever else is wrong with them.
    let numbers = vec!["0"; 600_000].join(",");
    let err = RuleSet::from_json(&format!("{{\"flow\": [{numbers}]}}")).expect_err("refused");
    assert!(names_the_budget(&err.to_string()), "{err}");
    let err = RuleSet::from_toml(&format!("flow = [{numbers}]")).expect_err("refused");
    assert!(names_the_budget(&err.to_string()), "{err}");
}

#[test]
fn a_resource_name_past_the_longest_is_refused_naming_the_field() {
    let longest = "r".repeat(MAX_RESOURCE_NAME_BYTES);
    let ok = format!("{{\"flow\": [{{\"resource\": \"{longest}\", \"threshold\": 1}}]}}");
    assert_eq!(
        RuleSet::from_json(&ok).expect("read").flow[0].resource,
        longest
    );
    let long = "r".repeat(100 << 10);
    for (format, text) in [
        (
            "json",
            format!("{{\"flow\": [{{\"resource\": \"{long}\", \"threshold\": 1}}]}}"),
        ),
        (
            "yaml",
            format!("flow:\n  - resource: {long}\n    threshold: 1\n"),
        ),
        (
            "toml",
            format!("[[flow]]\nresource = \"{long}\"\nthreshold = 1\n"),
        ),
    ] {
        let err = match format {
            "json" => RuleSet::from_json(&text),
            "yaml" => RuleSet::from_yaml(&text),
            _ => RuleSet::from_toml(&text),
        }
        .expect_err(format);
        let entry = &err.entries()[0];
        assert_eq!(entry.field.as_deref(), Some("resource"), "{format}: {err}");
        assert!(
            entry.message.contains(&format!(
                "over the limit of {MAX_RESOURCE_NAME_BYTES} bytes"
            )),
            "{format}: {err}"
        );
        // The error shows the name cut, not its 100 KiB.
        assert!(
            err.to_string().len() < 1_000,
            "{format}: {} bytes",
            err.to_string().len()
        );
    }
}

#[path = "../support/memory_source.rs"]
mod memory_source;

#[test]
fn a_watched_source_holding_the_document_is_refused_and_the_rules_in_force_stay() {
    use sentinel_runtime::rules::{self, FlowRule};
    let _serial = crate::serial();
    let source = memory_source::MemorySource::default();
    source.set(&expanding_yaml(), 7);
    // At start: refused, nothing watched.
    let err = rules::watch_source(source.clone()).expect_err("refused");
    assert!(names_the_budget(&err.to_string()), "{err}");
    // Written after a good version: refused, the good rules stay, the status says why.
    source.set("flow:\n  - resource: budget-good\n    threshold: 3\n", 8);
    let watcher = rules::watch_source(source.clone()).expect("the good version");
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("budget-good", 3.0)]);
    source.set(&expanding_yaml(), 9);
    let start = std::time::Instant::now();
    let why = loop {
        if let Some(e) = watcher.status().last_error {
            break e.to_string();
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "not refused within 5 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(names_the_budget(&why), "{why}");
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("budget-good", 3.0)]);
    assert_eq!(source.document().map(|(_, v)| v), Some(9));
    drop(watcher);
    rules::load(sentinel_runtime::rules::RuleSet::default()).expect("cleared");
}

#[test]
fn nested_aliases_a_billion_values_deep_are_refused_at_once() {
    // Nine lists, each aliasing the one before nine times: 9^9 values once read.
    let mut doc = String::from("flow:\n  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for n in 1..9 {
        let before = vec![format!("*l{}", n - 1); 9].join(", ");
        doc.push_str(&format!("  - &l{n} [{before}]\n"));
    }
    let started = std::time::Instant::now();
    let err = RuleSet::from_yaml(&doc).expect_err("refused");
    assert!(names_the_budget(&err.to_string()), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
