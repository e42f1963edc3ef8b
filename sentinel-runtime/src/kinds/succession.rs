//! [`Successors`] for the shapes of checks several kinds share: what a build of a chain's
//! enforced or shadow part may take over from both old parts (see
//! [`Chain::build`](super::chain::Chain::build)).

use std::sync::Arc;

use super::kind::Successors;

/// Shared checks (gates, breakers): `first`'s, then `then`'s, each once, without those
/// `taken` holds (compared by identity).
impl<T> Successors for Vec<Arc<T>> {
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self {
        arcs(first, then, taken)
    }
}

/// `first`'s, then `then`'s shared checks, each once, without those `taken` holds.
pub(crate) fn arcs<T>(first: &[Arc<T>], then: &[Arc<T>], taken: &[Arc<T>]) -> Vec<Arc<T>> {
    let mut out: Vec<Arc<T>> = Vec::with_capacity(first.len() + then.len());
    for held in first.iter().chain(then) {
        let seen = |c: &Arc<T>| Arc::ptr_eq(c, held);
        if !taken.iter().any(seen) && !out.iter().any(seen) {
            out.push(Arc::clone(held));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successors_are_the_own_part_first_then_the_other_without_what_is_taken() {
        let (a, b, c) = (Arc::new(1), Arc::new(2), Arc::new(3));
        let first = vec![Arc::clone(&a), Arc::clone(&b)];
        let then = vec![Arc::clone(&b), Arc::clone(&c)];
        let got = arcs(&first, &then, &[Arc::clone(&a)]);
        assert_eq!(got.iter().map(|x| **x).collect::<Vec<_>>(), vec![2, 3]);
    }
}
