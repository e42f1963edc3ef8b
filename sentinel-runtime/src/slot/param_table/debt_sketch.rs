//! [`DebtSketch`]: what the values a [`ParamTable`](super::ParamTable) forgot while they still
//! owed time owe, in a fixed allocation.
//!
//! A count-min sketch of arrival times: [`ROWS`] rows of a power-of-two number of cells, each
//! cell the largest TAT ever recorded into it. A value's cells are one per row, picked by
//! independent functions of its (mixed) hash. [`record`](DebtSketch::record) raises each of the
//! value's cells to its TAT; [`owed`](DebtSketch::owed) answers the smallest of its cells. Every
//! cell of a value holds at least the last TAT recorded for it (cells only grow), so the answer
//! is never below it: a value forgotten while it owed time comes back owing at least that much.
//! The answer may be larger when each of its cells also holds another value's later TAT: the
//! only error is that an innocent value colliding in every row with values that owe more is held
//! back until they would have been free (their TATs: at most their debt, bounded by the rule).
//! Cells hold absolute times, so an answer at or before now means nothing is owed.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use crate::sync::AtomicWord;

/// Rows: a value's cells. A new value is held back only when each of its four cells holds a
/// later time owed by another value.
pub(super) const ROWS: usize = 4;

/// Odd multipliers, one per row (the fractional parts of sqrt(2), sqrt(3), sqrt(5), sqrt(7)):
/// the row's cell is the top bits of the mixed key times its multiplier.
const MULTIPLIERS: [u64; ROWS] = [
    0x6A09_E667_F3BC_C909,
    0xBB67_AE85_84CA_A73B,
    0x3C6E_F372_FE94_F82B,
    0xA54F_F53A_5F1D_36F1,
];

/// Cells a row has at least (so a row index is never a shift by 64).
const MIN_WIDTH: usize = 16;

/// The evicted debts of one table (see the module docs).
pub(crate) struct DebtSketch<A: AtomicWord> {
    /// `ROWS` rows of `1 << bits` cells, row after row.
    cells: Box<[A]>,
    /// log2 of a row's width.
    bits: u32,
}

impl<A: AtomicWord> DebtSketch<A> {
    /// A sketch for a table of `slots` slots: rows of `slots / 8` cells rounded up to a power of
    /// two, at least [`MIN_WIDTH`] (a cell for every second slot in all: 4 bytes a slot).
    pub(crate) fn new(slots: usize) -> Self {
        let width = Self::width_for(slots);
        DebtSketch {
            cells: (0..ROWS * width).map(|_| A::new(0)).collect(),
            bits: width.trailing_zeros(),
        }
    }

    /// A row's width for a table of `slots` slots.
    fn width_for(slots: usize) -> usize {
        (slots / 8).next_power_of_two().max(MIN_WIDTH)
    }

    /// The bytes [`new`](Self::new)`(slots)` allocates.
    pub(super) fn bytes_for(slots: usize) -> usize {
        ROWS * Self::width_for(slots) * std::mem::size_of::<A>()
    }

    /// Bytes allocated.
    pub(super) fn allocated_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.cells)
    }

    /// The cell of `mixed` in `row`.
    #[inline]
    fn cell(&self, row: usize, mixed: u64) -> &A {
        let column = (mixed.wrapping_mul(MULTIPLIERS[row]) >> (64 - self.bits)) as usize;
        &self.cells[(row << self.bits) + column]
    }

    /// Raises the cells of the value `mixed` to `tat` (a TAT it owes: it was forgotten with it).
    pub(crate) fn record(&self, mixed: u64, tat: u64) {
        for row in 0..ROWS {
            let cell = self.cell(row, mixed);
            let mut seen = cell.load(Relaxed);
            while seen < tat {
                match cell.compare_exchange_weak(seen, tat, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(now) => seen = now,
                }
            }
        }
    }

    /// At least the largest TAT recorded for the value `mixed` (0 if none was, short of
    /// collisions): the smallest of its cells.
    pub(crate) fn owed(&self, mixed: u64) -> u64 {
        // Read on every insertion: a plain loop (no iterator adaptors to pay for in debug
        // builds), stopping at the first empty cell.
        let mut least = u64::MAX;
        for row in 0..ROWS {
            least = least.min(self.cell(row, mixed).load(Acquire));
            if least == 0 {
                break;
            }
        }
        least
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;

    use proptest::prelude::*;

    type Sketch = DebtSketch<AtomicU64>;

    #[test]
    fn rows_are_a_power_of_two_sized_with_the_table() {
        for (slots, width) in [
            (0, 16),
            (16, 16),
            (256, 32),
            (32_768, 4_096),
            (1 << 25, 1 << 22),
        ] {
            let s = Sketch::new(slots);
            assert_eq!(1usize << s.bits, width, "{slots} slots");
            assert_eq!(s.allocated_bytes(), Sketch::bytes_for(slots));
            assert_eq!(s.allocated_bytes(), ROWS * width * 8);
        }
    }

    #[test]
    fn a_value_recorded_alone_is_answered_exactly() {
        let s = Sketch::new(1_024);
        assert_eq!(s.owed(42), 0);
        s.record(42, 1_000);
        assert_eq!(s.owed(42), 1_000);
        s.record(42, 500);
        assert_eq!(s.owed(42), 1_000, "cells only grow");
        s.record(42, 2_000);
        assert_eq!(s.owed(42), 2_000);
    }

    proptest! {
        /// Against a map of each value's largest recorded TAT: the sketch's answer is never
        /// below it, and never above the largest TAT recorded at all (bounded by what was
        /// owed); a value recorded into no cell another touched is answered exactly.
        #[test]
        fn never_answers_less_than_was_recorded(
            slots in prop::sample::select(vec![0usize, 64, 1_000, 100_000]),
            ops in prop::collection::vec((0u64..3_000, 0u64..1_000_000, any::<bool>()), 1..400),
        ) {
            let s = Sketch::new(slots);
            let mut model: HashMap<u64, u64> = HashMap::new();
            let mixed = |v: u64| v.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (v << 17);
            for &(value, tat, write) in &ops {
                if write {
                    s.record(mixed(value), tat);
                    let m = model.entry(value).or_insert(0);
                    *m = (*m).max(tat);
                }
                let largest = model.values().copied().max().unwrap_or(0);
                for (&v, &t) in &model {
                    let owed = s.owed(mixed(v));
                    prop_assert!(owed >= t, "value {} owes {} but answered {}", v, t, owed);
                    prop_assert!(owed <= largest, "{} above every recorded TAT", owed);
                }
                let owed = s.owed(mixed(value));
                prop_assert!(owed <= largest);
            }
            // Exactness without collisions: a value whose cells no other value shares.
            for (&v, &t) in &model {
                let alone = (0..ROWS).any(|row| {
                    let mine = std::ptr::from_ref(s.cell(row, mixed(v)));
                    model.keys().filter(|&&w| w != v).all(|&w| {
                        !std::ptr::eq(mine, s.cell(row, mixed(w)))
                    })
                });
                if alone {
                    prop_assert_eq!(s.owed(mixed(v)), t, "value {} alone in a row", v);
                }
            }
        }
    }
}
