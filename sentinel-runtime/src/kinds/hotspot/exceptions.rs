//! A hotspot rule's exceptions in files: a list of `{ value: "<string>", threshold: <number> }`.
//! Each value is hashed as a string (`&str`), so it matches a parameter passed as a `&str` or a
//! `String` (`.param("vip")`, an attribute argument of either type), never a number: `"42"`
//! does not match `42u64`. An exception known only by its hash (given in code with
//! [`HotspotRule::exception`](crate::rules::HotspotRule::exception)) is written as
//! `{ value_hash: "<16 hex digits>", hash_key: "<8 hex digits>", threshold }`; it reads back in
//! the process that wrote it (same `hash_key`), and is refused, naming `value_hash`, by any
//! other (the hash key is drawn at random per process).

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::kinds::hotspot::rule::HotspotException;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Read {
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    value_hash: Option<String>,
    #[serde(default)]
    hash_key: Option<String>,
    threshold: f64,
}

#[derive(Serialize)]
struct Written<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hash_key: Option<String>,
    threshold: f64,
}

fn read(r: Read) -> Result<HotspotException, String> {
    match (r.value, r.value_hash) {
        (Some(value), None) => {
            if r.hash_key.is_some() {
                return Err("an exception with a `value` takes no `hash_key`".to_owned());
            }
            Ok(HotspotException::from_str_value(&value, r.threshold))
        }
        (None, Some(hash)) => {
            let value_hash = u64::from_str_radix(&hash, 16)
                .ok()
                .filter(|_| hash.len() == 16)
                .ok_or_else(|| {
                    format!("`value_hash` is `{hash}`: expected 16 hexadecimal digits")
                })?;
            let ours = format!("{:08x}", crate::param::key_check());
            if r.hash_key.as_deref() != Some(ours.as_str()) {
                return Err(format!(
                    "`value_hash` was written by another process (its `hash_key` is {}, this \
                     process's is `{ours}`): values are hashed with a key drawn per process, \
                     so give the exception's `value` as text instead",
                    r.hash_key
                        .map_or_else(|| "missing".to_owned(), |k| format!("`{k}`")),
                ));
            }
            Ok(HotspotException {
                value_hash,
                threshold: r.threshold,
                value: None,
            })
        }
        (Some(_), Some(_)) => {
            Err("an exception has either a `value` or a `value_hash`, not both".to_owned())
        }
        (None, None) => Err("an exception needs a `value`".to_owned()),
    }
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<HotspotException>, D::Error> {
    Vec::<Read>::deserialize(d)?
        .into_iter()
        .map(|r| read(r).map_err(de::Error::custom))
        .collect()
}

pub(crate) fn serialize<S: Serializer>(
    exceptions: &[HotspotException],
    s: S,
) -> Result<S::Ok, S::Error> {
    let key = format!("{:08x}", crate::param::key_check());
    s.collect_seq(exceptions.iter().map(|e| match &e.value {
        Some(value) => Written {
            value: Some(value),
            value_hash: None,
            hash_key: None,
            threshold: e.threshold,
        },
        None => Written {
            value: None,
            value_hash: Some(format!("{:016x}", e.value_hash)),
            hash_key: Some(key.clone()),
            threshold: e.threshold,
        },
    }))
}
