//! Durations in rule files are read by the attribute's grammar, every step checked: a number too
//! large for a duration is refused by the field's name, never wrapped into a short one.

use std::time::Duration;

use sentinel_runtime::rules::{RuleSet, RuleSetError};

fn only_field(err: &RuleSetError) -> Option<&str> {
    assert_eq!(err.entries().len(), 1, "{err}");
    err.entries()[0].field.as_deref()
}

/// A breaker rule with `recovery` written as `value` (already quoted as the format needs).
fn yaml(value: &str) -> String {
    format!(
        "circuit_breaker:\n  - resource: durations\n    strategy: {{ type: error_count, \
         threshold: 1 }}\n    recovery: {value}\n"
    )
}

#[test]
fn a_duration_beyond_the_range_is_refused_by_name_not_wrapped() {
    // 3938453320844195178974243 days is just under 2^128 ns; with the fraction the sum passed
    // it and wrapped to about 23 s.
    let huge = "3938453320844195178974243.14183759504d";
    let err = RuleSet::from_yaml(&yaml(huge)).expect_err("accepted a duration beyond the range");
    assert_eq!(only_field(&err), Some("recovery"), "{err}");
    assert!(err.to_string().contains("out of range"), "{err}");

    let json = format!(
        r#"{{"circuit_breaker": [{{"resource": "durations", "strategy": {{"type": "error_count", "threshold": 1}}, "recovery": "{huge}"}}]}}"#
    );
    let err = RuleSet::from_json(&json).expect_err("accepted a duration beyond the range");
    assert_eq!(only_field(&err), Some("recovery"), "{err}");

    let toml = format!(
        "[[circuit_breaker]]\nresource = \"durations\"\nstrategy = {{ type = \"error_count\", \
         threshold = 1 }}\nrecovery = \"{huge}\"\n"
    );
    let err = RuleSet::from_toml(&toml).expect_err("accepted a duration beyond the range");
    assert_eq!(only_field(&err), Some("recovery"), "{err}");

    // Each unit's way past the end, and a sum of parts that each fit.
    for text in [
        "18446744073709551616s",
        "99999999999999999999999999999999999999999ns",
        "213503982334601d 1d",
        "18446744073709551615s 1s",
    ] {
        let err = RuleSet::from_yaml(&yaml(text)).expect_err(text);
        assert_eq!(only_field(&err), Some("recovery"), "{text}: {err}");
        assert!(err.to_string().contains("out of range"), "{text}: {err}");
    }
}

#[test]
fn an_integer_too_large_for_milliseconds_is_refused_by_name() {
    // Beyond u64: refused while reading the file, with the rule's path in the message.
    let err = RuleSet::from_yaml(&yaml("99999999999999999999999")).expect_err("accepted");
    assert!(
        err.to_string().contains("circuit_breaker[0].recovery"),
        "{err}"
    );
    // Within u64 it is a duration, and the rule's own limit refuses it by name.
    let err = RuleSet::from_yaml(&yaml("18446744073709551615")).expect_err("accepted");
    assert_eq!(only_field(&err), Some("recovery"), "{err}");
}

#[test]
fn the_attribute_grammar_reads_the_same_in_files() {
    // The spellings the attribute accepts, each meaning the same in a file.
    for (text, expected) in [
        ("1m30s", Duration::from_secs(90)),
        ("1.5s", Duration::from_millis(1_500)),
        ("1d", Duration::from_secs(86_400)),
        ("1_500ms", Duration::from_millis(1_500)),
        ("\"1h 30m\"", Duration::from_secs(5_400)),
        ("1500", Duration::from_millis(1_500)),
    ] {
        let set = RuleSet::from_yaml(&yaml(text)).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(set.circuit_breaker[0].recovery, expected, "{text}");
    }
}
