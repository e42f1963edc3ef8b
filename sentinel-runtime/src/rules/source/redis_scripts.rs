//! The Redis source's two scripts and its keys: the document, its version and its change
//! channel, all in one Redis Cluster slot.

use std::sync::OnceLock;

use redis::Script;

/// Reads the document unless its version is still the one known.
///
/// KEYS: the document, its version. ARGV: the version known (`''`: none), the most bytes read.
/// Returns `{0}`: no document; `{1, v}`: still version v; `{2, v, n}`: version v is n bytes,
/// over the limit (not read); `{3, v, text}`.
const READ: &str = r"
local n = redis.call('STRLEN', KEYS[1])
if n == 0 and redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local v = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if ARGV[1] ~= '' and v == tonumber(ARGV[1]) then return {1, v} end
if n > tonumber(ARGV[2]) then return {2, v, n} end
return {3, v, redis.call('GET', KEYS[1])}
";

/// Writes the document if its version is the one expected, advances the version and announces
/// it.
///
/// KEYS: the document, its version. ARGV: the text, the version expected (`''`: any; 0: no
/// document), the channel. Returns `{0, current}` (nothing written) or `{1, new}`. A new
/// version is above the last one and at least Redis's clock in milliseconds, so a store that
/// restarted empty never hands out a version an instance still has in force.
const PUT: &str = r"
local stored = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local current = stored
if redis.call('EXISTS', KEYS[1]) == 0 then current = 0 end
if ARGV[2] ~= '' and tonumber(ARGV[2]) ~= current then return {0, current} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local new = math.max(stored + 1, now)
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], string.format('%d', new))
redis.call('PUBLISH', ARGV[3], string.format('%d', new))
return {1, new}
";

pub(super) fn read() -> &'static Script {
    static SCRIPT: OnceLock<Script> = OnceLock::new();
    SCRIPT.get_or_init(|| Script::new(READ))
}

pub(super) fn put() -> &'static Script {
    static SCRIPT: OnceLock<Script> = OnceLock::new();
    SCRIPT.get_or_init(|| Script::new(PUT))
}

/// The keys of one document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SourceKeys {
    pub(super) document: String,
    pub(super) version: String,
    pub(super) channel: String,
}

impl SourceKeys {
    /// The keys of the document at `key`: the version and the channel share its Redis Cluster
    /// slot. A key with a hash tag (`{...}`, something inside) keeps it: the others append to
    /// it. A key without one is the tag of the others (`{key}:version`), which hash as the
    /// whole key does. `None` for a key with braces that make no hash tag (its slot is then
    /// the whole key's, which no other key can share through a tag).
    pub(super) fn of(key: &str) -> Option<SourceKeys> {
        if has_hash_tag(key) {
            return Some(SourceKeys {
                document: key.to_owned(),
                version: format!("{key}:version"),
                channel: format!("{key}:changed"),
            });
        }
        if key.contains(['{', '}']) {
            return None;
        }
        Some(SourceKeys {
            document: key.to_owned(),
            version: format!("{{{key}}}:version"),
            channel: format!("{{{key}}}:changed"),
        })
    }
}

/// Whether Redis Cluster hashes `key` by a tag: a `{` followed later by a `}` with something
/// between them.
fn has_hash_tag(key: &str) -> bool {
    key.find('{')
        .and_then(|open| key[open + 1..].find('}'))
        .is_some_and(|len| len > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_share_a_hash_tag() {
        let plain = SourceKeys::of("shop:rules").unwrap();
        assert_eq!(plain.version, "{shop:rules}:version");
        assert_eq!(plain.channel, "{shop:rules}:changed");
        let tagged = SourceKeys::of("rules:{shop}").unwrap();
        assert_eq!(tagged.version, "rules:{shop}:version");
        assert_eq!(SourceKeys::of("a{}b"), None);
        assert_eq!(SourceKeys::of("a}b"), None);
    }
}
