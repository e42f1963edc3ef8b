//! The fleet as one: every 2 s every instance of a started [`Cluster`](super::Cluster)
//! publishes a summary of itself into the store (its name, host and process, its rules, its
//! cluster state, its traffic, why it blocks, its open breakers and ejected endpoints, its
//! busiest resources). An instance whose view is asked for ([`fleet`], the dashboard's
//! `/api/fleet`) also reads the others' back, once a second while it is asked for.
//!
//! # What it costs, and its bounds
//!
//! Each instance publishes every 2 s, at a cost to the store of O(log N) whatever the fleet's
//! size N (amortized: each publish also removes at most 100 entries past their time and 100
//! stamped in the future, so whatever piles up, killed instances or another writer's entries, is
//! removed by the publishes that meet it). Publishing reads nothing back. Measured: 1 000
//! instances, and three of them reading once a second, cost Redis about 3% of one core (see
//! `BENCHMARKS.md`).
//!
//! A read looks at the [`MAX_READ`] freshest entries and counts all the live ones: the view holds
//! at most [`MAX_READ`] other instances (this instance is always in it, from its own memory),
//! [`Fleet::count`] says how many there are in all and [`Fleet::incomplete`] whether some are
//! left out. A summary longer than [`MAX_SUMMARY_BYTES`] is skipped unread, at most
//! [`MAX_READ_BYTES`] are read in all, and a summary that is not in the format, or holds a number
//! that is not finite, is negative or is over [`MAX_RATE`], or a text longer than
//! [`MAX_TEXT_BYTES`] or more entries in a list than its cap, is refused whole: each is counted in
//! [`Fleet::unreadable`], none stops the others from being read. Anyone who can write to the
//! store can write there, so the view treats every summary as hostile input.
//!
//! An instance that stops publishing (killed, or cut off from the store) leaves the view
//! [`LIVE_MS`] after its last summary; the store forgets its summary then too.
//!
//! Publishing runs on the cluster's background thread, never on the call path.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The busiest resources an instance lists in its summary.
pub const MAX_RESOURCES: usize = 50;
/// An instance is in the view while its last summary is younger than this (by the store's clock).
pub const LIVE_MS: u64 = 4_500;
/// The most other instances one read of the store looks at (the freshest); the view also says
/// how many are live in all ([`Fleet::count`]).
pub const MAX_READ: usize = 100;
/// The longest summary read, in bytes: a longer one is skipped unread and counted in
/// [`Fleet::unreadable`]. A summary this library writes stays under it.
pub const MAX_SUMMARY_BYTES: usize = 8 * 1024;
/// The most bytes of summaries one read returns; the entries beyond are left out and the view
/// says it is [`incomplete`](Fleet::incomplete).
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// The longest text in a summary (a name, a host, a resource, an endpoint), in bytes. An
/// instance shortens its own longer texts (ending them with `…`); a summary with a longer one
/// is refused.
pub const MAX_TEXT_BYTES: usize = 200;
/// The most open breakers, ejected endpoints or kinds of block a summary lists (each).
pub const MAX_LISTED: usize = 16;
/// The largest rate a summary may hold, per second: a larger one (as `1e308`, whose sums are
/// infinite) refuses the summary.
pub const MAX_RATE: f64 = 1e12;

/// The fleet as the last read of the store saw it.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Fleet {
    /// The instances read, by id: this instance and at most [`MAX_READ`] others.
    pub instances: Vec<FleetInstance>,
    /// Every resource an instance listed, with the fleet's sums, busiest first.
    pub resources: Vec<FleetResource>,
    /// The live instances in the store, this one included (may be more than
    /// [`instances`](Self::instances) holds).
    pub count: usize,
    /// Entries the last read skipped: too long, not in the format, or holding a number or text
    /// out of bounds.
    pub unreadable: usize,
    /// Whether live instances were left out of [`instances`](Self::instances): more than
    /// [`MAX_READ`], or more than [`MAX_READ_BYTES`] of summaries.
    pub incomplete: bool,
    /// Whether the view is only this instance's own summary: the store has not been read yet,
    /// or could not be read at the last try.
    pub own_only: bool,
}

