//! The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-11), written as
//! HTTP structured-field Lists (RFC 9651) for [`SentinelLayer::rate_limit_headers`]:
//!
//! ```text
//! RateLimit-Policy: "flow-1";q=5;w=1, "hotspot-1";q=10;w=1;pk=:gJ1Fwn3zmbE=:
//! RateLimit: "flow-1";r=4;t=1
//! ```
//!
//! One policy item per rule that limits requests per window of whole seconds: a QPS flow rule
//! that rejects at once (not a throttling, warm-up, related-resource, origin or cluster rule),
//! and a hotspot QPS rule without a cluster part, whose item carries `pk`, a keyed hash of the
//! request's value of the rule's parameter (the client's address, for `client_ip`). The
//! `RateLimit` item is the policy with the least left (the first, on a tie).
//!
//! The counts are read right after the request's check, from the words the check itself read
//! and wrote (the flow rule's window; the hotspot value's arrival time): nothing is counted
//! for the headers.
//!
//! [`SentinelLayer::rate_limit_headers`]: super::SentinelLayer::rate_limit_headers

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::kinds::Chain;
use crate::node::ResourceNode;
use crate::param::Params;

/// `RateLimit-Policy`.
pub(super) static POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub(super) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// What a request's response says of its quotas: the two fields, and the names of the
/// policies with nothing left (for a problem's `violated-policies`).
#[derive(Debug)]
pub(super) struct Quotas {
    policy: HeaderValue,
    limit: HeaderValue,
    /// The policies with nothing left.
    pub(super) exhausted: Vec<String>,
}

