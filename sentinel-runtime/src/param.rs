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

use std::borrow::Cow;
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

/// The parameters of one entry, in call order: index 0 first, as the checks read them. Borrowed
/// (a guarded function's hashes where it computed them, an [`EntryBuilder`]'s
/// [`ParamBuf`]): made without copying or clearing anything, and dropped without a test.
///
/// [`EntryBuilder`]: crate::EntryBuilder
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Params<'a> {
    /// At most [`MAX_PARAMS`].
    hashes: &'a [u64],
    /// The caller's origin (for authority rules) and the endpoint the call goes to (for outlier
    /// rules), if the entry names either: one word when it names neither.
    names: Option<&'a CallNames<'a>>,
    /// The entry is inbound traffic (for system rules).
    inbound: bool,
    /// The entry is a guarded function's sync call, whose generated code marks the body's
    /// return ([`Entry::returned`](crate::Entry)): the exit then knows an unwinding body by
    /// that mark, without asking whether the thread is panicking.
    guarded: bool,
}

impl<'a> Params<'a> {
    /// No parameters.
    pub(crate) const NONE: Params<'static> = Params {
        hashes: &[],
        names: None,
        inbound: false,
        guarded: false,
    };

    /// No parameters, for a guarded function's sync call (see the field `guarded`).
    pub(crate) const GUARDED: Params<'static> = Params {
        guarded: true,
        ..Params::NONE
    };

    /// No parameters, inbound (the tower layer's plain request).
    #[cfg(feature = "tower")]
    pub(crate) const INBOUND: Params<'static> = Params {
        inbound: true,
        ..Params::NONE
    };

    /// Parameters from hashes already computed (beyond [`MAX_PARAMS`] ignored).
    #[inline]
    pub(crate) fn of(hashes: &'a [u64]) -> Params<'a> {
        Params {
            hashes: hashes.get(..MAX_PARAMS).unwrap_or(hashes),
            ..Params::NONE
        }
    }

    /// These parameters, of inbound traffic.
    #[inline]
    pub(crate) fn inbound(self) -> Params<'a> {
        Params {
            inbound: true,
            ..self
        }
    }

    /// These parameters, of a guarded function's sync call (see the field `guarded`).
    #[inline]
    pub(crate) fn guarded(self) -> Params<'a> {
        Params {
            guarded: true,
            ..self
        }
    }

    /// These parameters, with what the call names (the tower layer's origin; an
    /// [`EntryBuilder`](crate::EntryBuilder)'s names are in its [`ParamBuf`]).
    #[cfg(any(feature = "tower", feature = "reqwest"))]
    #[inline]
    pub(crate) fn with_names(self, names: &'a CallNames<'a>) -> Params<'a> {
        Params {
            names: Some(names),
            ..self
        }
    }

    /// Whether the entry is inbound traffic.
    #[inline(always)]
    pub(crate) fn is_inbound(&self) -> bool {
        self.inbound
    }

    /// Whether the entry is a guarded function's sync call.
    #[inline(always)]
    pub(crate) fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// The caller's origin, if the entry names one.
    #[inline]
    pub(crate) fn origin(&self) -> Option<&'a str> {
        self.names?.origin.as_deref()
    }

    /// The endpoint the call goes to, if the entry names one: its host and port, without user
    /// info (an HTTP authority's `user:secret@inv-b.test:8080` is `inv-b.test:8080`; stripped
    /// here, when an outlier rule reads it, so that a call nothing reads it for pays nothing).
    #[inline]
    pub(crate) fn endpoint(&self) -> Option<&'a str> {
        let endpoint = self.names?.endpoint.as_deref()?;
        endpoint.rsplit('@').next()
    }

    /// The parameter at `index`, if the entry has one.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<u64> {
        self.hashes.get(index).copied()
    }

    /// The parameters as hashes, in order.
    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &'a [u64] {
        self.hashes
    }
}

/// An entry's parameters given one by one ([`EntryBuilder`](crate::EntryBuilder)), owned;
/// [`view`](Self::view) is what the checks read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ParamBuf {
    hashes: [u64; MAX_PARAMS],
    /// At most [`MAX_PARAMS`]; a byte, so that an `EntryBuilder` fits in 128 bytes (moved by
    /// its builder methods inline, not by a `memcpy` call).
    len: u8,
    /// The origin and the endpoint, if named (boxed together: one word when neither is).
    names: Option<Box<CallNames<'static>>>,
    inbound: bool,
}

/// What an entry names besides its parameters: the caller's origin, the endpoint it goes to.
/// Owned in an [`EntryBuilder`](crate::EntryBuilder)'s [`ParamBuf`], borrowed by the tower
/// layer for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CallNames<'a> {
    pub(crate) origin: Option<Cow<'a, str>>,
    pub(crate) endpoint: Option<Cow<'a, str>>,
}

impl ParamBuf {
    /// No parameters.
    pub(crate) const NONE: ParamBuf = ParamBuf {
        hashes: [0; MAX_PARAMS],
        len: 0,
        names: None,
        inbound: false,
    };

    /// Marks the entry as inbound traffic.
    pub(crate) fn set_inbound(&mut self) {
        self.inbound = true;
    }

    /// Names the caller's origin.
    pub(crate) fn set_origin(&mut self, origin: &str) {
        self.names.get_or_insert_with(Box::default).origin = Some(Cow::Owned(origin.into()));
    }

    /// Names the endpoint the call goes to.
    pub(crate) fn set_endpoint(&mut self, endpoint: &str) {
        self.names.get_or_insert_with(Box::default).endpoint = Some(Cow::Owned(endpoint.into()));
    }

    /// Adds the next parameter (ignored beyond [`MAX_PARAMS`]).
    #[inline]
    pub(crate) fn push(&mut self, hash: u64) {
        if let Some(slot) = self.hashes.get_mut(usize::from(self.len)) {
            *slot = hash;
            self.len += 1;
        }
    }

    /// The parameters as the checks read them.
    #[inline]
    pub(crate) fn view(&self) -> Params<'_> {
        Params {
            hashes: &self.hashes[..usize::from(self.len)],
            names: self.names.as_deref(),
            inbound: self.inbound,
            guarded: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_read_without_its_user_info() {
        for (given, read) in [
            ("inv-b.test:8080", "inv-b.test:8080"),
            ("user:secret@inv-b.test:8080", "inv-b.test:8080"),
            ("10.0.0.2:80", "10.0.0.2:80"),
        ] {
            let mut p = ParamBuf::NONE;
            p.set_endpoint(given);
            assert_eq!(p.view().endpoint(), Some(read));
        }
        assert_eq!(ParamBuf::NONE.view().endpoint(), None);
    }

    #[test]
    fn same_values_hash_alike_and_extra_params_are_ignored() {
        assert_eq!(hash("user-1"), hash(&String::from("user-1")));
        assert_ne!(hash("user-1"), hash("user-2"));
        let mut p = ParamBuf::NONE;
        for i in 0..10u64 {
            p.push(hash(&i));
        }
        let p = p.view();
        assert_eq!(p.as_slice().len(), MAX_PARAMS);
        assert_eq!(p.get(3), Some(hash(&3u64)));
        assert_eq!(p.get(8), None);
        assert_eq!(Params::of(p.as_slice()), p);
        let ten: Vec<u64> = (0..10u64).map(|i| hash(&i)).collect();
        assert_eq!(Params::of(&ten), p, "beyond MAX_PARAMS ignored");
    }
}
