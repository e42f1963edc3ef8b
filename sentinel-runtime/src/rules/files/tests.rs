use super::format::Format;
use super::text::parse;
use crate::manager::set::RuleSet;
use crate::rule_data::file::duration;
use std::time::Duration;

use super::locate::{self, Pos};
use super::read::RuleKind;
use super::text::{strip_json_comments, MAX_LISTED};
use crate::rules::{AuthorityRule, CircuitBreakerRule, FlowRule, SystemRule};
use std::cell::Cell;

use super::parse_counts::{PARSES, SCANNED};

/// The parses `f` made on this thread.
fn parses_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = PARSES.with(Cell::get);
    let out = f();
    (out, PARSES.with(Cell::get) - before)
}

/// A file of `n` flow rules, each with a bad `threshold`, in `format`.
fn many_bad_rules(n: usize, format: Format) -> String {
    let mut text = String::new();
    match format {
        Format::Json => {
            text.push_str("{\"flow\": [\n");
            for i in 0..n {
                let sep = if i + 1 == n { "" } else { "," };
                text.push_str(&format!(
                    "  {{\"resource\": \"r{i}\",\n   \"threshold\": -1}}{sep}\n"
                ));
            }
            text.push_str("]}\n");
        }
        Format::Yaml => {
            text.push_str("flow:\n");
            for i in 0..n {
                text.push_str(&format!("  - resource: r{i}\n    threshold: -1\n"));
            }
        }
        Format::Toml => {
            for i in 0..n {
                text.push_str(&format!(
                    "[[flow]]\nresource = \"r{i}\"\nthreshold = -1\n\n"
                ));
            }
        }
    }
    text
}

#[test]
fn many_bad_rules_are_located_in_one_pass_over_the_text() {
    for format in [Format::Json, Format::Yaml, Format::Toml] {
        for n in [10, 1_000] {
            let text = many_bad_rules(n, format);
            let scanned_before = SCANNED.with(Cell::get);
            let (result, parses) = parses_of(|| parse(&text, format));
            let scanned = SCANNED.with(Cell::get) - scanned_before;
            let err = result.expect_err("every rule is bad");
            // Once to read the rules, once to locate them all: never once per bad rule.
            assert!(
                parses <= 2,
                "{format:?}, {n} bad rules: the text was parsed {parses} times"
            );
            assert!(
                scanned <= text.len(),
                "{format:?}, {n} bad rules: {scanned} bytes walked for lines in {}",
                text.len()
            );
            let first = &err.entries()[0];
            assert_eq!(
                (first.line, first.field.as_deref(), first.index),
                (Some(3), Some("threshold"), Some(0)),
                "{format:?}: {err}"
            );
            // At most MAX_LISTED problems are listed, in file order; the rest are counted.
            let listed = n.min(MAX_LISTED);
            assert_eq!(err.entries().len(), listed + usize::from(n > MAX_LISTED));
            assert_eq!(err.entries()[listed - 1].index, Some(listed - 1));
            if n > MAX_LISTED {
                let last = err.entries().last().map(|e| e.message.as_str());
                assert_eq!(
                    last,
                    Some("and 900 more problems (only the first 100 are listed)")
                );
            }
        }
    }
}

#[test]
fn durations_parse_and_print() {
    let ms = Duration::from_millis;
    for (text, expected) in [
        ("500ms", ms(500)),
        ("1s", ms(1_000)),
        ("1.5s", ms(1_500)),
        (".5s", ms(500)),
        ("1m", ms(60_000)),
        ("1h", ms(3_600_000)),
        ("1d", ms(86_400_000)),
        ("1m30s", ms(90_000)),
        ("1h 30m", ms(5_400_000)),
        ("2 min", ms(120_000)),
        ("250us", Duration::from_micros(250)),
        ("250µs", Duration::from_micros(250)),
        ("7ns", Duration::from_nanos(7)),
        (" 0s ", Duration::ZERO),
    ] {
        assert_eq!(duration::parse(text), Ok(expected), "{text}");
    }
    for bad in [
        "",
        "5",
        "ms",
        "1x",
        "1.2.3s",
        "-1s",
        "1.0000000001ns",
        "1e3ms",
        "99999999999999999999d",
    ] {
        assert!(duration::parse(bad).is_err(), "{bad:?} should be refused");
    }
    for (d, text) in [
        (ms(500), "500ms"),
        (ms(1_000), "1s"),
        (ms(90_000), "90s"),
        (ms(60_000), "1m"),
        (ms(7_200_000), "2h"),
        (Duration::ZERO, "0ms"),
        (Duration::from_micros(1_500), "1500us"),
        (Duration::from_nanos(3), "3ns"),
    ] {
        assert_eq!(duration::format(d), text);
        assert_eq!(duration::parse(text), Ok(d));
    }
}

