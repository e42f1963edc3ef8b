//! Rules that match nothing: resources named by the rules in force that no call has entered
//! since those rules were loaded ([`unmatched`]), and a warning for each one still unmatched a
//! grace period after the load (feature `tracing`), with a did-you-mean.
//!
//! A rule for `GET:/users/:id` (axum 0.7's syntax) loads and does nothing when the route is
//! named `GET:/users/{id}`: the limit silently vanishes. Nothing here runs on the call path:
//! each load records, per newly named resource, how many calls its node had seen; a resource
//! is matched once that count has moved.

use std::collections::HashMap;
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use crate::clock;
use crate::registry;

/// How long after a load a rule may match nothing before it is reported: by default a minute,
/// time for a service's routes to see their first requests.
pub const DEFAULT_UNMATCHED_GRACE: Duration = Duration::from_secs(60);

/// The most names a warning suggests against (the registry is capped anyway).
#[cfg(feature = "tracing")]
const MAX_CANDIDATES: usize = 10_000;

struct State {
    /// Each named resource and the calls its node had seen when it was first named (0 when it
    /// had no node yet).
    baseline: HashMap<String, u64>,
    /// When the next report is due (clock nanoseconds), if one is.
    due: Option<u64>,
    grace: Duration,
    /// Whether the reporting thread runs (feature `tracing`).
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    reporter: bool,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| {
    Mutex::new(State {
        baseline: HashMap::new(),
        due: None,
        grace: DEFAULT_UNMATCHED_GRACE,
        reporter: false,
    })
});
static WAKE: Condvar = Condvar::new();

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Calls the node of `name` has seen (passed or blocked), 0 without a node.
fn seen(name: &str) -> u64 {
    registry::get(name).map_or(0, |node| {
        let totals = node.stats().totals();
        totals.pass.saturating_add(totals.block)
    })
}

/// Records the resources the rules in force name after a successful load: new names start
/// unmatched, names no longer named are forgotten, and a report is due a grace period later.
pub(crate) fn loaded(named: impl IntoIterator<Item = String>) {
    let mut state = state();
    let mut next = HashMap::new();
    for name in named {
        let baseline = match state.baseline.remove(&name) {
            Some(baseline) => baseline,
            None => seen(&name),
        };
        next.insert(name, baseline);
    }
    state.baseline = next;
    if state.baseline.is_empty() {
        state.due = None;
        return;
    }
    let grace = u64::try_from(state.grace.as_nanos()).unwrap_or(u64::MAX);
    let due = clock::now_nanos().saturating_add(grace);
    // The reporter need only be woken for a report due earlier than the one it waits for: it
    // reads the due time again when that one comes (and at least every 100 ms). Each load
    // woke it before, a context switch and a contended lock per load.
    let sooner = state.due.is_none_or(|waited| due < waited);
    state.due = Some(due);
    #[cfg(feature = "tracing")]
    start_reporter(&mut state);
    if sooner {
        WAKE.notify_all();
    }
}

