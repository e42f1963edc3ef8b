//! Which check of the chain in force each rule of a reload takes over, so that a rule keeps its
//! own state (its counts, its pacing, its values' debts) however the list was reordered, and a
//! rule dropped from the list does not hand its state to a sibling.

/// For each of `rules`, the index in `old` of the check it takes over (`None`: a new one). Each
/// check goes to one rule at most. `rounds` are tried in order over all the rules, the closest
/// match first (an identical rule), so a later round (a changed rule) never takes a check that
/// an earlier round gives to the rule it belonged to.
pub(crate) fn assign<G, R>(
    old: &[G],
    rules: &[R],
    rounds: &[fn(&G, &R) -> bool],
) -> Vec<Option<usize>> {
    let mut kept: Vec<Option<usize>> = vec![None; rules.len()];
    let mut taken = vec![false; old.len()];
    for round in rounds {
        for (rule, kept) in rules.iter().zip(kept.iter_mut()) {
            if kept.is_some() {
                continue;
            }
            let free = old
                .iter()
                .zip(taken.iter_mut())
                .enumerate()
                .find(|(_, (check, taken))| !**taken && round(check, rule));
            if let Some((i, (_, taken))) = free {
                *taken = true;
                *kept = Some(i);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identical_rule_finds_its_own_check_wherever_it_moved() {
        // Checks and rules as (shape, threshold): same shape, different thresholds.
        let old = [(1, 10), (1, 100)];
        type Rule = (u8, u32);
        let rounds: [fn(&Rule, &Rule) -> bool; 2] = [|c, r| c == r, |c, r| c.0 == r.0];
        assert_eq!(
            assign(&old, &[(1, 100), (1, 10)], &rounds),
            [Some(1), Some(0)]
        );
        // The 10 dropped: the 100 keeps its own check, not the first of its shape.
        assert_eq!(assign(&old, &[(1, 100)], &rounds), [Some(1)]);
        // A changed rule takes what no identical rule claims.
        assert_eq!(
            assign(&old, &[(1, 20), (1, 10)], &rounds),
            [Some(1), Some(0)]
        );
        // More rules than checks, and another shape: new checks.
        assert_eq!(
            assign(&old, &[(1, 10), (1, 10), (1, 10), (2, 10)], &rounds),
            [Some(0), Some(1), None, None]
        );
    }
}
