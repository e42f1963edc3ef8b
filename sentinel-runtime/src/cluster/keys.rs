//! The cluster's Redis keys: encoded so that no two (namespace, resource, value) triples share
//! a key, and hash-tagged so that a script touches one slot of a Redis Cluster while the values
//! of one hotspot rule spread over its masters.
//!
//! Every part a user names (namespace, resource) is escaped: `%`, `:`, `{` and `}` become
//! `%25`, `%3A`, `%7B` and `%7D`. The parts are then joined with `:`, which no escaped part
//! holds, so a key splits back into its parts in one way only: `shop` + `eu:checkout` gives
//! `shop:flow:eu%3Acheckout:…`, `shop:eu` + `checkout` gives `shop%3Aeu:flow:checkout:…`.
//!
//! No escaped part holds a brace either, so the only hash tag of a key is the one put at its
//! end: one of [`BUCKETS`] tags, chosen once so that their slots are spread evenly over the
//! 16 384 slots (tag `i` hashes into slots `i × 256 .. (i + 1) × 256`). A flow rule's bucket
//! comes from its resource and window. On a Redis Cluster a hotspot value's bucket comes from
//! its (shared) hash: a rule's values land on every master in proportion to the slots it
//! serves, whatever the resource holds. On one Redis there is nothing to spread over, and a
//! hotspot rule's values share the rule's bucket (from its resource, parameter and window):
//! new values are leased many to a script call, whose keys must share a slot for a proxy that
//! shards by key as for a Redis Cluster. Each bucket has an epoch key in its own slot (see
//! [`super::scripts`]).

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::slot::cluster::shared::RuleLeases;

/// How many hash tags (and epoch keys) the keys use.
pub(crate) const BUCKETS: usize = 64;

/// The slots of a Redis Cluster.
const SLOTS: u16 = 16_384;

/// `part` with `%`, `:`, `{` and `}` escaped.
pub(crate) fn escape(part: &str) -> Cow<'_, str> {
    if !part.contains(['%', ':', '{', '}']) {
        return Cow::Borrowed(part);
    }
    let mut out = String::with_capacity(part.len() + 8);
    for c in part.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// CRC16-XMODEM, as Redis Cluster hashes keys.
pub(crate) fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The Redis Cluster slot of a hash tag's content.
pub(crate) fn slot_of(tag: &str) -> u16 {
    crc16(tag.as_bytes()) % SLOTS
}

/// The tags: tag `i` is the first `t<n>` whose slot lies in the `i`-th of [`BUCKETS`] equal
/// ranges of slots.
fn tags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        let width = SLOTS / BUCKETS as u16;
        let mut tags = vec![String::new(); BUCKETS];
        let mut found = 0;
        let mut n: u64 = 0;
        while found < BUCKETS {
            let tag = format!("t{n}");
            let i = usize::from(slot_of(&tag) / width);
            if tags[i].is_empty() {
                tags[i] = tag;
                found += 1;
            }
            n += 1;
        }
        tags
    })
}

/// The bucket of a 64-bit hash (its high bits: the hashes here are well mixed).
fn bucket_of(hash: u64) -> usize {
    (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % BUCKETS
}

/// FNV-1a of `parts`, each followed by a 0 byte: the same in every process.
fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The keys of one namespace.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// The namespace, escaped.
    ns: String,
    /// Whether a hotspot rule's values spread over the buckets (a Redis Cluster), or share
    /// the rule's (one Redis).
    spread_values: bool,
}

impl Keys {
    /// The keys of `namespace`; `spread_values` on a Redis Cluster.
    pub(crate) fn new(namespace: &str, spread_values: bool) -> Keys {
        Keys {
            ns: escape(namespace).into_owned(),
            spread_values,
        }
    }

    /// The sorted set of live instances.
    pub(crate) fn instances(&self) -> String {
        format!("{}:instances", self.ns)
    }

    /// The hash of the instances' fleet summaries.
    pub(crate) fn fleet(&self) -> String {
        format!("{}:fleet", self.ns)
    }

    /// The hash key of parameter values the instances share.
    pub(crate) fn value_key(&self) -> String {
        format!("{}:value-key", self.ns)
    }

    /// The epoch key of `bucket` (no TTL: its loss means the bucket's keys were lost).
    pub(crate) fn epoch(&self, bucket: usize) -> String {
        format!("{}:epoch:{{{}}}", self.ns, tags()[bucket % BUCKETS])
    }

