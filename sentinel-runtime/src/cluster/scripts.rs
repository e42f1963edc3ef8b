//! The Lua scripts the store runs: the leased GCRA and the instances' heartbeat. Both read
//! Redis `TIME` as their only clock, and each touches one key (so one slot of a Redis Cluster).

use redis::Script;

/// Grants up to `ARGV[3]` tokens of the GCRA whose arrival time (microseconds of Redis `TIME`)
/// is at `KEYS[1]`: emission interval `ARGV[1]` µs, tolerance `ARGV[2]` µs (the burst). Returns
/// `{granted, µs until the next token}`. The key expires when its arrival time is a second past.
pub(crate) const LEASE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat < now then tat = now end
local n = math.floor((now + tolerance - tat) / interval)
if n > want then n = want end
if n < 0 then n = 0 end
if n > 0 then
  tat = tat + n * interval
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX',
    math.floor((tat - now) / 1000) + 1000)
end
local wait = tat + interval - tolerance - now
if wait < 0 then wait = 0 end
return {n, math.floor(wait)}
";

/// Records instance `ARGV[1]` as live in the sorted set `KEYS[1]` (scored by Redis `TIME` in
/// ms), forgets instances silent for `ARGV[2]` ms, and returns how many are live.
pub(crate) const HEARTBEAT: &str = r"
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], ms, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 4)
return redis.call('ZCARD', KEYS[1])
";

/// Stores `ARGV[1]` at `KEYS[1]` unless a value is there, and returns the value there: the hash
/// key of parameter values the instances share.
pub(crate) const VALUE_KEY: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
";

/// The scripts, hashed once.
pub(crate) struct Scripts {
    pub(crate) lease: Script,
    pub(crate) heartbeat: Script,
    pub(crate) value_key: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            lease: Script::new(LEASE),
            heartbeat: Script::new(HEARTBEAT),
            value_key: Script::new(VALUE_KEY),
        }
    }
}