/// One instance's summary.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FleetInstance {
    /// Its id in the store's set of instances ([`ClusterStatus::instance_id`](super::ClusterStatus::instance_id)).
    pub id: String,
    /// Its name ([`ClusterBuilder::instance_name`](super::ClusterBuilder::instance_name); by
    /// default `<host>-<pid>`).
    pub name: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// A fingerprint of the rules it has in force: instances with other rules than the rest of
    /// the fleet show another value.
    pub rules_version: String,
    /// The version of the rule document it watches that is in force there
    /// ([`WatchStatus::version`](crate::rules::source::WatchStatus::version)); `None` when it
    /// runs no watcher.
    pub rules_source_version: Option<u64>,
    /// Its cluster state (`connected`, `degraded` or `fallback`) when it published.
    pub cluster_state: String,
    /// How long ago it published, by the store's clock, in milliseconds.
    pub last_seen_ms: u64,
    /// Its admitted calls per second, all resources together.
    pub pass_qps: f64,
    /// Its blocked calls per second, all resources together.
    pub block_qps: f64,
    /// Its blocked calls per second by the kind of rule that blocked them (the names of
    /// [`BlockTotals::RULES`](crate::metrics::BlockTotals::RULES)); kinds that blocked
    /// nothing are left out.
    pub blocked_by: BTreeMap<String, f64>,
    /// Calls per second its shadow rules would have refused (none was).
    pub shadow_would_block_qps: f64,
    /// Its resources whose circuit breaker is open (at most [`MAX_LISTED`]).
    pub breakers_open: Vec<String>,
    /// The endpoints its outlier rules keep ejected (at most [`MAX_LISTED`]).
    pub ejected: Vec<FleetEjection>,
    /// Whether this is the instance that read the view (its summary comes from its memory).
    pub this_instance: bool,
    /// Its busiest resources (at most [`MAX_RESOURCES`]).
    pub resources: Vec<FleetResource>,
}

/// An endpoint an instance's outlier rule keeps ejected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetEjection {
    /// The outbound resource.
    pub resource: String,
    /// The endpoint ejected.
    pub endpoint: String,
}

impl FleetEjection {
    /// `endpoint` of `resource`, ejected.
    pub fn new(resource: impl Into<String>, endpoint: impl Into<String>) -> FleetEjection {
        FleetEjection {
            resource: resource.into(),
            endpoint: endpoint.into(),
        }
    }
}

/// A resource's traffic: one instance's, or the fleet's sum.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FleetResource {
    /// The resource's name.
    pub resource: String,
    /// Admitted calls per second.
    pub pass_qps: f64,
    /// Blocked calls per second.
    pub block_qps: f64,
    /// How many instances report it (1 in an instance's own list).
    pub instances: usize,
}

/// The view, and when it was last asked for.
struct Shared {
    view: Option<Fleet>,
    asked: Option<Instant>,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    view: None,
    asked: None,
});

/// How long after the last [`fleet`] call the view is still read from the store.
pub(crate) const ASKED_FOR: Duration = Duration::from_secs(30);

/// The fleet as the last read of the store saw it (refreshed once a second while a
/// [`Cluster`](super::Cluster) is started, the store answers and the view is asked for);
/// `None` before the first summary. The store is read only while this is called: the first
/// call after a quiet spell of 30 s returns `None` (or only this instance, see
/// [`Fleet::own_only`]), and the fleet about a second later. While the store is away the view
/// is the last one read: check [`Cluster::status`](super::Cluster::status) for whether it is
/// current.
pub fn fleet() -> Option<Fleet> {
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.asked = Some(Instant::now());
    shared.view.clone()
}

/// Whether the view was asked for within [`ASKED_FOR`].
pub(crate) fn asked_for() -> bool {
    let shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.asked.is_some_and(|at| at.elapsed() < ASKED_FOR)
}

/// Replaces the view with the one read now.
pub(crate) fn set_view(view: Option<Fleet>) {
    SHARED.lock().unwrap_or_else(PoisonError::into_inner).view = view;
}

/// Escapes a text for the summary's format: tabs and line ends (and the escape) as `\t`, `\n`,
/// `\r`, `\\`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// The text an escaped one stands for; `None` if it is longer than [`MAX_TEXT_BYTES`] or ends
/// half-way through an escape.
fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT_BYTES));
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        let c = if c == '\\' {
            match chars.next()? {
                't' => '\t',
                'n' => '\n',
                'r' => '\r',
                other => other,
            }
        } else {
            c
        };
        out.push(c);
        if out.len() > MAX_TEXT_BYTES {
            return None;
        }
    }
    Some(out)
}