/// The grammar's table, read as the rule files read a duration field: every string means
/// what it means to the attribute (its crate runs the same table), and integers are
/// milliseconds.
#[test]
fn the_duration_table_reads_as_in_the_attribute() {
    for &(text, expected) in sentinel_duration::cases::CASES {
        let read = duration::deserialize(serde_json::Value::from(text));
        assert_eq!(read.as_ref().ok(), expected.as_ref(), "{text:?}: {read:?}");
        if let Err(e) = read {
            assert!(e.to_string().contains(&format!("got {text:?}")), "{e}");
        }
    }
    for (ms, expected) in [
        (0, Duration::ZERO),
        (1_500, Duration::from_millis(1_500)),
        (u64::MAX, Duration::from_millis(u64::MAX)),
    ] {
        let read = duration::deserialize(serde_json::Value::from(ms));
        assert_eq!(read.ok(), Some(expected), "{ms}");
    }
    assert!(duration::deserialize(serde_json::Value::from(-1)).is_err());
    assert!(duration::deserialize(serde_json::Value::from(1.5)).is_err());
}

#[test]
fn comments_are_blanked_outside_strings_only() {
    let text = "/* a\n * b */ {\"a\": \"x//y /* z */\", // c\n \"b\": 1 /* d */}\n// e";
    let out = strip_json_comments(text).unwrap();
    assert_eq!(
        out,
        "    \n        {\"a\": \"x//y /* z */\",     \n \"b\": 1        }\n    "
    );
    assert_eq!(out.len(), text.len());
    let escaped = r#"{"a": "q\"//not a comment"}"#;
    assert_eq!(strip_json_comments(escaped).unwrap(), escaped);
    let err = strip_json_comments("{\n /* open").unwrap_err();
    assert_eq!(err.entries()[0].line, Some(2));
}

type LineColumn = Option<(usize, usize)>;

/// Where rule `index` of `kind` is in `text`, and its `field`, as lines and columns.
fn at(
    text: &str,
    format: Format,
    kind: RuleKind,
    index: usize,
    field: Option<&str>,
) -> (LineColumn, LineColumn) {
    let found =
        locate::tree(text, format)
            .expect("the text parses")
            .locate(kind.keys(), index, field);
    let one = |pos: Option<Pos>| pos.map(|p| locate::line_columns(text, &[p])[0]);
    (one(found.rule), one(found.field))
}

#[test]
fn rules_and_fields_are_located_in_every_format() {
    let json =
        "{\n \"x\": 1,\n \"flow\": [\n  {\"a\": 1},\n\n  {\n \"b\": {\"c\": [0, 2]}}, {\"c\":3}]}";
    let rule = |i| {
        at(
            json,
            Format::Json,
            RuleKind::named("flow").unwrap(),
            i,
            None,
        )
        .0
    };
    assert_eq!(
        (rule(0), rule(1), rule(2), rule(3)),
        (Some((4, 3)), Some((6, 3)), Some((7, 23)), None)
    );
    let field = |f| {
        at(
            json,
            Format::Json,
            RuleKind::named("flow").unwrap(),
            1,
            Some(f),
        )
        .1
    };
    assert_eq!(field("b"), Some((7, 2)));
    assert_eq!(field("b.c"), Some((7, 8)));
    assert_eq!(field("b.c[1]"), Some((7, 17)));
    assert_eq!(field("b.missing"), Some((7, 2)), "the deepest part found");
    assert_eq!(field("missing"), None);

    let yaml = "x: 1\ndegrade:\n  - a: 1\n\n  - b: 2\n    c: {d: [5, 6]}\n  - {e: 5}\n";
    let rule = |i| {
        at(
            yaml,
            Format::Yaml,
            RuleKind::named("circuit_breaker").unwrap(),
            i,
            None,
        )
        .0
    };
    assert_eq!(
        (rule(0), rule(1), rule(2), rule(3)),
        (Some((3, 5)), Some((5, 5)), Some((7, 6)), None)
    );
    let field = |f| {
        at(
            yaml,
            Format::Yaml,
            RuleKind::named("circuit_breaker").unwrap(),
            1,
            Some(f),
        )
        .1
    };
    assert_eq!(field("c"), Some((6, 5)));
    assert_eq!(field("c.d"), Some((6, 9)));
    assert_eq!(field("c.d[1]"), Some((6, 16)));

    let toml = "x = 1\n\n[[flow]]\na = 1\n\n[[flow]]\n# c\nb = 2\nc = { d = [1, 2] }\n";
    let rule = |i| {
        at(
            toml,
            Format::Toml,
            RuleKind::named("flow").unwrap(),
            i,
            None,
        )
        .0
    };
    assert_eq!(
        (rule(0), rule(1), rule(2)),
        (Some((3, 1)), Some((6, 1)), None)
    );
    let field = |f| {
        at(
            toml,
            Format::Toml,
            RuleKind::named("flow").unwrap(),
            1,
            Some(f),
        )
        .1
    };
    assert_eq!(field("b"), Some((8, 1)));
    assert_eq!(field("c.d[1]"), Some((9, 15)));
}

