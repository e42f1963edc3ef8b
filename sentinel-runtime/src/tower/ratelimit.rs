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

use std::fmt::Write;
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

/// One rule's quota for one request.
struct Item {
    name: String,
    quota: u64,
    window_secs: u64,
    /// The partition key: a hotspot value's keyed hash.
    key: Option<u64>,
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
    let mut items = node.with_chain(|chain| items(&chain, hashes, now))?;
    if let Some(cap) = retry_after {
        for item in &mut items {
            item.reset_secs = item.reset_secs.min(cap);
        }
    }
    write(&items)
}

/// The items of the chain's quota rules.
fn items(chain: &Chain, hashes: &[u64], now: u64) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    for (i, gate) in chain.flow.gates.iter().enumerate() {
        let Some(gate) = gate.as_qps() else {
            continue;
        };
        let (Some(window_secs), Some((limit, held, leaves))) =
            (whole_secs(gate.window_ms), gate.quota_at(now))
        else {
            continue;
        };
        items.push(Item {
            name: format!("flow-{}", i + 1),
            quota: limit,
            window_secs,
            key: None,
            remaining: limit.saturating_sub(held),
            reset_secs: leaves.map_or(0, |at| secs_up(at.saturating_sub(now))),
        });
    }
    let params = Params::of(hashes);
    for (i, gate) in chain.hotspot.iter().enumerate() {
        let Some(q) = gate.quota_of(&params, now) else {
            continue;
        };
        items.push(Item {
            name: format!("hotspot-{}", i + 1),
            quota: q.quota,
            window_secs: q.window_secs,
            key: Some(q.key),
            remaining: q.remaining,
            reset_secs: secs_up(q.next_in),
        });
    }
    (!items.is_empty()).then_some(items)
}

/// A window in milliseconds as whole seconds, if it is some.
fn whole_secs(window_ms: u64) -> Option<u64> {
    (window_ms >= 1_000 && window_ms % 1_000 == 0).then_some(window_ms / 1_000)
}

/// Nanoseconds as whole seconds, rounded up (as `Retry-After` is).
fn secs_up(nanos: u64) -> u64 {
    nanos.div_ceil(1_000_000_000)
}

/// The fields of `items` (not empty).
fn write(items: &[Item]) -> Option<Box<Quotas>> {
    let mut policy = String::with_capacity(32 * items.len());
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            policy.push_str(", ");
        }
        // Names are ours: letters, digits and `-`, a valid sf-string as they are.
        let _ = write!(
            policy,
            "\"{}\";q={};w={}",
            item.name, item.quota, item.window_secs
        );
        if let Some(key) = item.key {
            policy.push_str(";pk=:");
            base64(&partition_key(key), &mut policy);
            policy.push(':');
        }
    }
    // The least left; the first on a tie.
    let least = items.iter().min_by_key(|item| item.remaining)?;
    let mut limit = String::with_capacity(32);
    let _ = write!(
        limit,
        "\"{}\";r={};t={}",
        least.name, least.remaining, least.reset_secs
    );
    if let Some(key) = least.key {
        limit.push_str(";pk=:");
        base64(&partition_key(key), &mut limit);
        limit.push(':');
    }
    Some(Box::new(Quotas {
        policy: HeaderValue::try_from(policy).ok()?,
        limit: HeaderValue::try_from(limit).ok()?,
        exhausted: items
            .iter()
            .filter(|item| item.remaining == 0)
            .map(|item| item.name.clone())
            .collect(),
    }))
}

impl Quotas {
    /// Adds both fields to `headers`, unless they are there already (a custom rejection that
    /// wrote its own).
    pub(super) fn add_to(self, headers: &mut HeaderMap) {
        if headers.contains_key(&POLICY) || headers.contains_key(&RATELIMIT) {
            return;
        }
        headers.insert(POLICY.clone(), self.policy);
        headers.insert(RATELIMIT.clone(), self.limit);
    }
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

/// Appends `bytes` in base64 (RFC 4648, with padding), as a structured-field Byte Sequence
/// holds them.
fn base64(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        let mut s = String::new();
        base64(bytes, &mut s);
        s
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foo"), "Zm9v");
        assert_eq!(b64(b"foob"), "Zm9vYg==");
        assert_eq!(b64(b"fooba"), "Zm9vYmE=");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
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
