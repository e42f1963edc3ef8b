//! [`NameTable`]: leaked values by name, found with no lock and no write to shared memory.
//!
//! # Protocol
//!
//! The table is open addressing over a power-of-two array of slots, at most half full. A slot
//! holds a name's hash and the address of a leaked value (0: empty). Values are never removed.
//!
//! * **Insert** (writers are serialised by a lock): the hash is stored, then the address with
//!   `Release`. A reader that loads the address with `Acquire` therefore sees the hash, and the
//!   value as it was built.
//! * **Grow**: when an insert would fill the table past half, a table twice the size is filled
//!   with every value and the new one, then its address is stored with `Release` in place of the
//!   old. The old table is never freed (a reader may still be probing it) and never written
//!   again: it holds a subset of the values, so a reader on it at worst misses the newest ones,
//!   and a caller that misses takes the insert path, which looks again under the lock. The
//!   tables given up have sizes halving down to the first, so together they take less memory
//!   than the table in force.
//! * **Lookup**: load the table address (`Acquire`), probe from the hash's slot until an empty
//!   slot (not found) or a slot with the same hash whose value has the same name.
//!
//! The model tests run this code on loom's atomics (`model_tests::loom_name_table`).

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use super::atomic_word::AtomicWord;

/// Whether two names are equal: an inlined compare (names are short; a call to `memcmp` cost
/// more than the rest of the lookup). Differences are OR-ed together rather than returned early,
/// which also keeps the compiler from turning the loops back into a `memcmp` call.
#[inline(always)]
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let word = |c: &[u8]| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_tail, b_tail) = (a_words.remainder(), b_words.remainder());
    let mut diff = 0u64;
    for (x, y) in a_words.zip(b_words) {
        diff |= word(x) ^ word(y);
    }
    for (x, y) in a_tail.iter().zip(b_tail) {
        diff |= u64::from(x ^ y);
    }
    diff == 0
}

/// A value kept in a [`NameTable`]: it has a name.
pub(crate) trait Named: Sync + 'static {
    fn name(&self) -> &str;
}

/// One slot: a hash and the exposed address of a `&'static N` (0: empty).
struct Slot<W> {
    hash: W,
    value: W,
}

struct Table<N, W> {
    slots: Box<[Slot<W>]>,
    values: PhantomData<fn() -> N>,
}

impl<N: Named, W: AtomicWord + 'static> Table<N, W> {
    fn with_slots(slots: usize) -> Table<N, W> {
        Table {
            slots: (0..slots.next_power_of_two())
                .map(|_| Slot {
                    hash: W::new(0),
                    value: W::new(0),
                })
                .collect(),
            values: PhantomData,
        }
    }

    #[inline(always)]
    fn value_at(slot: &Slot<W>) -> Option<&'static N> {
        let address = slot.value.load(Ordering::Acquire);
        if address == 0 {
            return None;
        }
        // SAFETY: a non-zero word is the exposed address of a `&'static N` (stored by `insert`
        // with `Release` after the value was built; the `Acquire` load above sees it built),
        // and values are leaked, never freed.
        Some(unsafe { &*std::ptr::with_exposed_provenance::<N>(address as usize) })
    }

    #[inline]
    fn get(&self, hash: u64, name: &str) -> Option<&'static N> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = &self.slots[i];
            let value = Self::value_at(slot)?;
            if slot.hash.load(Ordering::Relaxed) == hash && same_name(value.name(), name) {
                return Some(value);
            }
            i = (i + 1) & mask;
        }
    }

    /// Every value with its hash.
    fn entries(&self) -> impl Iterator<Item = (u64, &'static N)> + '_ {
        self.slots.iter().filter_map(|slot| {
            Self::value_at(slot).map(|value| (slot.hash.load(Ordering::Relaxed), value))
        })
    }

    /// Inserts `value` (the caller holds the writer lock: no other insert races this one).
    fn insert(&self, hash: u64, value: &'static N) {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i].value.load(Ordering::Relaxed) != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i].hash.store(hash, Ordering::Relaxed);
        let address = std::ptr::from_ref(value).expose_provenance() as u64;
        self.slots[i].value.store(address, Ordering::Release);
    }
}

/// Leaked values by name: lookups take no lock and write nothing; inserts are serialised.
pub(crate) struct NameTable<N, W> {
    /// The exposed address of the leaked [`Table`] in force.
    table: W,
    /// Serialises inserts; the number of values in the table.
    writer: Mutex<usize>,
    values: PhantomData<fn() -> N>,
}