#[test]
fn every_bad_rule_is_listed_at_its_field() {
    let yaml = "\
flow:
  - resource: ok
    threshold: 1
  - resource: negative
    threshold: -1
  - resource: typo
    threshhold: 1
circuit_breaker:
  - resource: no-recovery
    strategy: { type: error_count, threshold: 3 }
  - resource: bad-rt
    strategy: { type: slow_request_ratio, max_rt: 0ms, threshold: 0.5 }
    recovery: 1s
";
    let err = RuleSet::from_yaml(yaml).unwrap_err();
    let found: Vec<(Option<usize>, Option<&str>, Option<&str>)> = err
        .entries()
        .iter()
        .map(|e| (e.line, e.resource.as_deref(), e.field.as_deref()))
        .collect();
    assert_eq!(
        found,
        vec![
            (Some(5), Some("negative"), Some("threshold")),
            (Some(7), Some("typo"), Some("threshhold")),
            (Some(9), Some("no-recovery"), Some("recovery")),
            (Some(12), Some("bad-rt"), Some("strategy.max_rt")),
        ]
    );
}

#[test]
fn deep_nesting_is_refused_by_line_before_parsing() {
    for (text, format) in [
        (format!("{{\n\"flow\": {}", "[".repeat(1_000)), Format::Json),
        (format!("flow:\n  - {}", "- ".repeat(100_000)), Format::Yaml),
        (format!("flow:\n  - {}", "[".repeat(100_000)), Format::Yaml),
        (format!("# deep\na = {}", "[".repeat(1_000)), Format::Toml),
    ] {
        let (result, parses) = parses_of(|| parse(&text, format));
        let err = result.expect_err("too deep");
        assert_eq!(parses, 0, "{format:?}: parsed");
        assert!(
            err.to_string()
                .contains("nested more than 64 levels deep at line 2"),
            "{format:?}: {err}"
        );
    }
}

#[test]
fn empty_documents_are_refused_and_explicit_empty_sets_accepted() {
    for (text, format) in [
        ("", Format::Json),
        ("  /* only a comment */ \n", Format::Json),
        ("null", Format::Json),
        ("", Format::Yaml),
        ("# only a comment\n", Format::Yaml),
        ("~", Format::Yaml),
        ("", Format::Toml),
        ("# only a comment\n", Format::Toml),
    ] {
        let err = parse(text, format).unwrap_err();
        assert!(err.to_string().contains("no rules"), "{text:?}: {err}");
    }
    for (text, format) in [
        ("{}", Format::Json),
        ("{}", Format::Yaml),
        ("flow: []", Format::Yaml),
        ("flow = []", Format::Toml),
    ] {
        assert_eq!(parse(text, format), Ok(RuleSet::new()), "{text:?}");
    }
    let err = parse("flow:\n", Format::Yaml).unwrap_err();
    assert!(err.to_string().contains("`[]`"), "{err}");
    let err = parse("[{\"resource\": \"a\", \"count\": 1}]", Format::Json).unwrap_err();
    assert!(err.to_string().contains("under `flow`"), "{err}");
}

#[test]
fn sets_round_trip_through_every_format() {
    let mut set = RuleSet::new();
    set.flow = vec![
        FlowRule::qps("a", 10.5)
            .warm_up(Duration::from_secs(10), 2.0)
            .throttle(Duration::from_millis(20)),
        FlowRule::concurrency("b", 3),
        FlowRule::qps("c", 1.0)
            .window(Duration::from_secs(60), 6)
            .strict(true),
        FlowRule::qps("d", 1.0).relate("a"),
    ];
    set.circuit_breaker = vec![
        CircuitBreakerRule::slow_request_ratio("a", Duration::from_millis(150), 0.3)
            .recovery(Duration::from_secs(90)),
        CircuitBreakerRule::error_count("b", 4)
            .recovery(Duration::from_secs(1))
            .probes(2)
            .min_requests(3),
    ];
    set.system = vec![
        SystemRule::new()
            .cpu_usage(0.75)
            .avg_rt(Duration::from_micros(1_500)),
        SystemRule::new()
            .load_per_core(2.5)
            .concurrency(40)
            .qps(0.0),
    ];
    set.authority = vec![
        AuthorityRule::allow("a", ["x", "y"]).allow_missing_origin(true),
        AuthorityRule::deny("b", ["z"]),
    ];
    assert_eq!(RuleSet::from_json(&set.to_json().unwrap()), Ok(set.clone()));
    assert_eq!(RuleSet::from_yaml(&set.to_yaml().unwrap()), Ok(set.clone()));
    assert_eq!(RuleSet::from_toml(&set.to_toml().unwrap()), Ok(set.clone()));
    let empty = RuleSet::new();
    assert_eq!(
        RuleSet::from_toml(&empty.to_toml().unwrap()),
        Ok(empty.clone())
    );
    assert_eq!(RuleSet::from_json(&empty.to_json().unwrap()), Ok(empty));
    // The generic serde path reads the same.
    let generic: RuleSet = serde_json::from_str(&set.to_json().unwrap()).unwrap();
    assert_eq!(generic, set);
}
