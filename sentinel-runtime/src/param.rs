//! Parameter values as the hotspot rules see them: a 64-bit keyed hash.
//!
//! Values are hashed with one process-wide hasher whose key is drawn at random when the process
//! starts, so a client cannot choose values that collide, and a collision between two honest
//! values (probability about `n² / 2^65` for `n` values) is negligible. A rule's exception
//! matches a call's parameter when their hashes match: hash the same type (`&str` and `String`
//! hash alike; `42u64` and `"42"` do not).
//!
//! A started cluster (feature `redis`) gives the process the key its instances share (kept in
//! Redis, never sent by clients), so that one value has one hash in every instance; this works
//! only if the cluster starts before the first value is hashed.

use std::hash::{BuildHasher, Hash};
use std::sync::OnceLock;

use foldhash::quality::SeedableRandomState;
use foldhash::SharedSeed;

/// How many parameters an entry carries (more are ignored).
pub const MAX_PARAMS: usize = 8;

/// The hasher, and the shared key it was made from (none: a random key of this process).
static HASHER: OnceLock<(SeedableRandomState, Option<u64>)> = OnceLock::new();

#[inline]
fn hasher() -> &'static SeedableRandomState {
    &HASHER
        .get_or_init(|| (SeedableRandomState::random(), None))
        .0
}

/// The keyed 64-bit hash of a parameter value.
#[inline]
pub(crate) fn hash<T: Hash + ?Sized>(value: &T) -> u64 {
    hasher().hash_one(value)
}

/// Makes `key` the hash key if no value was hashed yet; whether the key in force is `key`.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) fn share_key(key: u64) -> bool {
    static SEED: OnceLock<SharedSeed> = OnceLock::new();
    let (_, in_force) = HASHER.get_or_init(|| {
        let seed = SEED.get_or_init(|| SharedSeed::from_u64(key.rotate_left(29) ^ 0x5851_f42d));
        (SeedableRandomState::with_seed(key, seed), Some(key))
    });
    *in_force == Some(key)
}

/// The shared key in force, if the cluster gave one.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) fn shared_key() -> Option<u64> {
    HASHER.get().and_then(|(_, key)| *key)
}

/// A fingerprint of this process's hash key (32 bits of a fixed text's hash): a hash written
/// with it can be read back only by a process whose key has the same fingerprint.
#[cfg(feature = "rule-files")]
pub(crate) fn key_check() -> u32 {
    (hash("sentinel hotspot hash key check") >> 32) as u32
}

/// The parameters of one entry, in call order: index 0 first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Params {
    hashes: [u64; MAX_PARAMS],
    len: usize,
    /// The caller's origin, if the entry names one (for authority rules).
    origin: Option<std::sync::Arc<str>>,
    /// The entry is inbound traffic (for system rules).
    inbound: bool,
    /// The entry is a guarded function's sync call, whose generated code marks the body's
    /// return ([`Entry::returned`](crate::Entry)): the exit then knows an unwinding body by
    /// that mark, without asking whether the thread is panicking.
    guarded: bool,
}

impl Params {
    /// No parameters.
    pub(crate) const NONE: Params = Params {
        hashes: [0; MAX_PARAMS],
        len: 0,
        origin: None,
        inbound: false,
        guarded: false,
    };

    /// No parameters, for a guarded function's sync call ([`set_guarded`](Self::set_guarded)).
    pub(crate) const GUARDED: Params = Params {
        guarded: true,
        ..Params::NONE
    };

    /// Marks the entry as inbound traffic.
    pub(crate) fn set_inbound(&mut self) {
        self.inbound = true;
    }

    /// Whether the entry is inbound traffic.
    #[inline(always)]
    pub(crate) fn is_inbound(&self) -> bool {
        self.inbound
    }

    /// Marks the entry as a guarded function's sync call (see the field).
    pub(crate) fn set_guarded(&mut self) {
        self.guarded = true;
    }

    /// Whether the entry is a guarded function's sync call.
    #[inline(always)]
    pub(crate) fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// Names the caller's origin.
    pub(crate) fn set_origin(&mut self, origin: &str) {
        self.origin = Some(origin.into());
    }

    /// The caller's origin, if the entry names one.
    #[inline]
    pub(crate) fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// Adds the next parameter (ignored beyond [`MAX_PARAMS`]).
    #[inline]
    pub(crate) fn push(&mut self, hash: u64) {
        if let Some(slot) = self.hashes.get_mut(self.len) {
            *slot = hash;
            self.len += 1;
        }
    }

    /// The parameter at `index`, if the entry has one.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<u64> {
        self.hashes[..self.len].get(index).copied()
    }

    /// The parameters as hashes, in order.
    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.hashes[..self.len]
    }

    /// Parameters from hashes already computed (beyond [`MAX_PARAMS`] ignored).
    pub(crate) fn from_hashes(hashes: &[u64]) -> Params {
        let mut params = Params::NONE;
        for &h in hashes {
            params.push(h);
        }
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_hash_alike_and_extra_params_are_ignored() {
        assert_eq!(hash("user-1"), hash(&String::from("user-1")));
        assert_ne!(hash("user-1"), hash("user-2"));
        let mut p = Params::NONE;
        for i in 0..10u64 {
            p.push(hash(&i));
        }
        assert_eq!(p.as_slice().len(), MAX_PARAMS);
        assert_eq!(p.get(3), Some(hash(&3u64)));
        assert_eq!(p.get(8), None);
        assert_eq!(Params::from_hashes(p.as_slice()), p);
    }
}
