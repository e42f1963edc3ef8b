//! Rules kept in etcd (`rules::source::EtcdSource`) against a real etcd, started here on free
//! loopback ports with its own data directory and killed at the end. Two watchers in this
//! process (two `watch_source`s of clones of one source, each with its own watch of the key)
//! must each see every change; two instance processes (`cluster_instance --etcd`) must apply
//! each `etcdctl put` within 2 s.
//!
//! The watchers poll etcd only every 30 s (except in the fault test), so every change within
//! the bounds below reached them through etcd's watch API. Without `etcd` and `etcdctl` on PATH
//! the tests are skipped with a line saying how to install them; with
//! `SENTINEL_REQUIRE_SERVERS=1` that is a failure. Every wait polls for its condition with a
//! deadline.

use crate::etcd_harness::{require_etcd, EtcdServer};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::source::{EtcdSource, SourceError};
use sentinel_runtime::rules::{self, FlowRule, RuleSet, RuleWatcher, WatchStatus};

use crate::this_process;

/// How long a change may take to reach every watcher (the bound for the fleet).
const APPLIED_WITHIN: Duration = Duration::from_secs(2);
/// A poll so slow that whatever arrives sooner came through the watch.
const SLOW_POLL: Duration = Duration::from_secs(30);
const KEY: &str = "/sentinel/shop/rules";

fn doc(resource: &str, threshold: u32) -> String {
    format!("flow:\n  - resource: {resource}\n    threshold: {threshold}\n")
}

fn flow(resource: &str, threshold: u32) -> Vec<FlowRule> {
    vec![FlowRule::qps(resource, f64::from(threshold))]
}

