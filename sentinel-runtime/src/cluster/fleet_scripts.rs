//! The fleet's list in the store, and the two Lua scripts that keep it: every instance
//! *publishes* its summary once a second at a cost that does not grow with the fleet, and an
//! instance whose view is wanted *reads* a bounded part of the list.
//!
//! # The keys (one hash tag, so one slot of a Redis Cluster)
//!
//! - `<ns>:fleet:{<ns>:fleet}:index`: a sorted set of instance ids, each scored by the Redis
//!   `TIME` (ms) of its last summary;
//! - `<ns>:fleet:{<ns>:fleet}:s:<id>`: one string per instance, `"<ms>|<summary>"`, with a TTL
//!   of [`LIVE_MS`](super::fleet::LIVE_MS) plus [`AHEAD_MS`]: the store itself forgets a
//!   summary nobody refreshes.
//!
//! # What each side costs
//!
//! *Publishing* writes the instance's string and its score (O(log N)), then removes at most
//! [`SWEEP`] index entries past their time and [`SWEEP`] stamped in the future (with their
//! strings): each entry is removed once, by whichever publish meets it first, so a publish costs
//! O(log N) amortized whatever the index holds (a killed instance, a skewed writer, 100 000
//! planted entries). Nothing is read back.
//!
//! *Reading* counts the live entries (`ZCOUNT`, O(log N)) and looks at the [`MAX_READ`](super::fleet::MAX_READ)
//! freshest only: a summary longer than [`MAX_SUMMARY_BYTES`](super::fleet::MAX_SUMMARY_BYTES) is skipped without being read
//! (`STRLEN`), and counted; a missing one (expired) or one not in the format leaves the index;
//! at most [`MAX_READ_BYTES`](super::fleet::MAX_READ_BYTES) are read in all. Only an instance whose view was asked for
//! recently reads (see [`fleet`](super::fleet::fleet)), so a fleet whose pages are closed reads
//! nothing at all.

use redis::Script;

use super::fleet::{MAX_READ, MAX_READ_BYTES, MAX_SUMMARY_BYTES};

/// How far in the future (by the store's clock) an entry's stamp may be before it is taken
/// for a bad one and removed. Stamps are the store's own time, so only a clock stepped back
/// (or another writer) puts one there.
pub(crate) const AHEAD_MS: u64 = 250;
/// The index entries past their time, and the ones from the future, that one publish removes
/// at most (each).
pub(crate) const SWEEP: usize = 100;

/// Publishes a summary: `KEYS[1]` the index; `ARGV[1]` the instance's id, `ARGV[2]` its
/// summary, `ARGV[3]` how long an entry is live (ms), `ARGV[4]` how far ahead a stamp may be
/// (ms), `ARGV[5]` how many stale entries to remove at most (of each kind), `ARGV[6]` the
/// prefix of the summaries' keys. Returns `{entries removed}`.
pub(crate) const PUBLISH: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live, ahead, sweep, prefix = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
redis.call('SET', prefix .. ARGV[1], now .. '|' .. ARGV[2], 'PX', live + ahead)
redis.call('ZADD', KEYS[1], now, ARGV[1])
local removed = 0
local function drop(ids)
  if #ids == 0 then return end
  redis.call('ZREM', KEYS[1], unpack(ids))
  local keys = {}
  for i, id in ipairs(ids) do keys[i] = prefix .. id end
  redis.call('DEL', unpack(keys))
  removed = removed + #ids
end
drop(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - live), 'LIMIT', 0, sweep))
drop(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now + ahead), '+inf', 'LIMIT', 0, sweep))
redis.call('PEXPIRE', KEYS[1], (live + ahead) * 2)
return {removed}
";