/// A policy's name: its kind of rule and its place among that kind's rules (from 1).
#[derive(Clone, Copy)]
struct Name(&'static str, usize);

impl Name {
    fn write_to(self, out: &mut Field) {
        // Ours: letters, digits and `-`, a valid sf-string as they are.
        out.push(b"\"");
        out.push(self.0.as_bytes());
        out.push(b"-");
        out.push_u64(self.1 as u64);
        out.push(b"\"");
    }

    fn text(self) -> String {
        format!("{}-{}", self.0, self.1)
    }
}

/// One rule's quota for one request.
#[derive(Clone, Copy)]
struct Item {
    name: Name,
    quota: u64,
    window_secs: u64,
    /// The partition key (a hotspot value's), in base64: written once, used by both fields.
    key: Option<[u8; 12]>,
    remaining: u64,
    /// Seconds until more of the quota comes back.
    reset_secs: u64,
}

/// The quotas of a request of `node` with the parameters `hashes`, read at `now`; `None` when
/// no rule of the resource is a quota (then neither field is sent). `retry_after`: a
/// refusal's `Retry-After` in seconds, which no `t` exceeds (the two never disagree about when
/// to come back).
pub(super) fn read(
    node: &ResourceNode,
    hashes: &[u64],
    now: u64,
    retry_after: Option<u64>,
) -> Option<Box<Quotas>> {
    node.with_chain(|chain| write(&chain, hashes, now, retry_after))
}

/// Calls `f` with the item of each of the chain's quota rules, in order.
fn items(chain: &Chain, hashes: &[u64], now: u64, mut f: impl FnMut(Item)) {
    for (i, gate) in chain.flow.gates.iter().enumerate() {
        let Some(gate) = gate.as_qps() else {
            continue;
        };
        let (Some(window_secs), Some((limit, held, leaves))) =
            (whole_secs(gate.window_ms), gate.quota_at(now))
        else {
            continue;
        };
        f(Item {
            name: Name("flow", i + 1),
            quota: limit,
            window_secs,
            key: None,
            remaining: limit.saturating_sub(held),
            reset_secs: leaves.map_or(0, |at| secs_up(at.saturating_sub(now))),
        });
    }
    if chain.hotspot.is_empty() {
        return;
    }
    let params = Params::of(hashes);
    for (i, gate) in chain.hotspot.iter().enumerate() {
        let Some(q) = gate.quota_of(&params, now) else {
            continue;
        };
        f(Item {
            name: Name("hotspot", i + 1),
            quota: q.quota,
            window_secs: q.window_secs,
            key: Some(encoded_key(q.key)),
            remaining: q.remaining,
            reset_secs: secs_up(q.next_in),
        });
    }
}

/// A window in milliseconds as whole seconds, if it is some.
fn whole_secs(window_ms: u64) -> Option<u64> {
    (window_ms >= 1_000 && window_ms.is_multiple_of(1_000)).then_some(window_ms / 1_000)
}

/// Nanoseconds as whole seconds, rounded up (as `Retry-After` is).
fn secs_up(nanos: u64) -> u64 {
    nanos.div_ceil(1_000_000_000)
}

/// The fields of the chain's quota rules (`None`: it has none), written in one pass: the
/// policy item by item, the least left kept for `RateLimit`.
fn write(chain: &Chain, hashes: &[u64], now: u64, retry_after: Option<u64>) -> Option<Box<Quotas>> {
    let mut policy = Field::new();
    let mut least: Option<Item> = None;
    let mut exhausted = Vec::new();
    items(chain, hashes, now, |mut item| {
        if let Some(cap) = retry_after {
            item.reset_secs = item.reset_secs.min(cap);
        }
        if !policy.is_empty() {
            policy.push(b", ");
        }
        item.name.write_to(&mut policy);
        policy.push(b";q=");
        policy.push_u64(item.quota);
        policy.push(b";w=");
        policy.push_u64(item.window_secs);
        if let Some(key) = &item.key {
            policy.push_key(key);
        }
        if item.remaining == 0 {
            exhausted.push(item.name.text());
        }
        // The least left; the first on a tie.
        if least.is_none_or(|l| item.remaining < l.remaining) {
            least = Some(item);
        }
    });
    let least = least?;
    let mut limit = Field::new();
    least.name.write_to(&mut limit);
    limit.push(b";r=");
    limit.push_u64(least.remaining);
    limit.push(b";t=");
    limit.push_u64(least.reset_secs);
    if let Some(key) = &least.key {
        limit.push_key(key);
    }
    Some(Box::new(Quotas {
        policy: HeaderValue::from_bytes(policy.bytes()).ok()?,
        limit: HeaderValue::from_bytes(limit.bytes()).ok()?,
        exhausted,
    }))
}

/// A field's value being written: on the stack while it fits (the common field, one or two
/// items), then on the heap; copied once into its `HeaderValue`.
struct Field {
    stack: [u8; 128],
    len: usize,
    heap: Vec<u8>,
}

impl Field {
    fn new() -> Field {
        Field {
            stack: [0; 128],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0 && self.heap.is_empty()
    }

    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        if self.heap.is_empty() {
            if let Some(room) = self.stack.get_mut(self.len..self.len + bytes.len()) {
                room.copy_from_slice(bytes);
                self.len += bytes.len();
                return;
            }
            self.heap.extend_from_slice(&self.stack[..self.len]);
        }
        self.heap.extend_from_slice(bytes);
    }

    /// Writes `n` in decimal (an sf-integer). The common figures (a window of 1, what remains
    /// of a small quota, a second until reset) are one or two digits: written without the
    /// loop's divisions.
    #[inline]
    fn push_u64(&mut self, mut n: u64) {
        if n < 10 {
            return self.push(&[b'0' + n as u8]);
        }
        if n < 100 {
            return self.push(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
        }
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    /// Writes `;pk=` and a partition key in base64 (a Byte Sequence).
    fn push_key(&mut self, encoded: &[u8; 12]) {
        self.push(b";pk=:");
        self.push(encoded);
        self.push(b":");
    }

    fn bytes(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }
}

impl Quotas {
    /// Adds both fields to `headers`, unless it has a `RateLimit` field already (a custom
    /// rejection, or the inner service, that wrote its own).
    pub(super) fn add_to(self, headers: &mut HeaderMap) {
        if headers.contains_key(&RATELIMIT) {
            return;
        }
        headers.insert(POLICY.clone(), self.policy);
        headers.insert(RATELIMIT.clone(), self.limit);
    }
}

/// The partition key of the value `value_hash`, in base64.
fn encoded_key(value_hash: u64) -> [u8; 12] {
    let mut encoded = [0u8; 12];
    base64(&partition_key(value_hash), &mut encoded);
    encoded
}

/// A value's partition key: SipHash-1-3 of its hash under a key drawn at random once per
/// process, so that it is stable for one value while the process lives and tells nothing of
/// the value (an IPv4 address's unkeyed hash could be reversed by trying all 2^32).
fn partition_key(value_hash: u64) -> [u8; 8] {
    static KEYED: OnceLock<std::hash::RandomState> = OnceLock::new();
    let mut hasher = KEYED
        .get_or_init(std::hash::RandomState::new)
        .build_hasher();
    hasher.write_u64(value_hash);
    hasher.finish().to_be_bytes()
}

/// Writes 8 bytes in base64 (RFC 4648, with its one `=` of padding), as a structured-field
/// Byte Sequence holds them.
fn base64(bytes: &[u8; 8], out: &mut [u8; 12]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut at = 0;
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            out[at] = if i <= chunk.len() {
                ALPHABET[((n >> shift) & 63) as usize]
            } else {
                b'='
            };
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8; 8]) -> String {
        let mut out = [0; 12];
        base64(bytes, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn base64_matches_rfc_4648() {
        // "foobarba": "foobar" is RFC 4648's own vector; "ba" then pads as "fo" does ("Zm8=").
        assert_eq!(b64(b"foobarba"), "Zm9vYmFyYmE=");
        assert_eq!(b64(&[0; 8]), "AAAAAAAAAAA=");
        assert_eq!(b64(&[0xff; 8]), "//////////8=");
    }

    #[test]
    fn fields_spill_to_the_heap_and_write_integers() {
        let mut field = Field::new();
        assert!(field.is_empty());
        for n in [0, 7, 9, 10, 42, 99, 100, 12_345, u64::MAX] {
            field.push_u64(n);
            field.push(b",");
        }
        assert_eq!(
            field.bytes(),
            b"0,7,9,10,42,99,100,12345,18446744073709551615,"
        );
        let long = "x".repeat(300);
        field.push(long.as_bytes());
        assert_eq!(field.bytes().len(), 46 + 300);
        assert!(field.bytes().ends_with(long.as_bytes()));
    }

    #[test]
    fn partition_keys_are_stable_per_value_and_differ_between_values() {
        assert_eq!(partition_key(7), partition_key(7));
        assert_ne!(partition_key(7), partition_key(8));
        // Keyed: not the value's own bytes.
        assert_ne!(partition_key(7), 7u64.to_be_bytes());
    }

    #[test]
    fn whole_seconds_only() {
        assert_eq!(whole_secs(1_000), Some(1));
        assert_eq!(whole_secs(60_000), Some(60));
        assert_eq!(whole_secs(500), None);
        assert_eq!(whole_secs(1_500), None);
        assert_eq!(secs_up(1), 1);
        assert_eq!(secs_up(1_000_000_000), 1);
        assert_eq!(secs_up(1_000_000_001), 2);
        assert_eq!(secs_up(0), 0);
    }
}
