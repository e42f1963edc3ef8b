//! The dashboard's rule edits through a Redis rule source (`Dashboard::rules_source`), against a
//! real `redis-server`: `GET /api/rules` shows the source's document and version, a `PUT`
//! writes through compare-and-set and the watcher applies it, a stale `PUT` is `409` and changes
//! nothing, a bad one `422` and writes nothing.

use crate::harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use harness::{require, RedisServer};
use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::source::RedisSource;
use sentinel_runtime::rules::{self, FlowRule, RuleSet};

use crate::this_process;

const TOKEN: &str = "rule-source-dashboard-token";

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

fn rules_json(resource: &str, threshold: u32) -> String {
    format!("{{\"flow\": [{{\"resource\": \"{resource}\", \"threshold\": {threshold}}}]}}")
}

fn wait_for_flow(resource: &str, threshold: u32) {
    let want = vec![FlowRule::qps(resource, f64::from(threshold))];
    let start = Instant::now();
    while rules::flow_rules() != want {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "the edit was not applied within 2 s: {:?}",
            rules::flow_rules()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn dashboard_edits_go_through_the_source_and_a_stale_edit_is_a_conflict() {
    require("redis-server").map_or((), |()| {
        let _running = this_process();
        let server = RedisServer::start(&[]);
        let source = RedisSource::new(&server.url(), "dash:rules")
            .expect("a source")
            .poll_every(Duration::from_millis(200));
        rules::load_flow_rules(vec![FlowRule::qps("dash-local", 5.0)]).expect("local rules");
        let watcher = rules::watch_source(source.clone()).expect("the watcher");
        let refused = Dashboard::new()
            .rules_file("rules.yaml")
            .rules_source(source.clone())
            .start();
        assert!(refused.is_err(), "a rules file and a rules source at once");
        let dash = Dashboard::new()
            .bind("127.0.0.1:0".parse().expect("an address"))
            .token(TOKEN)
            .rules_source(source.clone())
            .start()
            .expect("the dashboard");
        let addr = dash.local_addr();

        // No document yet: the rules in force, with a version the first edit names.
        let (status, etag, body) = request(addr, "GET", None, "");
        assert_eq!((status, etag.as_deref()), (200, Some("\"v0\"")), "{body}");
        assert!(body.contains("dash-local"), "{body}");

        let (status, etag, body) =
            request(addr, "PUT", Some("\"v0\""), &rules_json("dash-fleet", 9));
        assert_eq!(status, 200, "{body}");
        let first = source.get().expect("a read").expect("the document");
        assert_eq!(etag, Some(format!("\"v{}\"", first.version)));
        wait_for_flow("dash-fleet", 9);
        assert_eq!(watcher.status().version, first.version);

        // Another instance writes; this page's version is stale now.
        let second = source
            .put(&rules_json("dash-other", 10), Some(first.version))
            .expect("another instance's edit");
        let (status, etag, body) = request(addr, "GET", None, "");
        assert_eq!((status, etag), (200, Some(format!("\"v{second}\""))));
        assert!(body.contains("dash-other"), "{body}");
        let stale = format!("\"v{}\"", first.version);
        let (status, etag, body) =
            request(addr, "PUT", Some(&stale), &rules_json("dash-stale", 11));
        assert_eq!(
            (status, etag),
            (409, Some(format!("\"v{second}\""))),
            "{body}"
        );
        // A bad edit on the current version: refused with its field, nothing written.
        let current = format!("\"v{second}\"");
        let (status, _, body) = request(
            addr,
            "PUT",
            Some(&current),
            &rules_json("dash-bad", 0).replace(": 0", ": -1"),
        );
        assert_eq!(status, 422, "{body}");
        assert!(body.contains("threshold"), "{body}");
        let kept = source.get().expect("a read").expect("the document");
        assert_eq!(
            (kept.version, kept.bytes),
            (second, rules_json("dash-other", 10).into_bytes())
        );
        wait_for_flow("dash-other", 10);

        drop(dash);
        drop(watcher);
        rules::load(RuleSet::new()).expect("clear the rules");
    })
}
