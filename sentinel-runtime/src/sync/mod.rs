//! Concurrency building blocks: each thread's slot number ([`thread_slot`]), a pointer read
//! lock-free and replaced safely ([`Published`]), leaked values by name found lock-free
//! ([`NameTable`]), a fixed slice on huge pages for tables read at random ([`HugeSlice`]), and
//! the atomic word the lock-free windows are written against, so that the same code runs on
//! `std`'s atomics in the product and on loom's in the model tests (`stat::ring` and
//! `slot::qps_ring` are generic over it; the product uses `AtomicU64`, the loom tests
//! `loom::sync::atomic::AtomicU64`).

mod atomic_word;
mod huge_slice;
mod name_table;
mod publish;
mod thread_slot;

pub(crate) use atomic_word::AtomicWord;
pub(crate) use huge_slice::HugeSlice;
pub(crate) use name_table::{NameTable, Named};
#[cfg(feature = "__test-hooks")]
pub(crate) use publish::is_prepared;
pub(crate) use publish::{prepare, Held, Published};
#[cfg(test)]
pub(crate) use publish::{Domain, Hazards};
pub(crate) use thread_slot::{assigned, thread_slot, thread_slot_if_assigned, MAX_SLOTS};
