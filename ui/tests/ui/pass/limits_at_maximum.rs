//! Every argument at the largest value the attribute accepts: the default rules it builds must
//! pass the run-time validation, or the node would silently drop them.
use sentinel_runtime::{sentinel, BlockError, ResourceNode};

#[sentinel(
    resource = "ui-max-shaping",
    qps = 100,
    max_wait = "1h",
    warm_up = "24h",
    cold_factor = 100,
    fallback = busy
)]
fn shaping() -> u8 {
    1
}

#[sentinel(
    resource = "ui-max-thresholds",
    qps = 2147483647,
    concurrency = 2147483647
)]
fn thresholds() -> Result<(), BlockError> {
    Ok(())
}

// 4294967295 ms does not divide by 10: one bucket.
#[sentinel(resource = "ui-max-window", qps = 1, window = "4294967295ms")]
fn longest_window() -> Result<(), BlockError> {
    Ok(())
}

// 4294967290 ms divides by 10: ten buckets.
#[sentinel(
    resource = "ui-max-window-10",
    qps = 1,
    window = "4294967290ms",
    strict = true
)]
fn longest_window_ten_buckets() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(
    resource = "ui-max-breakers",
    breaker(
        error_count = 4294967295,
        min_requests = 1000000000,
        window = "4294967295ms",
        recovery = "24h",
        probes = 1000
    ),
    breaker(slow_rt = "4294967295ms", slow_ratio = 1, recovery = "1ms", probes = 1),
    breaker(error_ratio = 0, recovery = "1440m", min_requests = 1, window = "1ms")
)]
fn breakers() -> Result<(), BlockError> {
    Ok(())
}

// One call a day per value and the largest burst whose debt from idle fits (2^63 ns).
#[sentinel(
    resource = "ui-max-hotspot-burst",
    hotspot(param = user, qps = 1, window = "24h", burst = 106750)
)]
fn daily(user: u8) -> Result<u8, BlockError> {
    Ok(user)
}

fn busy(_: BlockError) -> u8 {
    0
}

/// The node of `resource`, created before the guarded function's first call so that call
/// installs the defaults on it (the entry itself passes: no rules yet).
fn node(resource: &str) -> &'static ResourceNode {
    sentinel_runtime::entry(resource)
        .expect("a node without rules admits every call")
        .node()
}

pub fn main() {
    let flow = [
        ("ui-max-shaping", 1),
        ("ui-max-thresholds", 2),
        ("ui-max-window", 1),
        ("ui-max-window-10", 1),
    ];
    let nodes: Vec<_> = flow.iter().map(|(r, n)| (node(r), *n)).collect();
    let breaker_node = node("ui-max-breakers");

    // The first calls install the defaults. Whether they are admitted is not the point (the
    // entries above may already count in the rules' windows).
    let _ = shaping();
    let _ = thresholds();
    let _ = longest_window();
    let _ = longest_window_ten_buckets();
    let _ = breakers();

    for (node, expected) in nodes {
        let rules = node.default_flow_rules();
        assert_eq!(
            rules.len(),
            expected,
            "{}: a default flow rule failed run-time validation; kept: {rules:?}",
            node.name()
        );
        for rule in &rules {
            assert_eq!(rule.validate(), Ok(()), "{rule:?}");
        }
    }
    // The hotspot default is in force: threshold + burst calls of one value from idle.
    let passed = (0..106_752).filter(|_| daily(1).is_ok()).count();
    assert_eq!(passed, 106_751, "the hotspot default failed run-time validation");

    let rules = breaker_node.default_circuit_breaker_rules();
    assert_eq!(
        rules.len(),
        3,
        "a default breaker rule failed run-time validation; kept: {rules:?}"
    );
}