/// The resources named by the rules in force that no call has entered since those rules were
/// loaded, sorted. A name here usually means a typo, or a route written in another syntax
/// (`/users/:id` where the layer names `/users/{id}`).
///
/// ```
/// use sentinel_runtime::rules::{self, FlowRule};
///
/// rules::load_flow_rules(vec![FlowRule::qps("doc-unmatched", 5.0)]).unwrap();
/// assert_eq!(rules::unmatched(), vec!["doc-unmatched".to_string()]);
/// drop(sentinel_runtime::entry("doc-unmatched"));
/// assert!(rules::unmatched().is_empty());
/// # rules::load_flow_rules(vec![]).unwrap();
/// ```
pub fn unmatched() -> Vec<String> {
    let state = state();
    let mut names: Vec<String> = state
        .baseline
        .iter()
        .filter(|(name, baseline)| seen(name) == **baseline)
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

/// Sets how long after a load a rule that matches nothing is reported (feature `tracing`: a
/// warning per such resource, with the closest known resource name); default
/// [`DEFAULT_UNMATCHED_GRACE`]. Takes effect at the next load.
pub fn set_unmatched_grace(grace: Duration) {
    state().grace = grace;
}

/// A known resource name `name` was probably meant to be: the same route in axum 0.8's syntax
/// (`/users/:id` -> `/users/{id}`), else the closest by edit distance, if close.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn did_you_mean<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let braces = colon_params_to_braces(name);
    if let Some(exact) = known.iter().find(|k| **k == braces && braces != name) {
        return Some(exact);
    }
    let limit = (name.chars().count() / 4).max(2);
    known
        .iter()
        .filter(|k| k.as_str() != name)
        .map(|k| (edit_distance(name, k, limit), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// `/users/:id/posts/:post` -> `/users/{id}/posts/{post}`.
fn colon_params_to_braces(name: &str) -> String {
    name.split('/')
        .map(|segment| match segment.strip_prefix(':') {
            Some(param) if !param.is_empty() && !segment.contains("::") => format!("{{{param}}}"),
            _ => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Levenshtein distance by characters, giving up (returning `limit + 1`) once it must exceed
/// `limit`.
fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        let mut row_min = current[0];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
            row_min = row_min.min(current[j + 1]);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// Starts the thread that reports unmatched rules when a report is due (one thread at most; it
/// ends once nothing is due).
#[cfg(feature = "tracing")]
fn start_reporter(state: &mut State) {
    if state.reporter {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("sentinel-unmatched".into())
        .spawn(report_when_due);
    state.reporter = spawned.is_ok();
}

/// Waits for the due time (read on the runtime clock, so a mock clock moves it too; checked at
/// least every 100 ms), reports, and ends when nothing more is due.
#[cfg(feature = "tracing")]
fn report_when_due() {
    let mut state = state();
    loop {
        let Some(due) = state.due else {
            state.reporter = false;
            return;
        };
        let now = clock::now_nanos();
        if now >= due {
            state.due = None;
            drop(state);
            report();
            state = self::state();
            continue;
        }
        let wait = Duration::from_nanos(due - now).min(Duration::from_millis(100));
        state = WAKE
            .wait_timeout(state, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// One warning per unmatched resource, naming the closest known resource.
#[cfg(feature = "tracing")]
fn report() {
    let names = unmatched();
    if names.is_empty() {
        return;
    }
    let known: Vec<String> = registry::all()
        .into_iter()
        .map(|node| node.name().to_owned())
        .filter(|name| !names.contains(name))
        .take(MAX_CANDIDATES)
        .collect();
    for name in &names {
        match did_you_mean(name, &known) {
            Some(suggestion) => tracing::warn!(
                target: "sentinel",
                resource = name.as_str(),
                did_you_mean = suggestion,
                "rules name a resource that no call has entered since they were loaded"
            ),
            None => tracing::warn!(
                target: "sentinel",
                resource = name.as_str(),
                "rules name a resource that no call has entered since they were loaded"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn axum_07_routes_are_matched_to_their_08_spelling() {
        let known = names(&["GET:/users/{id}", "GET:/users", "POST:/users/{id}/posts"]);
        assert_eq!(
            did_you_mean("GET:/users/:id", &known),
            Some("GET:/users/{id}")
        );
        assert_eq!(
            did_you_mean("POST:/users/:id/posts", &known),
            Some("POST:/users/{id}/posts")
        );
    }

    #[test]
    fn typos_get_the_closest_name_and_strangers_get_none() {
        let known = names(&["checkout", "search", "GET:/orders/{id}"]);
        assert_eq!(did_you_mean("chekout", &known), Some("checkout"));
        assert_eq!(
            did_you_mean("GET:/order/{id}", &known),
            Some("GET:/orders/{id}")
        );
        assert_eq!(did_you_mean("payments", &known), None);
        assert_eq!(
            did_you_mean("checkout", &known),
            None,
            "itself is no suggestion"
        );
    }

    #[test]
    fn edit_distance_is_levenshtein_and_gives_up_past_its_limit() {
        assert_eq!(edit_distance("kitten", "sitting", 5), 3);
        assert_eq!(edit_distance("", "abc", 5), 3);
        assert_eq!(edit_distance("same", "same", 0), 0);
        assert_eq!(edit_distance("abcdef", "uvwxyz", 2), 3, "limit + 1");
        assert_eq!(
            edit_distance("a", "abcdefgh", 2),
            3,
            "lengths alone exceed it"
        );
    }
}