/// `text` cut to at most [`MAX_TEXT_BYTES`] (at a character's boundary, ending with `…`).
pub(crate) fn shorten(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A rate as the summary writes it (anything not finite or negative as 0).
fn rate(value: f64) -> f64 {
    if value.is_finite() {
        value.clamp(0.0, MAX_RATE)
    } else {
        0.0
    }
}

/// One instance's summary in the store's format: a first line with the instance's own fields,
/// then a line per listed item, fields separated by tabs: `k` a kind of block and its rate, `o`
/// an open breaker, `e` an ejected endpoint, `r` a resource's traffic. Texts are cut to
/// [`MAX_TEXT_BYTES`] and lists to their caps; the lists take at most half of
/// [`MAX_SUMMARY_BYTES`] and the resources the rest (the first line is at most about 1.7 KB:
/// four texts of at most 400 bytes escaped), so a summary always fits.
pub(crate) fn encode(instance: &FleetInstance) -> String {
    let text = |t: &str| escape(&shorten(t));
    let mut out = format!(
        "v2\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        text(&instance.name),
        text(&instance.host),
        instance.pid,
        text(&instance.rules_version),
        instance
            .rules_source_version
            .map_or_else(|| "-".to_owned(), |v| v.to_string()),
        text(&instance.cluster_state),
        rate(instance.pass_qps),
        rate(instance.block_qps),
        rate(instance.shadow_would_block_qps),
    );
    // The lists take at most half of the summary, the resources the rest; whole lines only.
    let push = |out: &mut String, line: String, cap: usize| {
        if out.len() + line.len() <= cap {
            out.push_str(&line);
        }
    };
    let half = MAX_SUMMARY_BYTES / 2;
    for (kind, qps) in instance.blocked_by.iter().take(MAX_LISTED) {
        push(
            &mut out,
            format!("k\t{}\t{}\n", text(kind), rate(*qps)),
            half,
        );
    }
    for resource in instance.breakers_open.iter().take(MAX_LISTED) {
        push(&mut out, format!("o\t{}\n", text(resource)), half);
    }
    for e in instance.ejected.iter().take(MAX_LISTED) {
        let line = format!("e\t{}\t{}\n", text(&e.resource), text(&e.endpoint));
        push(&mut out, line, half);
    }
    for r in instance.resources.iter().take(MAX_RESOURCES) {
        let line = format!(
            "r\t{}\t{}\t{}\n",
            text(&r.resource),
            rate(r.pass_qps),
            rate(r.block_qps)
        );
        push(&mut out, line, MAX_SUMMARY_BYTES);
    }
    out
}

/// A rate read back: finite, not negative, at most [`MAX_RATE`]; else `None`.
fn checked_rate(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && (0.0..=MAX_RATE).contains(&value)).then_some(value)
}

/// An instance's summary read back; `None` if it is not in the format (another version, or
/// anything out of bounds: see the [module docs](self)).
pub(crate) fn decode(id: &str, age_ms: u64, text: &str) -> Option<FleetInstance> {
    if text.len() > MAX_SUMMARY_BYTES || id.len() > MAX_TEXT_BYTES {
        return None;
    }
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next()?.split('\t').collect();
    let [version, name, host, pid, rules, source_version, state, pass, block, shadow] =
        head.as_slice()
    else {
        return None;
    };
    if *version != "v2" {
        return None;
    }
    let mut instance = FleetInstance {
        id: id.to_owned(),
        name: unescape(name)?,
        host: unescape(host)?,
        pid: pid.parse().ok()?,
        rules_version: unescape(rules)?,
        rules_source_version: match *source_version {
            "-" => None,
            v => Some(v.parse().ok()?),
        },
        cluster_state: unescape(state)?,
        last_seen_ms: age_ms,
        pass_qps: checked_rate(pass)?,
        block_qps: checked_rate(block)?,
        shadow_would_block_qps: checked_rate(shadow)?,
        ..FleetInstance::default()
    };
    for line in lines {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["k", kind, qps] if instance.blocked_by.len() < MAX_LISTED => {
                instance
                    .blocked_by
                    .insert(unescape(kind)?, checked_rate(qps)?);
            }
            ["o", resource] if instance.breakers_open.len() < MAX_LISTED => {
                instance.breakers_open.push(unescape(resource)?);
            }
            ["e", resource, endpoint] if instance.ejected.len() < MAX_LISTED => {
                instance
                    .ejected
                    .push(FleetEjection::new(unescape(resource)?, unescape(endpoint)?));
            }
            ["r", resource, pass, block] if instance.resources.len() < MAX_RESOURCES => {
                instance.resources.push(FleetResource {
                    resource: unescape(resource)?,
                    pass_qps: checked_rate(pass)?,
                    block_qps: checked_rate(block)?,
                    instances: 1,
                });
            }
            // A list over its cap, or a line not in the format.
            _ => return None,
        }
    }
    Some(instance)
}

