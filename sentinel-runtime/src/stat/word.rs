//! A counter word that carries a 32-bit tag beside a 32-bit value, for the small windows whose
//! values are bounded well below `2^32` by construction (the QPS gate's ring holds at most its
//! threshold, `< 2^31`, per bucket) and whose tags are compared only within a short, known
//! distance of each other (so they cannot alias: see `slot::qps_ring`).

/// The word holding `value` tagged `tag`.
#[inline(always)]
pub(crate) const fn pack(tag: u32, value: u32) -> u64 {
    ((tag as u64) << 32) | value as u64
}

#[inline(always)]
pub(crate) const fn tag(word: u64) -> u32 {
    (word >> 32) as u32
}

#[inline(always)]
pub(crate) const fn value(word: u64) -> u64 {
    word & 0xFFFF_FFFF
}

/// The 32-bit tag of a period.
#[inline(always)]
pub(crate) const fn tag_of(period: u64) -> u32 {
    period as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips() {
        let w = pack(0xDEAD_BEEF, 42);
        assert_eq!((tag(w), value(w)), (0xDEAD_BEEF, 42));
        assert_eq!(tag_of((1 << 40) + 7), 7);
    }
}
