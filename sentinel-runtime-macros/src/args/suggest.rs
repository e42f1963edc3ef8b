//! What an unknown argument's message suggests: the nearest known name, or the group the name
//! belongs to, or the list of known names.

use super::known::{BREAKER_KNOWN, KNOWN};

/// The message for an unknown argument: the nearest known name if it is a likely misspelling
/// (at most 2 edits away), else the list of known names.
pub(super) fn unknown(name: &str, known: &[&str]) -> String {
    if known == KNOWN && BREAKER_KNOWN.contains(&name) {
        return format!(
            "`{name}` is an argument of `breaker(...)`: write `breaker(..., {name} = ...)`"
        );
    }
    if known == KNOWN && matches!(name, "param" | "burst" | "capacity") {
        return format!(
            "`{name}` is an argument of `hotspot(...)`: write `hotspot(param = ..., {name} = ...)`"
        );
    }
    let nearest = known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d);
    if let Some((_, k)) = nearest {
        return format!("unknown argument `{name}`: did you mean `{k}`?");
    }
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "unknown argument `{name}`: expected one of {}",
        list.join(", ")
    )
}

/// The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of
/// two neighbouring characters, one each (optimal string alignment).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, unknown, BREAKER_KNOWN, KNOWN};

    #[test]
    fn edit_distance_counts_swaps_as_one_edit() {
        assert_eq!(edit_distance("qps", "qps"), 0);
        assert_eq!(edit_distance("qsp", "qps"), 1);
        assert_eq!(edit_distance("fallbak", "fallback"), 1);
        assert_eq!(edit_distance("concurency", "concurrency"), 1);
        assert_eq!(edit_distance("qpss", "qps"), 1);
        assert_eq!(edit_distance("warmup", "warm_up"), 1);
        assert_eq!(edit_distance("resorce", "resource"), 1);
        assert_eq!(edit_distance("", "qps"), 3);
        assert_eq!(edit_distance("timeout", "window"), 5);
    }

    #[test]
    fn near_misses_are_suggested_others_listed() {
        assert_eq!(
            unknown("qsp", KNOWN),
            "unknown argument `qsp`: did you mean `qps`?"
        );
        assert_eq!(
            unknown("maxwait", KNOWN),
            "unknown argument `maxwait`: did you mean `max_wait`?"
        );
        assert_eq!(
            unknown("recovry", BREAKER_KNOWN),
            "unknown argument `recovry`: did you mean `recovery`?"
        );
        assert!(unknown("timeout", KNOWN)
            .starts_with("unknown argument `timeout`: expected one of `resource`, `qps`"));
        assert_eq!(
            unknown("recovery", KNOWN),
            "`recovery` is an argument of `breaker(...)`: write `breaker(..., recovery = ...)`"
        );
    }
}
