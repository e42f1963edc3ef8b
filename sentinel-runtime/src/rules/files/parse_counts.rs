//! Counters of the work the readers do, kept in test builds only: the tests check that a file
//! is parsed once and that positions are found in one pass over its text.

use std::cell::Cell;

thread_local! {
    /// How many times this thread handed a rule file's text to a parser.
    pub(super) static PARSES: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn count_parse() {
    PARSES.with(|p| p.set(p.get() + 1));
}

thread_local! {
    /// How many bytes of text this thread walked to turn positions into lines and columns.
    pub(super) static SCANNED: Cell<usize> = const { Cell::new(0) };
}

pub(crate) fn count_scanned(bytes: usize) {
    SCANNED.with(|s| s.set(s.get() + bytes));
}