/// Reads the fleet: `KEYS[1]` the index; `ARGV[1]` how long an entry is live (ms), `ARGV[2]`
/// how far ahead a stamp may be (ms), `ARGV[3]` the entries to look at, `ARGV[4]` the longest
/// summary to read, `ARGV[5]` the most bytes to read in all, `ARGV[6]` the summaries' prefix,
/// `ARGV[7]` the reader's own id (not read: it knows its own). Returns `{live entries, entries
/// skipped as unreadable, 1 if the byte budget ran out (else 0), then (id, age ms, summary)
/// for each entry read}`, freshest first.
pub(crate) const READ: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live, ahead, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local longest, budget, prefix, own = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
local lo, hi = now - live, now + ahead
local count = redis.call('ZCOUNT', KEYS[1], lo, hi)
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], hi, lo, 'LIMIT', 0, cap)
local out = {count, 0, 0}
local gone = {}
local unreadable, spent = 0, 0
for _, id in ipairs(ids) do
  if id ~= own then
    local key = prefix .. id
    local len = redis.pcall('STRLEN', key)
    if type(len) ~= 'number' then
      unreadable = unreadable + 1
      gone[#gone + 1] = id
    elseif len == 0 then
      gone[#gone + 1] = id
    elseif len > longest then
      unreadable = unreadable + 1
    elseif spent + len > budget then
      out[3] = 1
      break
    else
      local v = redis.call('GET', key)
      local stamp = string.match(v, '^(%d+)|')
      local at = tonumber(stamp)
      if at == nil or at > hi then
        unreadable = unreadable + 1
        gone[#gone + 1] = id
      elseif at >= lo then
        spent = spent + len
        out[#out + 1] = id
        out[#out + 1] = tostring(math.max(now - at, 0))
        out[#out + 1] = string.sub(v, string.len(stamp) + 2)
      end
    end
  end
end
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  local keys = {}
  for i, id in ipairs(gone) do keys[i] = prefix .. id end
  redis.call('DEL', unpack(keys))
end
out[2] = unreadable
return out
";

/// The fleet's keys in one namespace (from [`Keys::fleet`](super::keys::Keys::fleet), the
/// namespace's escaped fleet prefix).
#[derive(Clone, Debug)]
pub(crate) struct FleetKeys {
    /// The sorted set of ids by their last stamp.
    pub(crate) index: String,
    /// What each summary's key starts with (the instance's id follows).
    pub(crate) prefix: String,
}

impl FleetKeys {
    /// The keys under `base` (`<ns>:fleet`, escaped: no braces in it).
    pub(crate) fn new(base: &str) -> FleetKeys {
        FleetKeys {
            index: format!("{base}:{{{base}}}:index"),
            prefix: format!("{base}:{{{base}}}:s:"),
        }
    }
}

/// The fleet's two scripts, hashed once.
pub(crate) struct FleetScripts {
    pub(crate) publish: Script,
    pub(crate) read: Script,
}

impl FleetScripts {
    /// The scripts of this process (hashed on first use).
    pub(crate) fn get() -> &'static FleetScripts {
        static SCRIPTS: std::sync::OnceLock<FleetScripts> = std::sync::OnceLock::new();
        SCRIPTS.get_or_init(|| FleetScripts {
            publish: Script::new(PUBLISH),
            read: Script::new(READ),
        })
    }

    /// The call that publishes `summary` as instance `id`'s.
    pub(crate) fn publish_call<'a>(
        &'a self,
        keys: &FleetKeys,
        id: &str,
        summary: &str,
        live_ms: u64,
    ) -> redis::ScriptInvocation<'a> {
        let mut call = self.publish.prepare_invoke();
        call.key(&keys.index)
            .arg(id)
            .arg(summary)
            .arg(live_ms)
            .arg(AHEAD_MS)
            .arg(SWEEP)
            .arg(&keys.prefix);
        call
    }

    /// The call that reads the fleet for instance `own`.
    pub(crate) fn read_call<'a>(
        &'a self,
        keys: &FleetKeys,
        own: &str,
        live_ms: u64,
    ) -> redis::ScriptInvocation<'a> {
        let mut call = self.read.prepare_invoke();
        call.key(&keys.index)
            .arg(live_ms)
            .arg(AHEAD_MS)
            .arg(MAX_READ)
            .arg(MAX_SUMMARY_BYTES)
            .arg(MAX_READ_BYTES)
            .arg(&keys.prefix)
            .arg(own);
        call
    }
}

/// What one read of the fleet returned: the live count, the entries skipped, whether the byte
/// budget ran out, and each entry read as (id, age in ms, summary).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Read {
    pub(crate) count: usize,
    pub(crate) unreadable: usize,
    pub(crate) over_budget: bool,
    pub(crate) entries: Vec<(String, u64, String)>,
}

impl Read {
    /// The script's answer, taken apart; `None` if it is not the script's shape.
    pub(crate) fn parse(raw: Vec<redis::Value>) -> Option<Read> {
        use redis::FromRedisValue;
        let mut values = raw.into_iter();
        let mut number = || i64::from_redis_value(values.next()?).ok();
        let (count, unreadable, over) = (number()?, number()?, number()?);
        let mut read = Read {
            count: usize::try_from(count).ok()?,
            unreadable: usize::try_from(unreadable).ok()?,
            over_budget: over != 0,
            entries: Vec::new(),
        };
        while let Some(id) = values.next() {
            let (Some(age), Some(summary)) = (values.next(), values.next()) else {
                read.unreadable += 1;
                break;
            };
            // An id or summary that is not UTF-8 is not in the format.
            let parts = (
                String::from_redis_value(id),
                String::from_redis_value(age)
                    .ok()
                    .and_then(|a| a.parse::<u64>().ok()),
                String::from_redis_value(summary),
            );
            match parts {
                (Ok(id), Some(age), Ok(summary)) => read.entries.push((id, age, summary)),
                _ => read.unreadable += 1,
            }
        }
        Some(read)
    }
}