    /// The GCRA key of `table`'s `value` (a hotspot value's hash; ignored for a flow rule),
    /// and its bucket.
    pub(crate) fn lease(&self, table: &RuleLeases, value: u64) -> (String, usize) {
        let resource = escape(&table.resource);
        match table.param_index {
            None => {
                let window = table.window_ms.to_string();
                let bucket = bucket_of(stable_hash(&[
                    self.ns.as_bytes(),
                    resource.as_bytes(),
                    window.as_bytes(),
                ]));
                let key = format!(
                    "{}:flow:{resource}:w{window}:{{{}}}",
                    self.ns,
                    tags()[bucket]
                );
                (key, bucket)
            }
            Some(index) => {
                let bucket = if self.spread_values {
                    bucket_of(value)
                } else {
                    bucket_of(stable_hash(&[
                        self.ns.as_bytes(),
                        resource.as_bytes(),
                        format!("p{index}").as_bytes(),
                        table.window_ms.to_string().as_bytes(),
                    ]))
                };
                let key = format!(
                    "{}:hot:{resource}:p{index}:w{}:{value:016x}:{{{}}}",
                    self.ns,
                    table.window_ms,
                    tags()[bucket]
                );
                (key, bucket)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash tag Redis Cluster reads from `key`: between the first `{` and the next `}`.
    fn tag_of(key: &str) -> &str {
        if let Some(open) = key.find('{')
            && let Some(len) = key[open + 1..].find('}')
            && len > 0
        {
            return &key[open + 1..open + 1 + len];
        }
        key
    }

    #[test]
    fn crc16_matches_redis_cluster() {
        // From the Redis Cluster specification: "123456789" hashes to 0x31C3.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(slot_of("foo"), 12182);
    }

    #[test]
    fn escaping_is_injective_on_the_parts_that_collided() {
        let a = format!("{}:{}", escape("shop"), escape("eu:checkout"));
        let b = format!("{}:{}", escape("shop:eu"), escape("checkout"));
        assert_ne!(a, b);
        assert_eq!(escape("GET:/users/{id}"), "GET%3A/users/%7Bid%7D");
        assert_eq!(escape("100%"), "100%25");
    }

    #[test]
    fn the_tags_cover_the_slots_evenly() {
        let width = SLOTS / BUCKETS as u16;
        for (i, tag) in tags().iter().enumerate() {
            assert_eq!(usize::from(slot_of(tag) / width), i, "{tag}");
        }
        let keys = Keys::new("n{s}", true);
        for b in 0..BUCKETS {
            let key = keys.epoch(b);
            assert_eq!(tag_of(&key), tags()[b], "{key}");
        }
    }

    #[test]
    fn colliding_names_get_two_keys_and_a_routes_values_spread_over_the_slots() {
        use crate::rules::ClusterThreshold::Global;
        use crate::slot::cluster::shared::leases;
        let a = leases("eu:checkout", None, Global, 10.0, 0, 1_000, 1);
        let b = leases("checkout", None, Global, 10.0, 0, 1_000, 1);
        let (ka, kb) = (
            Keys::new("shop", true).lease(&a, 0).0,
            Keys::new("shop:eu", true).lease(&b, 0).0,
        );
        assert_ne!(ka, kb);
        let route = leases("GET:/users/{id}", Some(0), Global, 10.0, 0, 1_000, 16);
        let keys = Keys::new("n", true);
        // Three masters with equal slot ranges: each gets about a third of the values.
        let mut per_master = [0usize; 3];
        for v in 0..3_000u64 {
            let (key, _) = keys.lease(&route, crate::param::hash(&v));
            let slot = usize::from(slot_of(tag_of(&key)));
            per_master[(slot * 3 / usize::from(SLOTS)).min(2)] += 1;
        }
        assert!(per_master.iter().all(|&n| n >= 800), "{per_master:?}");
    }

    #[test]
    fn on_one_redis_a_hotspot_rules_values_share_its_tag_and_two_rules_may_not() {
        use crate::rules::ClusterThreshold::Global;
        use crate::slot::cluster::shared::leases;
        let keys = Keys::new("n", false);
        let rule =
            |resource: &str, index| leases(resource, Some(index), Global, 10.0, 0, 1_000, 16);
        let route = rule("GET:/users/{id}", 0);
        let (first, bucket) = keys.lease(&route, crate::param::hash(&0u64));
        for v in 1..100u64 {
            let (key, b) = keys.lease(&route, crate::param::hash(&v));
            assert_eq!((tag_of(&key), b), (tag_of(&first), bucket), "{key}");
            assert_ne!(key, first);
        }
        // Rules of other resources (or parameters) spread over the tags.
        let tags: std::collections::BTreeSet<String> = (0..64)
            .flat_map(|i| {
                let resource = format!("r{i}");
                [0, 1].map(|index| {
                    let (key, _) = keys.lease(&rule(&resource, index), 7);
                    tag_of(&key).to_owned()
                })
            })
            .collect();
        assert!(tags.len() > 32, "{tags:?}");
    }
}
