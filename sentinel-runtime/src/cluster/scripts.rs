//! The Lua scripts the store runs: the leased GCRA (with its check for lost state), the epoch
//! keys and the instances' heartbeat. They read Redis `TIME` as their only clock, and each
//! touches keys of one slot of a Redis Cluster (a lease key and its bucket's epoch key share
//! their hash tag).

use redis::Script;

/// Grants up to `ARGV[3]` tokens of the GCRA whose state is at `KEYS[1]`, and checks that the
/// store still holds what it held: `KEYS[2]` is the epoch key of the lease key's slot.
///
/// - `ARGV[1]`, `ARGV[2]`: emission interval and tolerance (the burst), in µs;
/// - `ARGV[3]`: the tokens wanted;
/// - `ARGV[4]`: the epoch this instance last saw there (`0`: none);
/// - `ARGV[5]`: until when (µs of Redis `TIME`) this instance knows the key must exist (it
///   wrote it and its TTL runs until then; `0`: no such knowledge);
/// - `ARGV[6]`: tokens to charge without granting them (calls admitted locally meanwhile): the
///   arrival time moves on as if they had been granted now, past a spent bucket into debt (no
///   tokens until it is paid) of at most one more window;
/// - `ARGV[7]`: the rule's threshold as this instance has it (compared with the others').
///
/// The state is `"<arrival time µs> <threshold>"`. The epoch key holds the Redis `TIME` (µs)
/// at which it was written, and has no TTL. When the epoch is missing (flushed, evicted, an
/// empty restart or a failover) it is written anew; a missing state key then counts as spent
/// from the epoch's start (`tat = epoch + tolerance`): tokens come back at the rule's rate,
/// never as a fresh burst. A state key that this instance knows must exist but is missing
/// (evicted) counts as spent now. Either is reported as lost.
///
/// Returns `{granted, µs until the next token, lost (0/1), epoch, µs the key lives until,
/// thresholds disagree (0/1)}`. The key expires a second after its arrival time; the µs it
/// lives until are told 10 ms short of that (the key's expiry is set in ms of the time the
/// script began, which may lie a little before `TIME`), so that a key that expired because no
/// one called is never taken for one the store evicted.
pub(crate) const LEASE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local expected = ARGV[4]
local alive_until = tonumber(ARGV[5]) or 0
local charge = tonumber(ARGV[6]) or 0
local lost = 0
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  epoch = string.format('%d', now)
  redis.call('SET', KEYS[2], epoch)
  if expected ~= '0' then lost = 1 end
elseif expected ~= '0' and epoch ~= expected then
  lost = 1
end
local since = tonumber(epoch) or now
local raw = redis.call('GET', KEYS[1])
local tat
local disagree = 0
local write = false
if raw then
  local a, b = string.match(raw, '^(%S+) (%S+)$')
  if a then
    tat = tonumber(a) or now
    if b ~= ARGV[7] then disagree = 1 end
  else
    tat = tonumber(raw) or now
  end
else
  write = true
  if alive_until > now then
    lost = 1
    tat = now + tolerance
  else
    tat = since + tolerance
  end
end
if tat < now then tat = now end
if charge > 0 then
  local ceiling = now + 2 * tolerance
  tat = tat + charge * interval
  if tat > ceiling then tat = ceiling end
  write = true
end
local n = math.floor((now + tolerance - tat) / interval)
if n > want then n = want end
if n < 0 then n = 0 end
if n > 0 then
  tat = tat + n * interval
  write = true
end
local ttl = math.floor((tat - now) / 1000) + 1000
local until_us = 0
if write then
  redis.call('SET', KEYS[1], string.format('%.3f %s', tat, ARGV[7]), 'PX', ttl)
  until_us = now + ttl * 1000 - 10000
end
local wait = tat + interval - tolerance - now
if wait < 0 then wait = 0 end
return {n, math.floor(wait), lost, epoch, until_us, disagree}
";

