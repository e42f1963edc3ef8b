//! The GCRA arithmetic of a rate value: a pure function from its TAT, the time and the request
//! to the decision and the TAT it leaves. The table commits what it returns by one CAS (see
//! [`admission`](super::admission)).

/// The outcome of [`ParamTable::acquire_rate`](super::ParamTable::acquire_rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RateDecision {
    /// Admitted now.
    Pass,
    /// Admitted; the caller waits this many nanoseconds (until `now + wait`).
    Wait(u64),
    /// Not admitted. `retry_after`, in nanoseconds: the request's excess over the tolerance
    /// (after that long the same request passes, if nothing else was admitted meanwhile and it
    /// fits the tolerance at all); for a new key refused for want of a slot, the time until one
    /// of its slots turns idle; `u64::MAX`: never (a threshold of 0, a TAT past `u64::MAX`) or
    /// unknown.
    Block { retry_after: u64 },
}

/// What a rate acquisition asks for (see [`ParamTable::acquire_rate`](super::ParamTable::acquire_rate)).
#[derive(Clone, Copy, Debug)]
pub(super) struct RateRequest {
    pub(super) count: u32,
    pub(super) interval: u64,
    pub(super) tolerance: u64,
    pub(super) max_wait: u64,
}

/// The GCRA step from `tat` at `now`: the decision and the TAT it leaves (unchanged on a
/// block). A TAT past `u64::MAX` cannot be kept, so such a request blocks, and an interval of
/// `u64::MAX` (a threshold of 0) passes nothing.
///
/// In `u64` with checked steps (the reference in the tests below does it in `u128`): the cost
/// `count x interval` or the new TAT past `u64::MAX` is a TAT that cannot be kept, and a
/// tolerance plus interval past `u64::MAX` admits whatever is ahead (never more than
/// `u64::MAX`).
#[inline(always)]
pub(super) fn gcra(tat: u64, now: u64, r: &RateRequest) -> (RateDecision, u64) {
    const NEVER: RateDecision = RateDecision::Block {
        retry_after: u64::MAX,
    };
    if r.interval == u64::MAX {
        // A threshold of 0 (even at `now == 0`, where one such interval would still fit).
        return (NEVER, tat);
    }
    let Some(cost) = u64::from(r.count).checked_mul(r.interval) else {
        return (NEVER, tat);
    };
    let Some(kept) = tat.max(now).checked_add(cost) else {
        return (NEVER, tat);
    };
    let ahead = kept - now;
    let limit = r.tolerance.saturating_add(r.interval);
    if ahead <= limit {
        return (RateDecision::Pass, kept);
    }
    let wait = ahead - limit;
    if wait <= r.max_wait {
        (RateDecision::Wait(wait), kept)
    } else {
        (
            RateDecision::Block {
                retry_after: retry_after(wait, r, u128::from(limit)),
            },
            tat,
        )
    }
}

/// When a blocked request may pass: after `wait`, unless it is blocked even from idle (a batch
/// larger than the threshold and burst, beyond what `max_wait` covers), then never (`u64::MAX`).
/// Out of line: inlined, its arithmetic was hoisted ahead of the admission's loop, on every
/// call.
#[cold]
#[inline(never)]
fn retry_after(wait: u64, r: &RateRequest, limit: u128) -> u64 {
    let from_idle = u128::from(r.count) * u128::from(r.interval);
    if from_idle > limit && from_idle - limit > u128::from(r.max_wait) {
        u64::MAX
    } else {
        wait
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The step in `u128`, as first written: the reference for the `u64` one.
    fn reference(tat: u64, now: u64, r: &RateRequest) -> (RateDecision, u64) {
        if r.interval == u64::MAX {
            return (
                RateDecision::Block {
                    retry_after: u64::MAX,
                },
                tat,
            );
        }
        let now_wide = u128::from(now);
        let start = u128::from(tat).max(now_wide);
        let new_tat = start + u128::from(r.count) * u128::from(r.interval);
        let Ok(kept) = u64::try_from(new_tat) else {
            return (
                RateDecision::Block {
                    retry_after: u64::MAX,
                },
                tat,
            );
        };
        let ahead = new_tat - now_wide;
        let limit = u128::from(r.tolerance) + u128::from(r.interval);
        if ahead <= limit {
            return (RateDecision::Pass, kept);
        }
        let wait = u64::try_from(ahead - limit).unwrap_or(u64::MAX);
        if wait <= r.max_wait {
            (RateDecision::Wait(wait), kept)
        } else {
            (
                RateDecision::Block {
                    retry_after: retry_after(wait, r, limit),
                },
                tat,
            )
        }
    }

    /// Values near every edge: small, around a second, near `u64::MAX`, and anything.
    fn edgy() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..1_000,
            999_000_000u64..1_001_000_000,
            (u64::MAX - 1_000)..=u64::MAX,
            (u64::MAX / 2 - 1_000)..(u64::MAX / 2 + 1_000),
            any::<u64>(),
        ]
    }

    proptest! {
        #[test]
        fn the_u64_step_decides_as_the_u128_one(
            tat in edgy(), now in edgy(), count in prop_oneof![1u32..4, any::<u32>()],
            interval in edgy(), tolerance in edgy(), max_wait in edgy(),
        ) {
            let r = RateRequest { count, interval: interval.max(1), tolerance, max_wait };
            prop_assert_eq!(gcra(tat, now, &r), reference(tat, now, &r));
        }
    }
}
