//! RFC 9457 problem details for a refusal ([`SentinelLayer::problem_details`]), and what the
//! layer reads of a custom rejection's body (whether it is JSON).
//!
//! [`SentinelLayer::problem_details`]: super::SentinelLayer::problem_details

use std::fmt::Write;

use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};

/// The content type of a problem: `application/problem+json`.
pub(super) const PROBLEM_JSON: &str = "application/problem+json";

/// The problem type of a 429: the IANA HTTP Problem Types registry's quota exceeded.
pub(super) const QUOTA_EXCEEDED: &str =
    "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The problem type of a 503: the registry's temporary reduced capacity.
pub(super) const REDUCED_CAPACITY: &str =
    "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// Turns a default rejection (HTTP, not gRPC) into a problem: its body becomes
/// `application/problem+json` with `type`, `title`, `status` and `detail` (the text the
/// rejection had: the status's words and when to retry, nothing of the rule, the resource or
/// the caller), and `violated-policies` when `violated` names any (the RateLimit-Policy items
/// with nothing left). Its status and `Retry-After` stay.
pub(super) fn into_problem(response: &mut Response<String>, violated: &[String]) {
    let status = response.status();
    let kind = match status {
        StatusCode::TOO_MANY_REQUESTS => QUOTA_EXCEEDED,
        StatusCode::SERVICE_UNAVAILABLE => REDUCED_CAPACITY,
        // RFC 9457's default: no more than the status says.
        _ => "about:blank",
    };
    let title = status.canonical_reason().unwrap_or("Refused");
    let detail = std::mem::take(response.body_mut());
    let mut body = String::with_capacity(160 + detail.len());
    body.push_str("{\"type\":");
    json_string(kind, &mut body);
    body.push_str(",\"title\":");
    json_string(title, &mut body);
    let _ = write!(body, ",\"status\":{}", status.as_u16());
    body.push_str(",\"detail\":");
    json_string(if detail.is_empty() { title } else { &detail }, &mut body);
    if !violated.is_empty() && status == StatusCode::TOO_MANY_REQUESTS {
        body.push_str(",\"violated-policies\":[");
        for (i, name) in violated.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            json_string(name, &mut body);
        }
        body.push(']');
    }
    body.push('}');
    *response.body_mut() = body;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
}

/// Appends `s` as a JSON string.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The content type a custom rejection's body tells, when its handler kept the one
/// [`block_response`](super::block_response) wrote (`text/plain; charset=utf-8`) but replaced
/// the body: `application/json` for a JSON object or array, else `None` (the text stays
/// text).
pub(super) fn content_type_of_body(body: &str) -> Option<HeaderValue> {
    is_json(body).then(|| HeaderValue::from_static("application/json"))
}

/// Whether `text` is one JSON object or array (RFC 8259), with whitespace around it. Nested at
/// most [`MAX_DEPTH`] deep (deeper is not taken for JSON: it stays text).
fn is_json(text: &str) -> bool {
    let mut p = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    p.skip_ws();
    if !matches!(p.peek(), Some(b'{' | b'[')) {
        return false;
    }
    if !p.value(0) {
        return false;
    }
    p.skip_ws();
    p.at == p.bytes.len()
}

const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.container(depth, b'}', true),
            Some(b'[') => self.container(depth, b']', false),
            Some(b'"') => self.string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    /// An object (members `"key": value`) or an array, from its opening bracket.
    fn container(&mut self, depth: usize, close: u8, object: bool) -> bool {
        self.at += 1;
        self.skip_ws();
        if self.eat(close) {
            return true;
        }
        loop {
            if object {
                self.skip_ws();
                if !self.string() {
                    return false;
                }
                self.skip_ws();
                if !self.eat(b':') {
                    return false;
                }
            }
            if !self.value(depth + 1) {
                return false;
            }
            self.skip_ws();
            if self.eat(close) {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'"' => return true,
                b'\\' => match self.peek() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 1,
                    Some(b'u') => {
                        let hex = self.bytes.get(self.at + 1..self.at + 5);
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return false;
                        }
                        self.at += 5;
                    }
                    _ => return false,
                },
                0..0x20 => return false,
                _ => {}
            }
        }
        false
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.bytes.get(self.at..self.at + word.len()) == Some(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> bool {
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let start = p.at;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.at += 1;
            }
            p.at > start
        };
        if self.eat(b'0') {
            // No leading zeros.
        } else if !digits(self) {
            return false;
        }
        if self.eat(b'.') && !digits(self) {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if !digits(self) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_objects_and_arrays_are_json_and_text_is_not() {
        for json in [
            "{}",
            "[]",
            r#"{"error":"Flow"}"#,
            " {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\n\"]}\n",
            r#"[{"a":{}},[]]"#,
        ] {
            assert!(is_json(json), "{json}");
        }
        for text in [
            "",
            "Too Many Requests; retry after 1 s",
            "[warn] busy [retry]",
            "{not json}",
            r#"{"a":1"#,
            r#"{"a":1}}"#,
            "\"a string\"",
            "42",
            r#"{"a":01}"#,
            r#"{"a":"\x"}"#,
        ] {
            assert!(!is_json(text), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(1_000), "]".repeat(1_000));
        assert!(!is_json(&deep), "too deep: stays text, no stack overflow");
    }

    #[test]
    fn a_problem_escapes_its_strings() {
        let mut out = String::new();
        json_string("a\"b\\c\u{1}", &mut out);
        assert_eq!(out, r#""a\"b\\c\u0001""#);
    }
}
