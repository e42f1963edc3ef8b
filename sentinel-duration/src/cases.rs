//! The table both readers of the grammar are tested against: the rule files' duration fields
//! (`sentinel-runtime`) and the attribute's duration arguments (`sentinel-runtime-macros`)
//! each run every row, and check that they accept exactly the durations the grammar accepts,
//! meaning the same (each within its own range: the attribute counts whole milliseconds above
//! zero).
//!
//! Not an API: test data.

use std::time::Duration;

/// `(text, what it means)`; `None`: refused.
pub const CASES: &[(&str, Option<Duration>)] = &[
    ("500ms", Some(Duration::from_millis(500))),
    ("1s", Some(Duration::from_secs(1))),
    ("10s", Some(Duration::from_secs(10))),
    ("1.5s", Some(Duration::from_millis(1_500))),
    (".5s", Some(Duration::from_millis(500))),
    ("2.5h", Some(Duration::from_secs(9_000))),
    ("1m", Some(Duration::from_secs(60))),
    ("1min", Some(Duration::from_secs(60))),
    ("2 min", Some(Duration::from_secs(120))),
    ("1m30s", Some(Duration::from_secs(90))),
    ("1h 30m", Some(Duration::from_secs(5_400))),
    ("1h", Some(Duration::from_secs(3_600))),
    ("1d", Some(Duration::from_secs(86_400))),
    ("1d12h", Some(Duration::from_secs(129_600))),
    ("1_500ms", Some(Duration::from_millis(1_500))),
    ("1_000_000us", Some(Duration::from_secs(1))),
    (" 7 s ", Some(Duration::from_secs(7))),
    ("3sec", Some(Duration::from_secs(3))),
    ("250us", Some(Duration::from_micros(250))),
    ("250µs", Some(Duration::from_micros(250))),
    ("1500us", Some(Duration::from_micros(1_500))),
    ("2000us", Some(Duration::from_millis(2))),
    ("7ns", Some(Duration::from_nanos(7))),
    ("1.5us", Some(Duration::from_nanos(1_500))),
    ("5000000ns", Some(Duration::from_millis(5))),
    ("0s", Some(Duration::ZERO)),
    ("0.0001s", Some(Duration::from_micros(100))),
    (
        "49d17h2m47s295ms",
        Some(Duration::from_millis(4_294_967_295)),
    ),
    ("18446744073709551615s", Some(Duration::from_secs(u64::MAX))),
    ("", None),
    ("5", None),
    ("1m30", None),
    ("ms", None),
    ("1x", None),
    ("10days", None),
    ("1.2.3s", None),
    ("_5s", None),
    ("-1s", None),
    ("1e3ms", None),
    ("1.0000000001ns", None),
    ("99999999999999999999d", None),
    ("18446744073709551616s", None),
    ("3938453320844195178974243.14183759504d", None),
];
