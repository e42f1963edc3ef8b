//! [`ParamTable`]: the per-value state of one hotspot rule, in a fixed allocation. Values are
//! keyed by their 64-bit hash (any `u64`, 0 included); each value keeps either a GCRA rate
//! state ([`acquire_rate`](ParamTable::acquire_rate)) or a count of calls inside
//! ([`acquire_inflight`](ParamTable::acquire_inflight)).
//!
//! Nothing a client sends can grow it: [`ParamTable::new`] allocates every slot, and a new value
//! that finds no room takes the slot of an idle one (a rate value whose TAT is at or before now,
//! or a concurrency value with no call inside: forgetting either loses nothing), else, by the
//! table's [`Full`] policy, the slot of the live rate value with the least debt, or nothing (the
//! call is blocked). A value with calls inside and a [pinned](ParamTable::pin) value are never
//! forgotten. A live rate value evicted leaves its TAT in a fixed sketch of evicted debts
//! (`debt_sketch`), and a rate key inserted later starts from what the sketch answers for it
//! (at least what it owed), so no key comes back with an allowance it had spent; a key whose
//! answer blocks it is not inserted.
//!
//! # Layout
//!
//! 24 bytes a slot, all allocated by [`ParamTable::new`] (2 slots per value of capacity): a table
//! never allocates after it is built. Slots come in buckets of 8: the 8 key words on one cache
//! line, the 8 states on the next two (a bucket is one 192-byte block, so a lookup's lines almost
//! always share a page and a TLB entry: 192 does not divide 4 KiB, so a few buckets straddle two
//! pages), and buckets live in shards of equal size. A key is first scrambled by a bijective
//! mixer; the top bits of the mixed key pick the shard, two further functions of it pick two
//! buckets in that shard (two-choice hashing: a key lives in one of 16 slots), so a lookup reads
//! at most two lines of keys. Each slot has a key word and a state of two words, `word` and `base`:
//!
//! * the key word is 0 (empty, never used), `BUSY` (the slot is being rewritten), or a *tag*: the
//!   mixed key shifted left by the shard bits (which the shard implies), with three flags in the
//!   bits freed: occupied, concurrency (else rate), pinned (either kind). Tags of different keys
//!   differ, so a key is found by one comparison per slot and never mistaken for another.
//! * the slot's *value* is `word - base` (wrapping): a rate value's TAT in nanoseconds, or a
//!   concurrency value's calls inside (`word` counts acquisitions, `base` releases).
//!
//! # Protocol
//!
//! * **`word` only grows.** Every write to it adds: an admission adds `new TAT - TAT` (> 0), an
//!   acquisition 1, a rewrite's claim 1. So a CAS on `word` that succeeds proves that nobody
//!   wrote it since it was read, and a re-read that finds it unchanged proves the same (short of
//!   2^64 of growth between a reader's load and its CAS): there is no ABA, even when a slot
//!   passes from one key to another and back.
//! * **Reading** (no lock, no write but the CAS on the key's own `word`): find the tag in the two
//!   buckets; load `word`, then the key word (`BUSY`: wait for the rewrite; another tag: the key
//!   moved, look again), then `base`. Decide with a pure function of the value and commit by a
//!   CAS of `word` to `word + delta`; a decision that writes nothing (a block) is confirmed by
//!   re-reading `word`. Either way the snapshot is consistent: a rewrite marks the key word
//!   `BUSY` and changes `word` before it touches `base` or writes the new tag.
//! * **Rewriting** a slot (a new key taking it, a give-back) is done only by the holder of the
//!   shard's lock (a spin lock on one word; waiters call `AtomicWord::spin_wait`, which yields):
//!   store the key word `BUSY`; claim by a CAS of `word` to `word + 1` (it fails if a reader
//!   committed since `word` was read: restore the key word and decide again, since an idle value
//!   may be live now); store `base` to give the slot its new value; store the key word (the new
//!   tag, or the old one). A reader that loaded `word` before the claim fails its CAS or its
//!   re-read; one that loaded it after sees `BUSY`, or the new tag and with it the new `base`.
//! * **Inserting** a key: look it up again under the shard's lock, then take the first empty slot
//!   of the emptier bucket (so a bucket's used slots come first, and a scan stops at its first
//!   empty slot), else an idle slot, else apply the policy. The new key's first admission runs
//!   (as a reader) before the lock is released, so a flood of new keys cannot take its slot
//!   before it is used. A key whose fresh state would block anyway is not inserted at all.
//! * **Releasing** a concurrency place adds 1 to `base`: the slot cannot be rewritten while a call
//!   is inside, so the release lands on the counter the acquisition took.
//!
//! # Exactness
//!
//! A rate admission is a CAS from the TAT it was decided on, so no number of threads admits more
//! than the GCRA allows; a concurrency acquisition is a CAS from the count it saw, so no value
//! ever has more than `max` calls inside. What the table forgets is only ever idle state, except
//! for the [`Full::Evict`] policy's live evictions (counted in
//! [`live_evictions`](ParamTable::live_evictions)), whose TATs the sketch keeps (recorded and
//! read under the key's shard lock; a cell only grows, by a CAS loop, so records of other
//! shards' keys into the same cell lose nothing).
//!
//! A table serves one kind of state. Both kinds may share a table (the kind is part of the tag),
//! but a pinned key has one slot for both, and [`cancel_rate`](ParamTable::cancel_rate) must only
//! be used with rate keys.
//!
//! # Files
//!
//! This file holds the table's layout (slots, buckets, shards), its construction and counters;
//! `lookup` finds a key's slot, `admission` admits, inserts and gives back, `gcra` is the rate
//! arithmetic, `eviction` chooses and rewrites the slot a new or pinned key takes, and
//! `debt_sketch` keeps what evicted values owed. The loom models of the protocol are in
//! `model_tests::loom_param_table`.

mod admission;
mod debt_sketch;
mod eviction;
mod gcra;
mod lookup;
mod table;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use debt_sketch::DebtSketch;
pub(crate) use gcra::RateDecision;
pub(crate) use lookup::Located;
pub(crate) use table::{Full, Kind, ParamTable, Place};
