//! Rules kept in Redis (`rules::source::RedisSource`) against a real `redis-server` (and a
//! real Redis Cluster), started here on free loopback ports and killed at the end: a document
//! at start is applied, each `put` is applied by the watcher, a stale `put` is a conflict, bad
//! documents are refused with their field and line while the last good rules stay, and a Redis
//! that goes away and comes back leaves the rules in force, then is read again. Never silently
//! without rules: a missing key and a Redis down at start are said at once (status and
//! event), the watcher starts all the same and loads the document once there is one, and a
//! document without rules written over one with rules warns that every rule was removed.
//!
//! Without `redis-server` on PATH the tests are skipped with a line saying how to install it;
//! with `SENTINEL_REQUIRE_SERVERS=1` that is a failure. Every wait polls for its condition with
//! a deadline; the watchers poll Redis every 200 ms.

use crate::harness;

use std::io::{Read as _, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use harness::{require, RedisCluster, RedisServer};
use sentinel_runtime::dashboard::{Dashboard, DashboardHandle};
use sentinel_runtime::rules::source::{RedisSource, RuleSource, SourceError};
use sentinel_runtime::rules::{self, FlowRule, RuleSet, RuleWatcher, WatchStatus};

use crate::this_process;

/// How long a change may take to reach a watcher: the bound for the fleet.
const APPLIED_WITHIN: Duration = Duration::from_secs(2);
/// The watchers' poll (the safety net for a change not announced).
const POLL: Duration = Duration::from_millis(200);

fn doc(resource: &str, threshold: u32) -> String {
    format!("flow:\n  - resource: {resource}\n    threshold: {threshold}\n")
}

fn flow(resource: &str, threshold: u32) -> Vec<FlowRule> {
    vec![FlowRule::qps(resource, f64::from(threshold))]
}

/// Waits (at most `within`) until `done(status)`; fails with the status and the rules in force.
fn wait_for(
    watcher: &RuleWatcher,
    what: &str,
    within: Duration,
    done: impl Fn(&WatchStatus) -> bool,
) -> WatchStatus {
    let start = Instant::now();
    loop {
        let status = watcher.status();
        if done(&status) {
            return status;
        }
        assert!(
            start.elapsed() < within,
            "timed out after {within:?} waiting for {what}; status: {status:?}; flow rules in \
             force: {:?}",
            rules::flow_rules()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// `redis-cli -p port -x args...` with `stdin` as the last argument (raw bytes).
fn cli_stdin(port: u16, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-x"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run redis-cli");
    child
        .stdin
        .take()
        .expect("redis-cli's stdin")
        .write_all(stdin)
        .expect("write to redis-cli");
    let out = child.wait_with_output().expect("redis-cli's output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes `bytes` as the document at `version` by hand, as a tool bypassing `put` would, and
/// announces it only if `announce`.
fn write_by_hand(
    server: &RedisServer,
    source: &RedisSource,
    bytes: &[u8],
    version: u64,
    announce: bool,
) {
    let (document, version_key, channel) = source.keys();
    cli_stdin(server.port, &["SET", document], bytes);
    server.cli(&["SET", version_key, &version.to_string()]);
    if announce {
        server.cli(&["PUBLISH", channel, &version.to_string()]);
    }
}

#[test]
fn a_document_at_start_and_each_put_are_applied_and_a_stale_put_changes_nothing() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let server = RedisServer::start(&[]);
            let source = RedisSource::new(&server.url(), "shop:rules")
                .expect("a source")
                .poll_every(POLL);
            let first = source
                .put(&doc("src-start", 10), Some(0))
                .expect("the first document");

            let watcher = rules::watch_source(source.clone()).expect("the watcher");
            let status = watcher.status();
            assert_eq!((status.version, status.loads), (first, 1), "{status:?}");
            assert_eq!(rules::flow_rules(), flow("src-start", 10));

            // Another instance writes on top of the version it read.
            let editor = source.clone();
            let second = editor
                .put(&doc("src-next", 20), Some(first))
                .expect("the second document");
            assert!(second > first, "versions grow: {first} then {second}");
            wait_for(&watcher, "the second document", APPLIED_WITHIN, |s| {
                s.version == second
            });
            assert_eq!(rules::flow_rules(), flow("src-next", 20));

            // A write on top of the first version is stale: a conflict, nothing written.
            let stale = editor.put(&doc("src-stale", 30), Some(first));
            assert_eq!(
                stale,
                Err(SourceError::Conflict {
                    expected: first,
                    current: second
                })
            );
            let kept = source.get().expect("a read").expect("a document");
            assert_eq!(
                (kept.version, kept.bytes),
                (second, doc("src-next", 20).into_bytes())
            );
            // A document exists: "no document yet" is stale too.
            assert!(matches!(
                editor.put(&doc("src-stale", 30), Some(0)),
                Err(SourceError::Conflict { expected: 0, .. })
            ));
            assert_eq!(rules::flow_rules(), flow("src-next", 20));
            assert_eq!(watcher.status().loads, 2);

            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

#[test]
fn bad_documents_are_refused_with_their_field_and_line_and_the_last_good_rules_stay() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let server = RedisServer::start(&[]);
            let source = RedisSource::new(&server.url(), "bad-docs")
                .expect("a source")
                .poll_every(POLL);
            let good = source.put(&doc("src-good", 5), None).expect("a document");
            let watcher = rules::watch_source(source.clone()).expect("the watcher");

            // `put` checks first: nothing is written.
            let bad = "flow:\n  - resource: src-bad\n    threshold: -3\n";
            match source.put(bad, Some(good)) {
                Err(SourceError::Invalid(e)) => {
                    let entry = &e.entries()[0];
                    assert_eq!(
                        (entry.line, entry.field.as_deref()),
                        (Some(3), Some("threshold")),
                        "{e}"
                    );
                }
                other => panic!("a bad document was not refused: {other:?}"),
            }
            let too_large = format!("# {}\n{}", "x".repeat(1 << 20), doc("src-large", 1));
            assert!(matches!(
                source.put(&too_large, None),
                Err(SourceError::Invalid(_))
            ));
            assert_eq!(source.get().expect("a read").map(|d| d.version), Some(good));

            // Written by hand past `put`: refused by the watcher, reported, the rules stay.
            // What is written, and where the error must point (line, field), if at a field.
            type Case<'a> = (&'a str, Vec<u8>, Option<(usize, &'a str)>);
            let cases: [Case; 4] = [
                (
                    "a bad rule",
                    bad.as_bytes().to_vec(),
                    Some((3, "threshold")),
                ),
                (
                    "unparseable JSON",
                    b"{\"flow\": [\n  {\"resource\": \"x\",, }\n]}".to_vec(),
                    None,
                ),
                (
                    "not UTF-8",
                    b"flow:\n  - resource: \xff\xfe\n".to_vec(),
                    None,
                ),
                ("over 1 MiB", too_large.clone().into_bytes(), None),
            ];
            let (mut in_force, mut loads) = (good, 1);
            for (what, bytes, at) in cases {
                let version = in_force + 1;
                write_by_hand(&server, &source, &bytes, version, true);
                let status = wait_for(&watcher, what, APPLIED_WITHIN, |s| s.last_error.is_some());
                let err = status.last_error.expect("an error");
                if let Some((line, field)) = at {
                    let entry = &err.entries()[0];
                    assert_eq!(
                        (entry.line, entry.field.as_deref()),
                        (Some(line), Some(field)),
                        "{what}: {err}"
                    );
                }
                if what == "unparseable JSON" {
                    assert_eq!(err.entries()[0].line, Some(2), "{what}: {err}");
                }
                assert_eq!(
                    (status.version, status.loads),
                    (in_force, loads),
                    "{what}: {err}"
                );
                assert_eq!(rules::flow_rules(), flow("src-good", 5), "{what}");
                assert_eq!(err.path(), Some(watcher.path()));
                let result = sentinel_runtime::metrics::rule_files()
                    .into_iter()
                    .find(|(name, _)| name == watcher.path());
                assert_eq!(
                    result.map(|(_, ok)| ok),
                    Some(false),
                    "{what}: the source's result"
                );
                // Back to a good document: the error clears.
                in_force = source
                    .put(&doc("src-good", 5), None)
                    .expect("a good document");
                loads += 1;
                wait_for(&watcher, "the good document again", APPLIED_WITHIN, |s| {
                    s.version == in_force && s.last_error.is_none()
                });
            }
            let refused = sentinel_runtime::metrics::rule_files()
                .into_iter()
                .find(|(name, _)| name == watcher.path());
            assert_eq!(
                refused.map(|(_, ok)| ok),
                Some(true),
                "the source's last result"
            );
            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

#[test]
fn rules_stay_while_redis_is_away_and_a_change_made_meanwhile_is_picked_up() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let mut server = RedisServer::start(&[]);
            let source = RedisSource::new(&server.url(), "away")
                .expect("a source")
                .poll_every(POLL);
            let first = source
                .put(&doc("src-away", 7), Some(0))
                .expect("a document");
            let watcher = rules::watch_source(source.clone()).expect("the watcher");
            wait_for(&watcher, "the subscription", APPLIED_WITHIN, |s| !s.polling);

            server.kill();
            let status = wait_for(&watcher, "Redis to be away", APPLIED_WITHIN, |s| {
                s.last_error.is_some()
            });
            let err = status.last_error.expect("an error");
            assert!(err.to_string().contains("Redis is unreachable"), "{err}");
            assert!(status.polling, "no change messages while Redis is away");
            assert_eq!(status.version, first);
            assert_eq!(rules::flow_rules(), flow("src-away", 7));

            // Back empty (no persistence): the rules stay, the watcher subscribes again. Then a
            // tool writes a new document without announcing it: only the poll can find it.
            server.restart();
            let status = wait_for(&watcher, "the subscription again", APPLIED_WITHIN, |s| {
                !s.polling
            });
            assert_eq!(rules::flow_rules(), flow("src-away", 7), "{status:?}");
            let meanwhile = first + 1;
            write_by_hand(
                &server,
                &source,
                doc("src-back", 8).as_bytes(),
                meanwhile,
                false,
            );
            let status = wait_for(
                &watcher,
                "the document written meanwhile",
                APPLIED_WITHIN,
                |s| s.version == meanwhile,
            );
            assert_eq!((status.last_error, status.loads), (None, 2));
            assert_eq!(rules::flow_rules(), flow("src-back", 8));

            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

#[test]
fn a_redis_cluster_keeps_the_document_its_version_and_channel_in_one_slot() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let cluster = RedisCluster::start();
            let source = RedisSource::cluster(cluster.urls(), "fleet:rules")
                .expect("a source")
                .poll_every(POLL);
            let first = source
                .put(&doc("src-cluster", 3), Some(0))
                .expect("a document");
            let watcher = rules::watch_source(source.clone()).expect("the watcher");
            assert_eq!(watcher.status().version, first);
            assert_eq!(rules::flow_rules(), flow("src-cluster", 3));

            let (document, version, channel) = source.keys();
            let node = &cluster.nodes[0];
            let slots: Vec<String> = [document, version, channel]
                .iter()
                .map(|key| node.cli(&["CLUSTER", "KEYSLOT", key]).trim().to_owned())
                .collect();
            assert!(slots.iter().all(|s| s == &slots[0]), "{slots:?}");

            let second = source
                .clone()
                .put(&doc("src-cluster", 4), Some(first))
                .expect("a second document");
            wait_for(&watcher, "the second document", APPLIED_WITHIN, |s| {
                s.version == second
            });
            assert_eq!(rules::flow_rules(), flow("src-cluster", 4));
            assert!(matches!(
                source.put(&doc("src-cluster", 5), Some(first)),
                Err(SourceError::Conflict { .. })
            ));
            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

const TOKEN: &str = "rule-source-events-token-0123";

/// A dashboard on a free loopback port, for its event stream.
fn dashboard() -> DashboardHandle {
    Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(TOKEN)
        .start()
        .expect("the dashboard")
}

/// The dashboard's event stream, read as it comes.
struct Events {
    stream: TcpStream,
    seen: String,
}

impl Events {
    fn open(addr: SocketAddr) -> Events {
        let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("a read timeout");
        let req = format!(
            "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\n\r\n"
        );
        stream
            .write_all(req.as_bytes())
            .expect("ask for the events");
        let mut events = Events {
            stream,
            seen: String::new(),
        };
        events.until("the stream's head", Duration::from_secs(5), |s| {
            s.contains("\r\n\r\n")
        });
        assert!(events.seen.starts_with("HTTP/1.1 200"), "{}", events.seen);
        events
    }

    /// Reads until `done(everything read)`, for at most `within`; the time it took.
    fn until(&mut self, what: &str, within: Duration, done: impl Fn(&str) -> bool) -> Duration {
        let start = Instant::now();
        let mut buf = [0u8; 4096];
        while !done(&self.seen) {
            assert!(
                start.elapsed() < within,
                "no {what} within {within:?}; the events so far:\n{}",
                self.seen
            );
            match self.stream.read(&mut buf) {
                Ok(0) => panic!("the event stream ended; so far:\n{}", self.seen),
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("{e}; the events so far:\n{}", self.seen),
            }
        }
        start.elapsed()
    }
}

/// `GET path` of the dashboard, as JSON.
fn dashboard_get(addr: SocketAddr, path: &str) -> serde_json::Value {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).expect("send the request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The `rule_source` events read so far, as JSON.
fn rule_source_events(seen: &str) -> Vec<serde_json::Value> {
    seen.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .filter(|e| e["type"] == "rule_source")
        .collect()
}

#[test]
fn a_missing_key_is_said_at_once_and_a_document_without_rules_warns_it_removed_them_all() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let server = RedisServer::start(&[]);
            let dash = dashboard();
            let mut events = Events::open(dash.local_addr());
            rules::load(RuleSet::new()).expect("no rules");
            // The default poll: the key is said missing at once, not at the next poll.
            let source = RedisSource::new(&server.url(), "shop:mistyped").expect("a source");
            let watcher = rules::watch_source(source.clone()).expect("the watcher starts");
            let status = wait_for(&watcher, "the missing key said", APPLIED_WITHIN, |s| {
                s.last_error.is_some()
            });
            let err = status.last_error.expect("an error").to_string();
            assert!(
                err.contains("(key shop:mistyped)"),
                "the key is named: {err}"
            );
            assert!(err.contains("holds no rule document"), "{err}");
            assert!(!err.contains("invalid rule set"), "{err}");
            assert_eq!((status.loads, status.version), (0, 0));
            // The event says the same, within the dashboard's next sample.
            events.until("the missing key's event", APPLIED_WITHIN, |seen| {
                rule_source_events(seen).iter().any(|e| {
                    e["words"].as_str().is_some_and(|w| {
                        w.contains("(key shop:mistyped)") && w.contains("holds no rule document")
                    })
                })
            });
            // A page opened now is told too: the dashboard lists what watchers said lately.
            let system = dashboard_get(dash.local_addr(), "/api/system");
            let listed = system["rule_notices"]
                .as_array()
                .expect("rule_notices")
                .clone();
            let origin = source.origin().to_string_lossy().into_owned();
            assert!(
                listed
                    .iter()
                    .any(|n| n["words"] == err.as_str() && n["source"] == origin.as_str()),
                "{listed:?}"
            );
            // Still missing a poll later: said once, not again and again.
            thread::sleep(Duration::from_millis(1_300));
            assert_eq!(
                watcher.status().last_error.map(|e| e.to_string()),
                Some(err.clone())
            );

            // Written: loaded, the error gone.
            let first = source
                .put(&doc("src-mistyped", 4), Some(0))
                .expect("a document");
            wait_for(&watcher, "the document", APPLIED_WITHIN, |s| {
                s.version == first && s.last_error.is_none()
            });
            assert_eq!(rules::flow_rules(), flow("src-mistyped", 4));
            let said = rule_source_events(&events.seen).len();
            assert_eq!(said, 1, "the missing key said once: {}", events.seen);

            // A valid document without rules: applied, with a warning that every rule went.
            let empty = source.put("{}", Some(first)).expect("an empty document");
            wait_for(&watcher, "the empty document", APPLIED_WITHIN, |s| {
                s.version == empty && s.last_error.is_none()
            });
            assert_eq!(rules::flow_rules(), Vec::new());
            assert_eq!(watcher.status().loads, 2);
            events.until(
                "the warning that every rule was removed",
                APPLIED_WITHIN,
                |seen| {
                    rule_source_events(seen).iter().any(|e| {
                        e["words"].as_str().is_some_and(|w| {
                            w.contains(&format!("version {empty}"))
                                && w.contains("every rule was removed (1 were in force)")
                        })
                    })
                },
            );
            assert!(rule_source_events(&events.seen)
                .iter()
                .all(|e| e["source"].as_str() == Some(&*source.origin().to_string_lossy())));

            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

#[test]
fn a_redis_down_at_start_is_said_and_its_document_loaded_once_it_is_up() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let mut server = RedisServer::start(&[]);
            rules::load(RuleSet::new()).expect("no rules");
            // The default poll interval (5 s): the retries while Redis is away are not polls.
            let source = RedisSource::new(&server.url(), "down:rules").expect("a source");
            server.kill();
            let watcher = rules::watch_source(source.clone())
                .expect("the watcher starts while Redis is down");
            let status = watcher.status();
            let err = status
                .last_error
                .expect("the error is said at start")
                .to_string();
            assert!(err.contains("Redis is unreachable"), "{err}");
            assert!(err.contains("(key down:rules)"), "{err}");
            assert!(!err.contains("invalid rule set"), "{err}");
            assert_eq!((status.loads, status.version), (0, 0));
            assert!(rules::flow_rules().is_empty());

            // Up again, and the document there (written by a tool, unannounced: only the
            // watcher's reads can find it).
            server.restart();
            let version = 42;
            write_by_hand(
                &server,
                &source,
                doc("src-down", 6).as_bytes(),
                version,
                false,
            );
            let written = Instant::now();
            let status = wait_for(
                &watcher,
                "the document once Redis is up",
                Duration::from_secs(3),
                |s| s.version == version,
            );
            let took = written.elapsed();
            assert_eq!((status.loads, status.last_error), (1, None));
            assert_eq!(rules::flow_rules(), flow("src-down", 6));
            let _ = writeln!(
                std::io::stderr(),
                "in force {} ms after the document was written",
                took.as_millis()
            );

            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}

#[test]
fn a_key_of_another_type_is_said_as_a_refused_read_and_read_again_until_it_holds_a_document() {
    require("redis-server")
        .and_then(|()| require("redis-cli"))
        .map_or((), |()| {
            let _running = this_process();
            let server = RedisServer::start(&[]);
            rules::load(RuleSet::new()).expect("no rules");
            let source = RedisSource::new(&server.url(), "typed:rules").expect("a source");
            let (document, _, _) = source.keys();
            server.cli(&["HSET", document, "flow", "not a document"]);
            let watcher = rules::watch_source(source.clone()).expect("the watcher starts");
            let err = watcher
                .status()
                .last_error
                .expect("said at start")
                .to_string();
            assert!(err.contains("Redis refused the read"), "{err}");
            assert!(err.contains("WRONGTYPE"), "{err}");
            assert!(err.contains("(key typed:rules)"), "{err}");
            assert!(!err.contains("invalid rule set"), "{err}");

            // Fixed by hand, then written: read again within a second, not at the 5 s poll.
            server.cli(&["DEL", document]);
            let version = source
                .put(&doc("src-typed", 2), Some(0))
                .expect("a document");
            wait_for(&watcher, "the document", APPLIED_WITHIN, |s| {
                s.version == version && s.last_error.is_none()
            });
            assert_eq!(rules::flow_rules(), flow("src-typed", 2));
            drop(watcher);
            rules::load(RuleSet::new()).expect("clear the rules");
        })
}