/// The fleet of these instances: the resources summed over the instances that list them.
pub(crate) fn view(mut instances: Vec<FleetInstance>) -> Fleet {
    instances.sort_by(|a, b| a.id.cmp(&b.id));
    let mut sums: BTreeMap<&str, FleetResource> = BTreeMap::new();
    for r in instances.iter().flat_map(|i| &i.resources) {
        let sum = sums.entry(&r.resource).or_insert_with(|| FleetResource {
            resource: r.resource.clone(),
            ..FleetResource::default()
        });
        sum.pass_qps += r.pass_qps;
        sum.block_qps += r.block_qps;
        sum.instances += 1;
    }
    let mut resources: Vec<FleetResource> = sums.into_values().collect();
    resources.sort_by(|a, b| {
        let (ta, tb) = (a.pass_qps + a.block_qps, b.pass_qps + b.block_qps);
        tb.total_cmp(&ta).then_with(|| a.resource.cmp(&b.resource))
    });
    Fleet {
        count: instances.len(),
        instances,
        resources,
        ..Fleet::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, resources: &[(&str, f64, f64)]) -> FleetInstance {
        FleetInstance {
            id: id.to_owned(),
            name: "checkout\ta".to_owned(),
            host: "h\tost".to_owned(),
            pid: 7,
            rules_version: "abc".to_owned(),
            rules_source_version: Some(12),
            cluster_state: "connected".to_owned(),
            pass_qps: resources.iter().map(|r| r.1).sum(),
            block_qps: resources.iter().map(|r| r.2).sum(),
            blocked_by: [
                ("flow".to_owned(), 2.5),
                ("circuit_breaker".to_owned(), 0.5),
            ]
            .into(),
            shadow_would_block_qps: 4.0,
            breakers_open: vec!["pay\\ments".to_owned()],
            ejected: vec![FleetEjection::new("pay", "10.0.0.1:80")],
            resources: resources
                .iter()
                .map(|&(resource, pass_qps, block_qps)| FleetResource {
                    resource: resource.to_owned(),
                    pass_qps,
                    block_qps,
                    instances: 1,
                })
                .collect(),
            ..FleetInstance::default()
        }
    }

    #[test]
    fn a_summary_reads_back_as_written_whatever_the_names_hold() {
        let one = instance("i1", &[("GET /a\tb\\c\nd", 10.5, 1.0), ("x", 0.0, 2.0)]);
        assert_eq!(decode("i1", 0, &encode(&one)), Some(one));
        let unwatched = FleetInstance {
            rules_source_version: None,
            ..instance("i2", &[])
        };
        assert_eq!(decode("i2", 0, &encode(&unwatched)), Some(unwatched));
        assert_eq!(decode("i1", 0, "v1\told format"), None);
        assert_eq!(decode("i1", 0, ""), None);
    }

    /// The summary's first line with `pass` as the pass rate, then `rest`.
    fn with(pass: &str, rest: &str) -> String {
        format!("v2\tn\th\t1\tabc\t-\tconnected\t{pass}\t0\t0\n{rest}")
    }

    #[test]
    fn a_number_that_is_not_finite_negative_or_huge_refuses_the_summary() {
        assert!(decode("i", 0, &with("12.5", "r\tapi\t3\t0\n")).is_some());
        for bad in [
            "NaN", "nan", "inf", "-inf", "infinity", "1e308", "-1", "-0.5", "", "x",
        ] {
            assert_eq!(decode("i", 0, &with(bad, "")), None, "pass rate {bad:?}");
            let in_resource = with("1", &format!("r\tapi\t{bad}\t0\n"));
            assert_eq!(decode("i", 0, &in_resource), None, "resource rate {bad:?}");
            let in_kind = with("1", &format!("k\tflow\t{bad}\n"));
            assert_eq!(decode("i", 0, &in_kind), None, "kind rate {bad:?}");
        }
        assert_eq!(
            decode("i", 0, &with("1", "r\tapi\t1\n")),
            None,
            "a field missing"
        );
        assert_eq!(
            decode("i", 0, &with("1", "z\tunknown\n")),
            None,
            "another line"
        );
        // The writer never writes such numbers, whatever its statistics hold.
        let mut odd = instance("i", &[("api", f64::NAN, f64::INFINITY)]);
        odd.pass_qps = -3.0;
        odd.block_qps = 1e300;
        let back = decode("i", 0, &encode(&odd)).expect("its own summary reads back");
        assert_eq!((back.pass_qps, back.block_qps), (0.0, MAX_RATE));
        assert_eq!(
            (back.resources[0].pass_qps, back.resources[0].block_qps),
            (0.0, 0.0)
        );
    }

    #[test]
    fn texts_and_lists_over_their_caps_are_cut_by_the_writer_and_refused_by_the_reader() {
        let long = "é".repeat(MAX_TEXT_BYTES);
        let mut big = instance("i", &[(long.as_str(), 1.0, 0.0)]);
        big.name = long.clone();
        big.breakers_open = (0..MAX_LISTED + 5).map(|i| format!("b{i}")).collect();
        let back = decode("i", 0, &encode(&big)).expect("reads back");
        assert!(back.name.len() <= MAX_TEXT_BYTES && back.name.ends_with('…'));
        assert!(back.resources[0].resource.len() <= MAX_TEXT_BYTES);
        assert_eq!(back.breakers_open.len(), MAX_LISTED);

        let too_long = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(
            decode("i", 0, &with("1", &format!("r\t{too_long}\t1\t0\n"))),
            None
        );
        let many: String = (0..=MAX_LISTED).map(|i| format!("o\tb{i}\n")).collect();
        assert_eq!(decode("i", 0, &with("1", &many)), None);
        let oversize = with("1", &"r\tapi\t1\t0\n".repeat(MAX_SUMMARY_BYTES / 10));
        assert!(oversize.len() > MAX_SUMMARY_BYTES);
        assert_eq!(decode("i", 0, &oversize), None);
    }

    #[test]
    fn a_summary_stays_under_its_byte_cap_whatever_it_is_given() {
        let name = "\\\t".repeat(MAX_TEXT_BYTES);
        let names: Vec<String> = (0..MAX_RESOURCES + 10)
            .map(|i| format!("{i}{name}"))
            .collect();
        let many: Vec<(&str, f64, f64)> = names.iter().map(|n| (n.as_str(), 1.0, 0.0)).collect();
        let mut big = instance("i", &many);
        big.host = name.clone();
        big.name = name.clone();
        big.rules_version = name.clone();
        big.cluster_state = name.clone();
        big.ejected = (0..MAX_LISTED)
            .map(|i| FleetEjection::new(format!("{i}{name}"), name.clone()))
            .collect();
        big.breakers_open = big.ejected.iter().map(|e| e.resource.clone()).collect();
        let text = encode(&big);
        assert!(text.len() <= MAX_SUMMARY_BYTES, "{}", text.len());
        let back = decode("i", 0, &text).expect("reads back");
        // The lists as far as half the summary, and resources beside them.
        assert!(!back.breakers_open.is_empty() && back.breakers_open.len() < MAX_LISTED);
        assert!(!back.resources.is_empty() && back.resources.len() < MAX_RESOURCES);
    }

    #[test]
    fn the_fleet_sums_each_resource_over_the_instances_that_list_it() {
        let fleet = view(vec![
            instance("b", &[("api", 10.0, 1.0), ("db", 5.0, 0.0)]),
            instance("a", &[("api", 20.0, 2.0)]),
        ]);
        assert_eq!(fleet.instances[0].id, "a");
        assert_eq!(fleet.count, 2);
        let api = &fleet.resources[0];
        assert_eq!(
            (api.resource.as_str(), api.pass_qps, api.block_qps),
            ("api", 30.0, 3.0)
        );
        assert_eq!(api.instances, 2);
        assert_eq!(fleet.resources[1].instances, 1);
    }

    #[test]
    fn a_summary_lists_at_most_the_busiest_resources_it_was_given() {
        let names: Vec<String> = (0..MAX_RESOURCES + 10).map(|i| format!("r{i}")).collect();
        let many: Vec<(&str, f64, f64)> = names.iter().map(|n| (n.as_str(), 1.0, 0.0)).collect();
        let text = encode(&instance("i", &many));
        assert_eq!(
            text.lines().filter(|l| l.starts_with("r\t")).count(),
            MAX_RESOURCES
        );
    }
}