/// Writes the epoch key `KEYS[1]` unless it is there, dated `ARGV[1]` µs before Redis `TIME`
/// (an instance that never saw the bucket dates it back an hour: a first start grants the
/// burst of idle keys; one that saw it dates it now: lost keys count as spent); returns the
/// epoch there. Run for every bucket when an instance connects.
pub(crate) const EPOCH: &str = r"
local e = redis.call('GET', KEYS[1])
if e then return e end
local t = redis.call('TIME')
e = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]) - tonumber(ARGV[1]))
redis.call('SET', KEYS[1], e)
return e
";

/// Records instance `ARGV[1]` as live in the sorted set `KEYS[1]` (scored by Redis `TIME` in
/// ms), forgets instances silent for `ARGV[2]` ms (the grace period), and returns
/// `{instances heard from in the last ARGV[3] ms, in the last ARGV[4] ms, in the grace period}`:
/// the instances live, and those that heard from recently (the others may be cut off); and 1
/// if the set was missing (the store lost it), else 0.
pub(crate) const HEARTBEAT: &str = r"
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[2])
local fresh = 1 - redis.call('EXISTS', KEYS[1])
redis.call('ZADD', KEYS[1], ms, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - grace)
redis.call('PEXPIRE', KEYS[1], grace * 4)
local live = redis.call('ZCOUNT', KEYS[1], ms - tonumber(ARGV[3]), '+inf')
local recent = redis.call('ZCOUNT', KEYS[1], ms - tonumber(ARGV[4]), '+inf')
return {live, recent, redis.call('ZCARD', KEYS[1]), fresh}
";

/// The hash key of parameter values the instances share, at `KEYS[1]` as `"<key> <since>"`
/// (since: µs of Redis `TIME` when it was first used). `ARGV[1]` is this instance's key and
/// `ARGV[2]` since when it uses it (`0`: it uses none yet). The store's key stays unless it is
/// missing, or this instance's key has been in use for longer (it replaces a key written by an
/// instance that started after the store lost the older one). Returns the key there, with its
/// since.
pub(crate) const VALUE_KEY: &str = r"
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
local since = ARGV[2]
if since == '0' then since = now end
local mine = ARGV[1] .. ' ' .. since
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], mine)
  return mine
end
local k, s = string.match(cur, '^(%S+) (%S+)$')
if not k then
  k = cur
  s = '0'
end
if k ~= ARGV[1] and ARGV[2] ~= '0' and tonumber(since) < tonumber(s) then
  redis.call('SET', KEYS[1], mine)
  return mine
end
return k .. ' ' .. s
";

/// [`LEASE`] for several keys in one call (new hotspot values leased together): `KEYS` holds
/// each lease key followed by its bucket's epoch key, all of one hash tag (a script's keys
/// share a slot); `ARGV[1]`, `ARGV[2]` the emission interval and tolerance, `ARGV[3]` the
/// threshold, then for each lease key its tokens wanted, the epoch last seen in its bucket,
/// until when it must exist and its charge (four arguments each). Returns the answers of
/// [`LEASE`] one after the other, six values each: the same as one [`LEASE`] call a key, in
/// turn.
pub(crate) fn lease_batch() -> String {
    let one = LEASE
        .replace("KEYS[1]", "k1")
        .replace("KEYS[2]", "k2")
        .replace("ARGV[", "a[");
    format!(
        "local function one(k1, k2, a)\n{one}\nend\n\
         local out = {{}}\n\
         for i = 1, #KEYS, 2 do\n\
         \x20 local b = 4 + (i - 1) * 2\n\
         \x20 local r = one(KEYS[i], KEYS[i + 1], {{ARGV[1], ARGV[2], ARGV[b], ARGV[b + 1], \
         ARGV[b + 2], ARGV[b + 3], ARGV[3]}})\n\
         \x20 for j = 1, 6 do out[#out + 1] = r[j] end\n\
         end\n\
         return out\n"
    )
}

/// The scripts, hashed once.
pub(crate) struct Scripts {
    pub(crate) lease: Script,
    pub(crate) lease_batch: Script,
    pub(crate) heartbeat: Script,
    pub(crate) value_key: Script,
    pub(crate) epoch: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            lease: Script::new(LEASE),
            lease_batch: Script::new(&lease_batch()),
            heartbeat: Script::new(HEARTBEAT),
            value_key: Script::new(VALUE_KEY),
            epoch: Script::new(EPOCH),
        }
    }
}
