//! Loom models of a lease's tokens ([`Tokens`]): takes racing each other, a lease passing to
//! another key (a hotspot table's slot taken over by another value) and a lease expiring, over
//! every interleaving within a preemption bound. The property is the lease's promise: a key
//! never spends more than was granted to it, and nothing is spent twice.

use loom::sync::atomic::AtomicU64 as LoomWord;
use loom::sync::Arc;
use loom::thread;

use crate::slot::cluster::lease::{Tokens, Took};

const A: u64 = 7;
const B: u64 = 8;

fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

fn granted(key: u64, n: u64) -> Arc<Tokens<LoomWord>> {
    let t = Arc::new(Tokens::<LoomWord>::default());
    t.pass_to(key);
    t.add(n);
    t
}

fn spent(results: &[Took]) -> usize {
    results.iter().filter(|t| **t == Took::Spent).count()
}

#[test]
fn three_takers_spend_exactly_the_two_tokens_granted() {
    check(3, || {
        let t = granted(A, 2);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let t = Arc::clone(&t);
                thread::spawn(move || t.take(A, 1).0)
            })
            .collect();
        let results: Vec<Took> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(spent(&results), 2, "{results:?}");
        assert_eq!(t.count(), 0);
    });
}

#[test]
fn a_key_never_spends_tokens_granted_to_the_key_that_took_its_slot_over() {
    check(3, || {
        let t = granted(A, 1);
        let a = {
            let t = Arc::clone(&t);
            thread::spawn(move || [t.take(A, 1).0, t.take(A, 1).0])
        };
        let b = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                t.pass_to(B);
                t.add(1);
            })
        };
        let a = a.join().unwrap();
        b.join().unwrap();
        let b = [t.take(B, 1).0, t.take(B, 1).0];
        assert!(spent(&a) <= 1, "A spent more than its 1 token: {a:?}");
        assert!(spent(&b) <= 1, "B spent more than its 1 token: {b:?}");
        assert!(t.count() >= 0, "count {}", t.count());
    });
}

#[test]
fn an_expiring_lease_spends_each_token_at_most_once_and_leaves_no_debt() {
    check(3, || {
        let t = granted(A, 2);
        let taker = {
            let t = Arc::clone(&t);
            thread::spawn(move || [t.take(A, 1).0, t.take(A, 2).0])
        };
        let expiry = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.drop_all())
        };
        let took = taker.join().unwrap();
        expiry.join().unwrap();
        let spent_tokens: i64 = took
            .iter()
            .zip([1, 2])
            .filter(|(t, _)| **t == Took::Spent)
            .map(|(_, n)| n)
            .sum();
        assert!(spent_tokens <= 2, "{took:?}");
        // Whatever the race left is never below 0 (a later grant is not eaten by a debt) and,
        // with what was spent, never more than was granted.
        assert!(
            t.count() >= 0 && t.count() + spent_tokens <= 2,
            "{took:?}, count {}",
            t.count()
        );
        // A new grant adds to what is left, exactly.
        let left = t.count();
        t.add(3);
        assert_eq!(t.count(), left + 3);
    });
}
