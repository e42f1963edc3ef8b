//! etcd v3's JSON gateway as the etcd source uses it: the bodies of a range, of a
//! compare-and-swap transaction and of a watch, and what their answers say. Keys and values
//! travel in base64; 64-bit numbers as strings (numbers are read too).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};

/// Reads a key.
pub(super) const RANGE: &str = "/v3/kv/range";
/// A transaction: compares, then puts or reads.
pub(super) const TXN: &str = "/v3/kv/txn";
/// A stream of a key's changes.
pub(super) const WATCH: &str = "/v3/watch";

/// The document's key as etcd holds it: its mod revision and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Kv {
    pub(super) mod_revision: u64,
    pub(super) value: Vec<u8>,
}

/// What a read found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// The key's mod revision is still the one given.
    Unchanged,
    /// No such key.
    Missing,
    Kv(Kv),
}

/// What a compare-and-swap did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Written {
    /// Written: the key's new mod revision.
    Done(u64),
    /// Not written: the key's mod revision now (0: no key).
    Stale(u64),
}

/// A read of `key`: with `seen` (a mod revision), a transaction that reads the key only if its
/// mod revision is no longer `seen`.
pub(super) fn read_request(key: &[u8], seen: Option<u64>) -> (&'static str, Value) {
    let range = json!({ "key": encode(key) });
    match seen.filter(|v| *v > 0) {
        None => (RANGE, range),
        Some(seen) => (
            TXN,
            json!({
                "compare": [mod_is(key, seen)],
                "failure": [{ "request_range": range }],
            }),
        ),
    }
}

/// What [`read_request`]'s answer says.
pub(super) fn read_answer(seen: Option<u64>, body: &[u8]) -> Result<Found, String> {
    let answer = parse(body)?;
    let range = match seen.filter(|v| *v > 0) {
        None => &answer,
        Some(_) if succeeded(&answer) => return Ok(Found::Unchanged),
        Some(_) => answer
            .pointer("/responses/0/response_range")
            .ok_or_else(|| format!("a transaction's answer without its read: {answer}"))?,
    };
    match range.pointer("/kvs/0") {
        None => Ok(Found::Missing),
        Some(kv) => Ok(Found::Kv(Kv {
            mod_revision: number(kv.get("mod_revision"))
                .ok_or_else(|| format!("a key without its mod revision: {kv}"))?,
            value: match kv.get("value").and_then(Value::as_str) {
                // An empty value is left out.
                None => Vec::new(),
                Some(text) => decode(text)?,
            },
        })),
    }
}

/// A write of `value` at `key` if the key's mod revision is still `if_version` (0: no key;
/// `None`: whatever it is); a stale write reads the key instead.
pub(super) fn put_request(key: &[u8], value: &[u8], if_version: Option<u64>) -> Value {
    let compare: Vec<Value> = if_version.map(|v| mod_is(key, v)).into_iter().collect();
    json!({
        "compare": compare,
        "success": [{ "request_put": { "key": encode(key), "value": encode(value) } }],
        "failure": [{ "request_range": { "key": encode(key), "keys_only": true } }],
    })
}

/// What [`put_request`]'s answer says.
pub(super) fn put_answer(body: &[u8]) -> Result<Written, String> {
    let answer = parse(body)?;
    if succeeded(&answer) {
        return number(answer.pointer("/header/revision"))
            .map(Written::Done)
            .ok_or_else(|| format!("a write's answer without its revision: {answer}"));
    }
    let current = answer
        .pointer("/responses/0/response_range/kvs/0/mod_revision")
        .map_or(Some(0), |v| number(Some(v)))
        .ok_or_else(|| format!("a key without its mod revision: {answer}"))?;
    Ok(Written::Stale(current))
}

/// A watch of `key` from now on.
pub(super) fn watch_request(key: &[u8]) -> Value {
    json!({ "create_request": { "key": encode(key) } })
}

/// One message of a watch's stream (what the source needs of it; events are skipped, not
/// kept).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WatchMessage {
    #[serde(default)]
    result: Option<WatchResult>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct WatchResult {
    #[serde(default)]
    created: bool,
    #[serde(default)]
    canceled: bool,
    #[serde(default)]
    cancel_reason: Option<String>,
    #[serde(default)]
    events: Vec<IgnoredAny>,
}

/// What a watch message means to the source.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum WatchEvent {
    /// The watch is in place: changes from now on will be told.
    Created,
    /// The key changed.
    Changed,
    /// Nothing for the source (a progress note).
    Quiet,
    /// The watch is over: why.
    Ended(String),
}

impl WatchMessage {
    pub(super) fn event(self) -> WatchEvent {
        if let Some(error) = self.error {
            return WatchEvent::Ended(format!("etcd ended the watch: {error}"));
        }
        match self.result {
            None => WatchEvent::Quiet,
            Some(r) if r.canceled => WatchEvent::Ended(format!(
                "etcd canceled the watch{}",
                r.cancel_reason
                    .map(|why| format!(": {why}"))
                    .unwrap_or_default()
            )),
            Some(r) if r.created => WatchEvent::Created,
            Some(r) if !r.events.is_empty() => WatchEvent::Changed,
            Some(_) => WatchEvent::Quiet,
        }
    }
}

/// What an answer other than `200` says: the gateway's message, or the body.
pub(super) fn refusal(status: u16, body: &[u8]) -> String {
    let said = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        v.get("message")
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let said = said.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        text.chars().take(200).collect()
    });
    format!("HTTP {status}: {said}")
}