impl<N: Named, W: AtomicWord + 'static> NameTable<N, W> {
    /// An empty table with room for `slots / 2` values before it first grows.
    pub(crate) fn new(slots: usize) -> NameTable<N, W> {
        NameTable {
            table: W::new(Self::leak(Table::with_slots(slots.max(2)))),
            writer: Mutex::new(0),
            values: PhantomData,
        }
    }

    fn leak(table: Table<N, W>) -> u64 {
        std::ptr::from_ref(Box::leak(Box::new(table))).expose_provenance() as u64
    }

    #[inline(always)]
    fn table(&self) -> &'static Table<N, W> {
        let address = self.table.load(Ordering::Acquire);
        // SAFETY: the word always holds the exposed address of a leaked (never freed) table,
        // stored with `Release` after the table was filled; the `Acquire` load sees it filled.
        unsafe { &*std::ptr::with_exposed_provenance::<Table<N, W>>(address as usize) }
    }

    /// The value named `name` (whose hash is `hash`), if there is one. Takes no lock.
    #[inline]
    pub(crate) fn get(&self, hash: u64, name: &str) -> Option<&'static N> {
        self.table().get(hash, name)
    }

    /// The value named `name`; if there is none, `make` may make one (`None`: it declined),
    /// which is then inserted. `make` runs under the writer lock.
    pub(crate) fn get_or_insert(
        &self,
        hash: u64,
        name: &str,
        make: impl FnOnce() -> Option<&'static N>,
    ) -> Option<&'static N> {
        let mut len = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let table = self.table();
        if let Some(value) = table.get(hash, name) {
            return Some(value);
        }
        let value = make()?;
        *len += 1;
        if *len * 2 > table.slots.len() {
            let bigger = Table::with_slots(table.slots.len() * 2);
            for (h, old) in table.entries() {
                bigger.insert(h, old);
            }
            bigger.insert(hash, value);
            self.table.store(Self::leak(bigger), Ordering::Release);
        } else {
            table.insert(hash, value);
        }
        Some(value)
    }

    /// Every value inserted before the writer lock is taken here: [`all`](Self::all), under
    /// the lock (an insert still under way is then finished and seen).
    pub(crate) fn all_settled(&self) -> Vec<&'static N> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.all()
    }

    /// Every value, in no particular order.
    pub(crate) fn all(&self) -> Vec<&'static N> {
        self.table().entries().map(|(_, value)| value).collect()
    }

    /// The number of slots of the table in force (for tests).
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.table().slots.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    struct Value(String);

    impl Named for Value {
        fn name(&self) -> &str {
            &self.0
        }
    }

    fn leak(name: &str) -> &'static Value {
        Box::leak(Box::new(Value(name.to_owned())))
    }

    /// A poor hash on purpose: many names share one, so probes pass over other names.
    fn hash(name: &str) -> u64 {
        name.bytes().map(u64::from).sum::<u64>() % 5
    }

    #[test]
    fn finds_every_value_inserted_across_growth_and_nothing_else() {
        let table: NameTable<Value, AtomicU64> = NameTable::new(2);
        let names: Vec<String> = (0..200).map(|i| format!("v-{i}")).collect();
        for (n, name) in names.iter().enumerate() {
            let value = table.get_or_insert(hash(name), name, || Some(leak(name)));
            assert_eq!(value.map(|v| v.0.as_str()), Some(name.as_str()));
            // At most half full after every insert, so a probe always ends.
            assert!(
                (n + 1) * 2 <= table.slots(),
                "{} values in {}",
                n + 1,
                table.slots()
            );
        }
        for name in &names {
            assert_eq!(
                table.get(hash(name), name).map(|v| v.0.as_str()),
                Some(name.as_str())
            );
        }
        assert!(table.get(hash("v-200"), "v-200").is_none());
        assert!(table.get(hash("v-1"), "v-1x").is_none());
        assert_eq!(table.all().len(), names.len());
    }

    #[test]
    fn an_existing_name_is_not_made_again_and_a_declined_one_is_not_inserted() {
        let table: NameTable<Value, AtomicU64> = NameTable::new(16);
        let first = table.get_or_insert(1, "a", || Some(leak("a"))).unwrap();
        let again = table
            .get_or_insert(1, "a", || panic!("made twice"))
            .unwrap();
        assert!(std::ptr::eq(first, again));
        assert!(table.get_or_insert(2, "b", || None).is_none());
        assert!(table.get(2, "b").is_none());
        assert_eq!(table.all().len(), 1);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Get(u8),
        Insert(u8),
        Decline(u8),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..40).prop_map(Op::Get),
            (0u8..40).prop_map(Op::Insert),
            (0u8..40).prop_map(Op::Decline),
        ]
    }

    proptest::proptest! {
        /// Against a plain set of names: every lookup and insert answers as the set does, from
        /// any first size, with a hash that makes names collide.
        #[test]
        fn answers_as_a_set_of_names_does(
            slots in proptest::sample::select(vec![2usize, 4, 16]),
            ops in proptest::collection::vec(op(), 0..200),
        ) {
            let table: NameTable<Value, AtomicU64> = NameTable::new(slots);
            let mut model = std::collections::BTreeSet::new();
            for op in ops {
                match op {
                    Op::Get(i) => {
                        let name = format!("n{i}");
                        let found = table.get(hash(&name), &name).map(|v| v.0.clone());
                        proptest::prop_assert_eq!(found, model.get(&name).cloned());
                    }
                    Op::Insert(i) => {
                        let name = format!("n{i}");
                        let made = !model.contains(&name);
                        let mut called = false;
                        let got = table.get_or_insert(hash(&name), &name, || {
                            called = true;
                            Some(leak(&name))
                        });
                        proptest::prop_assert_eq!(called, made);
                        proptest::prop_assert_eq!(got.map(|v| v.0.clone()), Some(name.clone()));
                        model.insert(name);
                    }
                    Op::Decline(i) => {
                        let name = format!("n{i}");
                        let got = table.get_or_insert(hash(&name), &name, || None);
                        proptest::prop_assert_eq!(got.map(|v| v.0.clone()), model.get(&name).cloned());
                    }
                }
                proptest::prop_assert!(model.len() * 2 <= table.slots().max(2));
            }
            let mut all: Vec<String> = table.all().into_iter().map(|v| v.0.clone()).collect();
            all.sort();
            proptest::prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn names_compare_byte_for_byte() {
        for (a, b, same) in [
            ("", "", true),
            ("a", "a", true),
            ("a", "b", false),
            ("GET:/users/{id}", "GET:/users/{id}", true),
            ("GET:/users/{id}", "GET:/users/{ix}", false),
            ("GET:/users/{id}", "GET:/users/{id", false),
            ("12345678", "12345678", true),
            ("12345678", "12345679", false),
            ("1234567890abcdefX", "1234567890abcdefY", false),
        ] {
            assert_eq!(same_name(a, b), same, "{a:?} vs {b:?}");
        }
    }
}