/// Waits (at most `within`) until `done` holds for every watcher's status; fails with the
/// statuses and the rules in force. The statuses at the end.
fn wait_all(
    watchers: &[&RuleWatcher],
    what: &str,
    within: Duration,
    done: impl Fn(&WatchStatus) -> bool,
) -> Vec<WatchStatus> {
    let start = Instant::now();
    loop {
        let statuses: Vec<WatchStatus> = watchers.iter().map(|w| w.status()).collect();
        if statuses.iter().all(&done) {
            return statuses;
        }
        assert!(
            start.elapsed() < within,
            "timed out after {within:?} waiting for {what}; statuses: {statuses:?}; flow rules \
             in force: {:?}",
            rules::flow_rules()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn two_watchers(source: &EtcdSource) -> (RuleWatcher, RuleWatcher) {
    let a = rules::watch_source(source.clone()).expect("the first watcher");
    let b = rules::watch_source(source.clone()).expect("the second watcher");
    (a, b)
}

#[test]
fn etcd_rules_reach_two_watchers_by_the_watch_a_stale_put_conflicts_and_bad_documents_are_refused()
{
    require_etcd().map_or((), |()| {
        let _running = this_process();
        let started = Instant::now();
        let etcd = EtcdServer::start();
        let source = EtcdSource::new([etcd.url()], KEY)
            .expect("a source")
            .poll_every(SLOW_POLL);
        assert!(matches!(
            EtcdSource::new(["https://127.0.0.1:2379"], KEY),
            Err(SourceError::Config { field: "url", .. })
        ));
        assert!(matches!(
            EtcdSource::new(Vec::<String>::new(), KEY),
            Err(SourceError::Config { field: "url", .. })
        ));
        assert!(matches!(
            EtcdSource::new([etcd.url()], " "),
            Err(SourceError::Config { field: "key", .. })
        ));

        // The key is empty: the watchers start, load nothing, and the rules in force stay.
        // Never silently: each watcher's status says the key holds no document, naming it.
        rules::load_flow_rules(flow("etcd-local", 5)).expect("local rules");
        let (a, b) = two_watchers(&source);
        let statuses = wait_all(&[&a, &b], "the watches", APPLIED_WITHIN, |s| {
            !s.polling && s.last_error.is_some()
        });
        for s in &statuses {
            assert_eq!((s.version, s.loads), (0, 0), "{s:?}");
            let said = s
                .last_error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(
                said.contains(KEY) && said.contains("no rule document"),
                "{said}"
            );
        }
        assert_eq!(rules::flow_rules(), flow("etcd-local", 5));
        assert_eq!(source.get(), Ok(None));

        // An operator's `etcdctl put`: applied by both, its version the key's mod revision.
        // (The read each watcher makes once its watch is in place may find this one; every
        // later change reaches them through the watch alone.)
        etcd.put(KEY, doc("etcd-one", 10).as_bytes());
        let first = etcd.mod_revision(KEY);
        wait_all(&[&a, &b], "etcdctl's put", APPLIED_WITHIN, |s| {
            (s.version, s.loads) == (first, 1)
        });
        assert_eq!(rules::flow_rules(), flow("etcd-one", 10));
        let read = source.get().expect("a read").expect("the document");
        assert_eq!(
            (read.version, read.bytes),
            (first, doc("etcd-one", 10).into_bytes())
        );

        // A write by compare-and-swap on the version read: the new mod revision.
        let second = source
            .put(&doc("etcd-two", 20), Some(first))
            .expect("the second document");
        assert_eq!(second, etcd.mod_revision(KEY));
        assert!(second > first, "{first} then {second}");
        wait_all(&[&a, &b], "the source's put", APPLIED_WITHIN, |s| {
            s.version == second
        });
        assert_eq!(rules::flow_rules(), flow("etcd-two", 20));

        // Stale: on top of the first version, or "no document yet". Nothing is written.
        assert_eq!(
            source.put(&doc("etcd-stale", 30), Some(first)),
            Err(SourceError::Conflict {
                expected: first,
                current: second
            })
        );
        assert_eq!(
            source.put(&doc("etcd-stale", 30), Some(0)),
            Err(SourceError::Conflict {
                expected: 0,
                current: second
            })
        );
        // A bad document is refused before anything is written, naming its field and line.
        let negative = "flow:\n  - resource: etcd-bad\n    threshold: -3\n";
        match source.put(negative, Some(second)) {
            Err(SourceError::Invalid(e)) => {
                let entry = &e.entries()[0];
                assert_eq!(
                    (entry.line, entry.field.as_deref()),
                    (Some(3), Some("threshold")),
                    "{e}"
                );
            }
            other => panic!("a negative threshold was not refused: {other:?}"),
        }
        assert!(matches!(
            source.put("{\"flow\": [", Some(second)),
            Err(SourceError::Invalid(_))
        ));
        assert_eq!(etcd.mod_revision(KEY), second, "nothing was written");

        // Written past the source: each watcher refuses it, names the field, keeps the rules.
        etcd.put(KEY, negative.as_bytes());
        let bad = etcd.mod_revision(KEY);
        let statuses = wait_all(&[&a, &b], "the refusal", APPLIED_WITHIN, |s| {
            s.last_error.is_some()
        });
        for s in statuses {
            let err = s.last_error.expect("an error");
            let entry = &err.entries()[0];
            assert_eq!(
                (entry.line, entry.field.as_deref()),
                (Some(3), Some("threshold")),
                "{err}"
            );
            assert_eq!(err.path(), Some(a.path()));
            assert_eq!((s.version, s.loads), (second, 2), "{err}");
        }
        assert_eq!(rules::flow_rules(), flow("etcd-two", 20));
        // An editor still reads it, with its version, to write a fix on top of it.
        assert_eq!(source.get().expect("a read").map(|d| d.version), Some(bad));

        etcd.put(KEY, b"{\"flow\": [\n  {\"resource\": \"x\",, }\n]}");
        let statuses = wait_all(&[&a, &b], "the malformed document", APPLIED_WITHIN, |s| {
            s.last_error
                .as_ref()
                .is_some_and(|e| e.entries()[0].line == Some(2))
        });
        assert!(statuses.iter().all(|s| s.version == second), "{statuses:?}");
        assert_eq!(rules::flow_rules(), flow("etcd-two", 20));

        // Over 1 MiB (etcd takes up to 1.5 MiB): neither written by `put` nor loaded.
        let large = format!("# {}\n{}", "x".repeat(1 << 20), doc("etcd-large", 1));
        assert!(matches!(
            source.put(&large, None),
            Err(SourceError::Invalid(_))
        ));
        etcd.put(KEY, large.as_bytes());
        let statuses = wait_all(&[&a, &b], "the large document", APPLIED_WITHIN, |s| {
            s.last_error
                .as_ref()
                .is_some_and(|e| e.to_string().contains("over the limit"))
        });
        assert!(statuses.iter().all(|s| s.version == second), "{statuses:?}");
        assert!(matches!(source.get(), Err(SourceError::Invalid(_))));
        assert_eq!(rules::flow_rules(), flow("etcd-two", 20));

        // A good document again: applied, the errors clear.
        let good = source
            .put(&doc("etcd-good", 7), Some(etcd.mod_revision(KEY)))
            .expect("a good document");
        wait_all(&[&a, &b], "the good document", APPLIED_WITHIN, |s| {
            (s.version, s.loads, s.last_error.is_none()) == (good, 3, true)
        });
        assert_eq!(rules::flow_rules(), flow("etcd-good", 7));

        drop((a, b));
        rules::load(RuleSet::new()).expect("clear the rules");
        eprintln!("etcd source test: {:?}", started.elapsed());
    })
}

#[test]
fn etcd_keeps_the_rules_while_it_is_killed_and_applies_an_edit_after_a_restart() {
    require_etcd().map_or((), |()| {
        let _running = this_process();
        let started = Instant::now();
        let mut etcd = EtcdServer::start();
        let source = EtcdSource::new([etcd.url()], KEY)
            .expect("a source")
            .poll_every(Duration::from_secs(1));
        let first = source
            .put(&doc("etcd-kept", 4), Some(0))
            .expect("a document");
        let (a, b) = two_watchers(&source);
        wait_all(&[&a, &b], "the watches", APPLIED_WITHIN, |s| {
            !s.polling && s.version == first
        });

        etcd.kill();
        let statuses = wait_all(
            &[&a, &b],
            "each watcher to say etcd is away",
            Duration::from_secs(10),
            |s| s.last_error.is_some(),
        );
        for s in statuses {
            let err = s.last_error.expect("an error");
            assert!(err.to_string().contains("etcd is unreachable"), "{err}");
            assert!(
                err.to_string()
                    .contains("the last good rules stay in force"),
                "{err}"
            );
            assert_eq!((s.version, s.loads), (first, 1));
        }
        assert_eq!(rules::flow_rules(), flow("etcd-kept", 4));
        assert!(matches!(
            source.put(&doc("etcd-away", 5), Some(first)),
            Err(SourceError::Unavailable { .. })
        ));

        // Back on the same data: the document and its version are still there.
        etcd.restart();
        assert_eq!(etcd.mod_revision(KEY), first);
        let edited = Instant::now();
        let second = source
            .put(&doc("etcd-back", 6), Some(first))
            .expect("an edit after the restart");
        wait_all(
            &[&a, &b],
            "the edit after the restart",
            Duration::from_secs(3),
            |s| s.version == second && s.last_error.is_none(),
        );
        assert_eq!(rules::flow_rules(), flow("etcd-back", 6));
        eprintln!(
            "etcd fault test: the edit after the restart applied in {:?}; {:?} in all",
            edited.elapsed(),
            started.elapsed()
        );

        drop((a, b));
        rules::load(RuleSet::new()).expect("clear the rules");
    })
}

const TOKEN: &str = "etcd-dashboard-token";

/// One request on its own connection: the status, the `ETag` (if any) and the body.
fn request(
    addr: SocketAddr,
    method: &str,
    if_match: Option<&str>,
    body: &str,
) -> (u16, Option<String>, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let mut req = format!(
        "{method} /api/rules HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    );
    if let Some(tag) = if_match {
        req.push_str(&format!("If-Match: {tag}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).expect("send the request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head[9..12].parse().expect("a status");
    let etag = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("etag"))
        .map(|(_, v)| v.trim().to_owned());
    (status, etag, body.to_owned())
}

fn rules_json(resource: &str, threshold: i32) -> String {
    format!("{{\"flow\": [{{\"resource\": \"{resource}\", \"threshold\": {threshold}}}]}}")
}

#[test]
fn the_dashboard_edits_the_etcd_key_by_its_mod_revision_and_a_stale_edit_is_a_conflict() {
    require_etcd().map_or((), |()| {
        let _running = this_process();
        let started = Instant::now();
        let etcd = EtcdServer::start();
        let source = EtcdSource::new([etcd.url()], KEY)
            .expect("a source")
            .poll_every(SLOW_POLL);
        let (a, b) = two_watchers(&source);
        wait_all(&[&a, &b], "the watches", APPLIED_WITHIN, |s| !s.polling);
        let dash = Dashboard::new()
            .bind("127.0.0.1:0".parse().expect("an address"))
            .token(TOKEN)
            .rules_source(source.clone())
            .start()
            .expect("the dashboard");
        let addr = dash.local_addr();

        // No key yet: "v0"; the first edit creates it, its ETag the key's mod revision.
        let (status, etag, body) = request(addr, "GET", None, "");
        assert_eq!((status, etag.as_deref()), (200, Some("\"v0\"")), "{body}");
        let (status, etag, body) =
            request(addr, "PUT", Some("\"v0\""), &rules_json("etcd-dash", 9));
        assert_eq!(status, 200, "{body}");
        let first = etcd.mod_revision(KEY);
        assert_eq!(etag, Some(format!("\"v{first}\"")));
        wait_all(&[&a, &b], "the dashboard's edit", APPLIED_WITHIN, |s| {
            s.version == first
        });
        assert_eq!(rules::flow_rules(), flow("etcd-dash", 9));

        // A PUT with the current ETag applies everywhere.
        let (status, etag, body) = request(
            addr,
            "PUT",
            Some(&format!("\"v{first}\"")),
            &rules_json("etcd-dash", 12),
        );
        assert_eq!(status, 200, "{body}");
        let second = etcd.mod_revision(KEY);
        assert_eq!(etag, Some(format!("\"v{second}\"")));
        wait_all(&[&a, &b], "the second edit", APPLIED_WITHIN, |s| {
            s.version == second
        });
        assert_eq!(rules::flow_rules(), flow("etcd-dash", 12));

        // An operator writes meanwhile: the page's version is stale, its PUT a conflict.
        etcd.put(KEY, rules_json("etcd-operator", 3).as_bytes());
        let third = etcd.mod_revision(KEY);
        wait_all(&[&a, &b], "the operator's edit", APPLIED_WITHIN, |s| {
            s.version == third
        });
        let (status, etag, body) = request(
            addr,
            "PUT",
            Some(&format!("\"v{second}\"")),
            &rules_json("etcd-stale", 1),
        );
        assert_eq!(
            (status, etag),
            (409, Some(format!("\"v{third}\""))),
            "{body}"
        );
        // A bad edit on the current version: refused with its field.
        let (status, _, body) = request(
            addr,
            "PUT",
            Some(&format!("\"v{third}\"")),
            &rules_json("etcd-bad", -1),
        );
        assert_eq!(status, 422, "{body}");
        assert!(body.contains("threshold"), "{body}");
        // Neither the key nor the rules changed.
        assert_eq!(etcd.mod_revision(KEY), third);
        let kept = source.get().expect("a read").expect("the document");
        assert_eq!(kept.bytes, rules_json("etcd-operator", 3).into_bytes());
        assert_eq!(rules::flow_rules(), flow("etcd-operator", 3));
        for w in [&a, &b] {
            assert_eq!(w.status().version, third);
        }

        drop(dash);
        drop((a, b));
        rules::load(RuleSet::new()).expect("clear the rules");
        eprintln!("etcd dashboard test: {:?}", started.elapsed());
    })
}

/// Two instance processes (`cluster_instance --etcd URL --rules-source KEY`, each with its own
/// watcher and its own watch of the key) apply each `etcdctl put` within 2 s of it, by their
/// own report (`rules <threshold> <wall µs>`). Their poll is the default (5 s): a change seen
/// sooner came through the watch.
#[test]
fn two_processes_apply_each_etcdctl_put_within_2_s() {
    require_etcd().map_or((), |()| {
        let etcd = EtcdServer::start();
        const PROCESS_KEY: &str = "/sentinel/processes/rules";
        const RESOURCE: &str = "etcd-processes";
        let args: Vec<Vec<String>> = (0..2)
            .map(|_| {
                [
                    "--etcd",
                    &etcd.url(),
                    "--rules-source",
                    PROCESS_KEY,
                    "--resource",
                    RESOURCE,
                    "--threshold",
                    "1000",
                    "--offer",
                    "20",
                    "--secs",
                    "20",
                ]
                .iter()
                .map(|a| (*a).to_owned())
                .collect()
            })
            .collect();
        let mut instances = crate::harness::Instances::spawn(&args);
        instances.go(Duration::from_secs(10));
        for threshold in [7, 9] {
            let sent_us = crate::harness::wall_us();
            etcd.put(PROCESS_KEY, doc(RESOURCE, threshold).as_bytes());
            let mut seen = [false; 2];
            while !seen.iter().all(|s| *s) {
                let wanted = format!("rules {threshold} ");
                let line = instances
                    .line_within(Duration::from_secs(3), |l| l.text.starts_with(&wanted))
                    .unwrap_or_else(|| panic!("threshold {threshold} in both processes: {seen:?}"));
                let at: u128 = line
                    .text
                    .rsplit(' ')
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or(0);
                let took_ms = at.saturating_sub(sent_us) / 1000;
                eprintln!(
                    "process {} applied threshold {threshold} {took_ms} ms after the put",
                    line.instance
                );
                assert!(
                    took_ms <= 2000,
                    "process {} took {took_ms} ms",
                    line.instance
                );
                seen[line.instance] = true;
            }
        }
    })
}