fn mod_is(key: &[u8], revision: u64) -> Value {
    json!({
        "key": encode(key),
        "target": "MOD",
        "result": "EQUAL",
        "mod_revision": revision.to_string(),
    })
}

fn parse(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("an answer that is not JSON ({e})"))
}

/// A transaction's `succeeded` (left out when false).
fn succeeded(answer: &Value) -> bool {
    answer.get("succeeded").and_then(Value::as_bool) == Some(true)
}

/// A 64-bit number, written as a string or a number.
fn number(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64, padded.
pub(super) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional).
pub(super) fn decode(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.trim_end_matches('=').as_bytes();
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return Err("a value that is not base64".into());
    }
    let mut out = Vec::with_capacity(digits.len() / 4 * 3 + 2);
    for group in digits.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in group.iter().enumerate() {
            let v = ALPHABET
                .iter()
                .position(|&a| a == c)
                .ok_or("a value that is not base64")?;
            n |= (v as u32) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length_and_byte() {
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "Zg==");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode(b"foo"), "Zm9v");
        assert_eq!(
            encode(b"/sentinel/shop/rules"),
            "L3NlbnRpbmVsL3Nob3AvcnVsZXM="
        );
        let all: Vec<u8> = (0..=255).collect();
        for len in 0..all.len() {
            assert_eq!(decode(&encode(&all[..len])).as_deref(), Ok(&all[..len]));
        }
        assert_eq!(decode("Zm8").as_deref(), Ok(&b"fo"[..]));
        for bad in ["Z", "Zm9v!", "Zg===", "Zm 9v"] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_find_a_key_none_or_the_same_revision() {
        let (path, body) = read_request(b"k", None);
        assert_eq!((path, body), (RANGE, json!({ "key": "aw==" })));
        let (path, body) = read_request(b"k", Some(7));
        assert_eq!(path, TXN);
        assert_eq!(body["compare"][0]["mod_revision"], "7");

        let found = br#"{"header":{"revision":"9"},"kvs":[{"key":"aw==","mod_revision":"8","value":"Zm9v"}],"count":"1"}"#;
        assert_eq!(
            read_answer(None, found),
            Ok(Found::Kv(Kv {
                mod_revision: 8,
                value: b"foo".to_vec()
            }))
        );
        assert_eq!(
            read_answer(None, br#"{"header":{"revision":"9"}}"#),
            Ok(Found::Missing)
        );
        assert_eq!(
            read_answer(Some(8), br#"{"header":{},"succeeded":true}"#),
            Ok(Found::Unchanged)
        );
        let moved = br#"{"header":{},"responses":[{"response_range":{"kvs":[{"key":"aw==","mod_revision":9}]}}]}"#;
        assert_eq!(
            read_answer(Some(8), moved),
            Ok(Found::Kv(Kv {
                mod_revision: 9,
                value: Vec::new()
            }))
        );
        assert!(read_answer(None, b"<html>").is_err());
        assert!(read_answer(None, br#"{"kvs":[{"value":"Zm9v"}]}"#).is_err());
    }

    #[test]
    fn writes_compare_the_mod_revision_and_say_the_current_one_when_stale() {
        let body = put_request(b"k", b"v", Some(0));
        assert_eq!(body["compare"][0]["mod_revision"], "0");
        assert_eq!(body["success"][0]["request_put"]["value"], "dg==");
        assert_eq!(put_request(b"k", b"v", None)["compare"], json!([]));

        let done =
            br#"{"header":{"revision":"12"},"succeeded":true,"responses":[{"response_put":{}}]}"#;
        assert_eq!(put_answer(done), Ok(Written::Done(12)));
        let stale = br#"{"header":{"revision":"12"},"responses":[{"response_range":{"kvs":[{"key":"aw==","mod_revision":"11"}]}}]}"#;
        assert_eq!(put_answer(stale), Ok(Written::Stale(11)));
        let none = br#"{"header":{"revision":"12"},"responses":[{"response_range":{}}]}"#;
        assert_eq!(put_answer(none), Ok(Written::Stale(0)));
    }

    #[test]
    fn watch_messages_say_created_changed_or_ended() {
        let event = |text: &str| {
            serde_json::from_str::<WatchMessage>(text)
                .expect("a message")
                .event()
        };
        assert_eq!(
            event(r#"{"result":{"header":{"revision":"2"},"created":true}}"#),
            WatchEvent::Created
        );
        assert_eq!(
            event(r#"{"result":{"header":{},"events":[{"type":"DELETE","kv":{"key":"aw=="}}]}}"#),
            WatchEvent::Changed
        );
        assert_eq!(event(r#"{"result":{"header":{}}}"#), WatchEvent::Quiet);
        assert!(matches!(
            event(r#"{"result":{"canceled":true,"cancel_reason":"compacted"}}"#),
            WatchEvent::Ended(why) if why.contains("compacted")
        ));
        assert!(matches!(
            event(r#"{"error":{"grpc_code":14,"message":"unavailable"}}"#),
            WatchEvent::Ended(why) if why.contains("unavailable")
        ));
        assert_eq!(
            refusal(400, br#"{"error":"x","code":3,"message":"bad key"}"#),
            "HTTP 400: bad key"
        );
        assert_eq!(refusal(502, b"Bad Gateway"), "HTTP 502: Bad Gateway");
    }
}
