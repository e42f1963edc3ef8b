//! Durations in rule files: a string with a unit (`"500ms"`, `"1s"`, `"1m30s"`) or integer
//! milliseconds.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

/// Parses `"500ms"`, `"1.5s"`, `"1m30s"`, `"2 h"`, `"1d"`, `"1_500ms"`: the attribute's
/// grammar (`sentinel_duration`), one implementation for both, every step checked.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    sentinel_duration::parse(text).map_err(|why| {
        format!(
            "must be a duration such as \"500ms\", \"1s\", \"1m30s\" or \"1h\" (or integer \
             milliseconds), got {text:?}: {why}"
        )
    })
}

/// The largest unit that is exact: `"500ms"`, `"10s"`, `"1m"`, `"90s"`, `"1h"`.
pub(crate) fn format(d: Duration) -> String {
    sentinel_duration::format(d)
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as \"500ms\", \"1s\", \"1m\" or integer milliseconds")
    }

    fn visit_u64<E: de::Error>(self, ms: u64) -> Result<Duration, E> {
        Ok(Duration::from_millis(ms))
    }

    fn visit_i64<E: de::Error>(self, ms: i64) -> Result<Duration, E> {
        match u64::try_from(ms) {
            Ok(ms) => Ok(Duration::from_millis(ms)),
            Err(_) => Err(E::custom(format!(
                "must be a positive duration, got {ms} ms"
            ))),
        }
    }

    fn visit_f64<E: de::Error>(self, ms: f64) -> Result<Duration, E> {
        Err(E::custom(format!(
            "must be integer milliseconds or a string with a unit (\"1.5s\"), got {ms}"
        )))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        parse(text).map_err(E::custom)
    }
}

pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*d))
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(DurationVisitor)
}

/// The same, for an optional duration (`null` or absent: none).
pub(crate) mod option {
    use super::*;

    struct OptionVisitor;

    impl<'de> Visitor<'de> for OptionVisitor {
        type Value = Option<Duration>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration such as \"500ms\", or null")
        }

        fn visit_none<E: de::Error>(self) -> Result<Option<Duration>, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Option<Duration>, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&format(*d)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        d.deserialize_option(OptionVisitor)
    }
}
