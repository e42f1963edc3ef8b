//! The dashboard over real HTTP on 127.0.0.1:0: every status code of its surface, the JSON after
//! known traffic (exact totals under the mock clock), rule edits applied and saved to the file,
//! and the event stream carrying blocks and a breaker transition.
//!
//! The client is a few lines of HTTP/1.1 over a `TcpStream`, so the tests choose every header
//! (a foreign `Host` included). Every test holds the mock clock, which also runs them one at a
//! time (the rules in force are process-wide).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::dashboard::{Dashboard, DashboardError, DashboardHandle};
use sentinel_runtime::rules::{
    self, CircuitBreakerRule, FlowRule, HotspotRule, OutlierRule, RuleSet,
};
use sentinel_runtime::{entry, metrics};

const TOKEN: &str = "test-token-0123456789abcdef";

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One request on its own connection (`Connection: close`); `Host` is the bound address
/// unless `headers` give one.
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &[("Authorization", &bearer())], "")
}

fn start(rules_file: Option<&std::path::Path>) -> DashboardHandle {
    let mut d = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .token(TOKEN);
    if let Some(f) = rules_file {
        d = d.rules_file(f);
    }
    d.start().unwrap()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sentinel-dash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn access_is_refused_without_the_token_from_foreign_hosts_and_on_unknown_paths() {
    let _clock = MockClock::install();
    let dash = start(None);
    let addr = dash.local_addr();
    assert_eq!(dash.url(), format!("http://{addr}/#token={TOKEN}"));

    // 401: no token, a wrong one, a cookie; on every path but the page's, known or not.
    for path in ["/api/resources", "/api/rules", "/api/events", "/nope"] {
        let r = request(addr, "GET", path, &[], "");
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    let wrong = request(
        addr,
        "GET",
        "/api/resources",
        &[("Authorization", "Bearer nope")],
        "",
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(request(addr, "GET", "/?token=nope", &[], "").status, 400);
    let cookie = format!("sentinel_dashboard_{}={TOKEN}", addr.port());
    assert_eq!(
        request(addr, "GET", "/api/resources", &[("Cookie", &cookie)], "").status,
        401
    );

    // 403: a Host that is not this server (DNS rebinding), even with the token.
    for host in [
        "evil.example",
        "evil.example:80",
        "localhost:1",
        "127.0.0.1.evil.example",
    ] {
        let r = request(
            addr,
            "GET",
            "/api/resources",
            &[("Host", host), ("Authorization", &bearer())],
            "",
        );
        assert_eq!(r.status, 403, "{host}");
    }
    let local = format!("localhost:{}", addr.port());
    let r = request(
        addr,
        "GET",
        "/api/resources",
        &[("Host", &local), ("Authorization", &bearer())],
        "",
    );
    assert_eq!(r.status, 200);

    // 404 and 405.
    assert_eq!(get(addr, "/nope").status, 404);
    assert_eq!(
        get(addr, "/api/resources/no-such-resource-here/history").status,
        404
    );
    assert_eq!(get(addr, "/assets/nope.js").status, 404);
    for (method, path, allow) in [
        ("DELETE", "/api/resources", "GET, HEAD"),
        ("POST", "/api/rules", "GET, HEAD, PUT"),
        ("PUT", "/", "GET, HEAD"),
        ("POST", "/api/events", "GET, HEAD"),
    ] {
        let r = request(addr, method, path, &[("Authorization", &bearer())], "");
        assert_eq!(r.status, 405, "{method} {path}");
        assert_eq!(r.header("allow"), Some(allow));
    }

    // The page and its assets hold no data: served without the token, with the headers.
    let page = request(addr, "GET", "/", &[], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>Sentinel dashboard</title>"));
    assert!(!page.body.contains(TOKEN));
    assert_eq!(page.header("set-cookie"), None);
    assert_eq!(
        page.header("content-security-policy"),
        Some("default-src 'self'")
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let api = get(addr, "/api/resources");
    assert_eq!(api.status, 200);
    assert_eq!(api.header("cache-control"), Some("no-store"));
    assert_eq!(
        api.header("content-security-policy"),
        Some("default-src 'self'")
    );
    assert_eq!(api.header("x-content-type-options"), Some("nosniff"));
    let js = request(addr, "GET", "/assets/uPlot.iife.min.js", &[], "");
    assert_eq!(js.status, 200);
    assert!(js.body.contains("uPlot"));

    // A change with a cookie alone is refused: the token header is required.
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Cookie", &cookie), ("If-Match", "\"0\"")],
        "{}",
    );
    assert_eq!(r.status, 401);

    // Stopping: the port is closed once the handle is dropped.
    drop(dash);
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening after drop"
    );
}

#[test]
fn non_loopback_addresses_and_unfit_tokens_are_refused() {
    let _clock = MockClock::install();
    let err = Dashboard::new()
        .bind("0.0.0.0:0".parse().unwrap())
        .start()
        .unwrap_err();
    assert!(matches!(err, DashboardError::NotLoopback(_)), "{err}");
    assert!(err.to_string().contains("allow_remote"));
    let remote = Dashboard::new()
        .bind("0.0.0.0:0".parse().unwrap())
        .allow_remote()
        .token(TOKEN)
        .start()
        .unwrap();
    let port = remote.local_addr().port();
    let loopback: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Still behind the Host check: a name given with allow_host would be needed.
    let r = request(
        loopback,
        "GET",
        "/api/resources",
        &[("Host", "10.1.2.3"), ("Authorization", &bearer())],
        "",
    );
    assert_eq!(r.status, 403);
    drop(remote);
    for bad in [
        "short",
        "has spaces but is long enough",
        "semi;colon;is;long;enough",
    ] {
        let err = Dashboard::new()
            .bind("127.0.0.1:0".parse().unwrap())
            .token(bad)
            .start()
            .unwrap_err();
        assert!(matches!(err, DashboardError::Token(_)), "{bad}: {err}");
    }
    let random = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap();
    assert_eq!(random.token().len(), 64);
    assert!(random.token().bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        request(
            random.local_addr(),
            "GET",
            "/api/resources",
            &[("X-Sentinel-Token", random.token())],
            ""
        )
        .status,
        200
    );
}

#[test]
fn resources_and_history_show_exact_totals_of_known_traffic() {
    const R: &str = "dash-json-orders";
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 5.0), FlowRule::concurrency(R, 3)]).unwrap();
    let dash = start(None);
    let addr = dash.local_addr();
    let second0 = sentinel_runtime::clock::now_nanos() / 1_000_000_000;

    // Second 0: 7 calls against a limit of 5 (2 blocked), 2 of the passes errors, each call
    // held 4 ms; one call still inside when the JSON is read.
    for i in 0..7u32 {
        if let Ok(e) = entry(R) {
            clock.advance(Duration::from_millis(4));
            if i.is_multiple_of(3) {
                e.set_error();
            }
        }
    }
    let inside = entry(R);
    assert!(inside.is_err(), "the limit of 5 is spent");
    let rows = get(addr, "/api/resources").json();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == R)
        .unwrap_or_else(|| panic!("{R} not in {rows}"));
    assert_eq!(row["pass_total"], 5);
    assert_eq!(row["block_total"], 3);
    assert_eq!(row["pass_qps"], 5.0);
    assert_eq!(row["block_qps"], 3.0);
    assert_eq!(row["error_qps"], 2.0);
    assert_eq!(row["error_total"], 2);
    assert_eq!(row["avg_rt_ms"], 4.0);
    assert_eq!(row["concurrency"], 0);
    assert_eq!(row["concurrency_limit"], 3);
    assert_eq!(row["breaker"], serde_json::Value::Null);
    assert_eq!(row["block_total_by_rule"]["flow"], 3);
    // An endpoint ejected by an outlier rule is listed with its resource.
    const O: &str = "dash-json-outlier";
    rules::load_outlier_rules(vec![OutlierRule::consecutive_errors(O, 1)]).unwrap();
    let call = sentinel_runtime::EntryBuilder::new(O)
        .endpoint("inv-a:80")
        .enter();
    call.unwrap().set_error();
    let rows = get(addr, "/api/resources").json();
    let outlier = rows.as_array().unwrap().iter().find(|r| r["resource"] == O);
    assert_eq!(outlier.unwrap()["ejected"], serde_json::json!(["inv-a:80"]));
    rules::load_outlier_rules(vec![]).unwrap();
    let stats = metrics::snapshot(R).unwrap();
    assert_eq!(row["pass_total"], stats.pass_total);

    // Seconds 1 and 3 (2 quiet): 2 passes each.
    for s in [1u64, 3] {
        clock.advance(Duration::from_secs(1));
        if s == 3 {
            clock.advance(Duration::from_secs(1));
        }
        drop(entry(R).unwrap());
        drop(entry(R).unwrap());
    }
    clock.advance(Duration::from_secs(1));
    let h = get(addr, &format!("/api/resources/{R}/history")).json();
    let points: Vec<(u64, u64, u64, u64)> = h["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["second"].as_u64().unwrap() - second0,
                p["pass"].as_u64().unwrap(),
                p["block"].as_u64().unwrap(),
                p["error"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        points,
        vec![(0, 5, 3, 2), (1, 2, 0, 0), (2, 0, 0, 0), (3, 2, 0, 0)],
        "now is second {}",
        h["now_second"].as_u64().unwrap() - second0
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn the_history_carries_what_shadow_rules_would_have_blocked_each_second() {
    const R: &str = "dash-history-shadow";
    let clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps(R, 2.0).shadow(true)]).unwrap();
    let dash = start(None);
    let addr = dash.local_addr();
    let second0 = sentinel_runtime::clock::now_nanos() / 1_000_000_000;
    // Second 0: 5 calls, 3 over the shadow limit of 2; second 1 quiet; second 2: 3 calls, 1
    // over. None is refused.
    for (second, calls) in [(0, 5), (2, 3)] {
        clock.advance(Duration::from_secs(second));
        for _ in 0..calls {
            drop(entry(R).unwrap());
        }
    }
    clock.advance(Duration::from_secs(1));
    let h = get(addr, &format!("/api/resources/{R}/history")).json();
    let points: Vec<(u64, u64, u64, u64)> = h["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["second"].as_u64().unwrap() - second0,
                p["pass"].as_u64().unwrap(),
                p["block"].as_u64().unwrap(),
                p["shadow_block"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        points,
        vec![(0, 5, 0, 3), (1, 0, 0, 0), (2, 3, 0, 1)],
        "now is second {}",
        h["now_second"].as_u64().unwrap() - second0
    );
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn the_busiest_200_of_more_resources_are_listed_with_the_count_of_all() {
    let clock = MockClock::install();
    clock.advance(Duration::from_secs(1));
    for i in 0..260 {
        drop(entry(&format!("dash-many-{i:03}")));
    }
    let busy = "dash-many-busiest";
    for _ in 0..50 {
        drop(entry(busy));
    }
    let dash = start(None);
    let r = get(dash.local_addr(), "/api/resources");
    let rows = r.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 200);
    assert_eq!(rows[0]["resource"], busy);
    let total: usize = r
        .header("x-sentinel-resources-total")
        .unwrap()
        .parse()
        .unwrap();
    assert!(total >= 261, "{total}");
}

#[test]
fn rule_edits_are_versioned_checked_applied_and_saved_to_the_file() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("rules");
    let file = dir.join("rules.yaml");
    let dash = start(Some(&file));
    let addr = dash.local_addr();
    let auth = bearer();

    let r = get(addr, "/api/rules");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let etag = r.header("etag").unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert_eq!(RuleSet::from_json(&r.body).unwrap(), RuleSet::default());

    let good = r#"{"flow": [{"resource": "dash-edit", "threshold": 3}],
                   "circuit_breaker": [{"resource": "dash-edit", "recovery": "5s",
                                        "strategy": {"type": "error_count", "threshold": 2}}]}"#;
    // 428 without If-Match; nothing applied.
    let r = request(addr, "PUT", "/api/rules", &[("Authorization", &auth)], good);
    assert_eq!(r.status, 428, "{}", r.body);
    assert_eq!(rules::current(), RuleSet::default());
    // 409 with a stale version.
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &auth), ("If-Match", "\"0\"")],
        good,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(rules::current(), RuleSet::default());
    // 422 with the field's error; nothing applied, no file written.
    let bad = r#"{"flow": [{"resource": "dash-edit", "threshold": -1}]}"#;
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &auth), ("If-Match", &etag)],
        bad,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let body = r.json();
    assert_eq!(body["problems"][0]["kind"], "flow");
    assert_eq!(body["problems"][0]["index"], 0);
    assert_eq!(body["problems"][0]["field"], "threshold");
    assert_eq!(rules::current(), RuleSet::default());
    assert!(!file.exists());
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &auth), ("If-Match", &etag)],
        "{not json",
    );
    assert_eq!(r.status, 422);
    assert!(
        r.json()["error"].as_str().unwrap().contains("line 1"),
        "{}",
        r.body
    );

    // 200: applied at once and saved (YAML, from the file's extension), nothing else left in
    // the directory.
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("X-Sentinel-Token", TOKEN), ("If-Match", &etag)],
        good,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let new_tag = r.header("etag").unwrap().to_owned();
    assert_ne!(new_tag, etag);
    let expected = RuleSet::from_json(good).unwrap();
    assert_eq!(rules::current(), expected);
    assert_eq!(rules::flow_rules(), vec![FlowRule::qps("dash-edit", 3.0)]);
    assert_eq!(RuleSet::from_path(&file).unwrap(), expected);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("flow:"), "{saved}");
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("rules.yaml")]);
    assert_eq!(
        get(addr, "/api/rules").header("etag"),
        Some(new_tag.as_str())
    );

    // The old version is stale now: a second editor gets a conflict, not an overwrite.
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &auth), ("If-Match", &etag)],
        "{}",
    );
    assert_eq!(r.status, 409);
    assert_eq!(rules::current(), expected);

    // YAML bodies too.
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[
            ("Authorization", &auth),
            ("If-Match", &new_tag),
            ("Content-Type", "application/yaml"),
        ],
        "flow:\n  - { resource: dash-edit, threshold: 9 }\n",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(rules::current().flow, vec![FlowRule::qps("dash-edit", 9.0)]);
    assert!(rules::current().circuit_breaker.is_empty());
    rules::load(RuleSet::default()).unwrap();
    drop(dash);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hotspot_exceptions_from_files_and_from_code_are_shown_and_round_trip() {
    let _clock = MockClock::install();
    let dir = temp_dir("exceptions");
    let file = dir.join("rules.json");
    // One exception from a rule file (its text is known), one from code by a `u64`'s hash, and
    // one from code as a string.
    let mut set = RuleSet::from_json(
        r#"{"hotspot": [{"resource": "dash-hot", "param_index": 0, "threshold": 2,
                         "exceptions": [{"value": "vip-7", "threshold": 50}]}]}"#,
    )
    .unwrap();
    set.hotspot.push(
        HotspotRule::qps("dash-hot-code", 0, 3.0)
            .exception(&42u64, 9.0)
            .exception_str("gold", 30.0),
    );
    rules::load(set.clone()).unwrap();
    let dash = start(Some(&file));
    let addr = dash.local_addr();

    let r = get(addr, "/api/rules");
    assert_eq!(r.status, 200, "{}", r.body);
    let etag = r.header("etag").unwrap().to_owned();
    let shown = r.json();
    let from_file = &shown["hotspot"][0]["exceptions"][0];
    assert_eq!(from_file["value"], "vip-7");
    assert_eq!(from_file["threshold"], 50.0);
    let by_hash = &shown["hotspot"][1]["exceptions"][0];
    assert!(by_hash.get("value").is_none(), "{by_hash}");
    let hash = by_hash["value_hash"].as_str().unwrap();
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    let key = by_hash["hash_key"].as_str().unwrap().to_owned();
    assert_eq!(key.len(), 8, "{key}");
    assert_eq!(by_hash["threshold"], 9.0);
    assert_eq!(shown["hotspot"][1]["exceptions"][1]["value"], "gold");

    // A hash written by another process (another key) is refused, naming the field; nothing
    // changes and no file is written.
    let other_key = if key == "00000000" {
        "00000001"
    } else {
        "00000000"
    };
    let foreign = r.body.replace(&key, other_key);
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &bearer()), ("If-Match", &etag)],
        &foreign,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("value_hash"), "{}", r.body);
    assert_eq!(rules::current(), set);
    assert!(!file.exists());

    // The text as shown, put back: applied unchanged (same version), saved, and the file reads
    // back to the same rules in this process.
    let shown_text = get(addr, "/api/rules").body;
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[("Authorization", &bearer()), ("If-Match", &etag)],
        &shown_text,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(rules::current(), set);
    assert_eq!(RuleSet::from_path(&file).unwrap(), set);
    let again = get(addr, "/api/rules");
    assert_eq!(again.status, 200);
    assert_eq!(again.json(), shown);

    rules::load(RuleSet::default()).unwrap();
    drop(dash);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_values_a_hotspot_rule_blocked_most_in_the_last_minute_are_shown_with_exact_counts() {
    let clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("dash-hot-top", 0, 1.0).exception_str("vip", 1.0)
    ])
    .unwrap();
    let dash = start(None);
    let addr = dash.local_addr();
    // The clock stands still: each value passes once, then every call of it is blocked.
    let calls = |value: &str, n: usize| {
        let passed = (0..n)
            .filter(|_| {
                sentinel_runtime::EntryBuilder::new("dash-hot-top")
                    .param(value)
                    .enter()
                    .is_ok()
            })
            .count();
        assert_eq!(passed, 1, "{value}");
    };
    calls("a", 5);
    calls("b", 3);
    calls("vip", 4);
    calls("c", 1);

    let shown = |addr| {
        let r = get(addr, "/api/system");
        assert_eq!(r.status, 200, "{}", r.body);
        let body = r.json();
        let rules: Vec<serde_json::Value> = body["hotspot"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resource"] == "dash-hot-top")
            .cloned()
            .collect();
        assert_eq!(rules.len(), 1, "{body}");
        rules[0].clone()
    };
    let rule = shown(addr);
    assert_eq!(rule["param_index"], 0);
    assert_eq!(rule["threshold"], 1.0);
    assert_eq!(rule["missed"], 0);
    let top = rule["top_blocked"].as_array().unwrap();
    // Most blocked first: a (4), vip (3, its text known from the rule's exception), b (2); c
    // was never blocked and is not listed.
    let counts: Vec<u64> = top.iter().map(|v| v["blocked"].as_u64().unwrap()).collect();
    assert_eq!(counts, vec![4, 3, 2], "{rule}");
    assert!(top[0]["value"].is_null(), "{rule}");
    assert_eq!(top[1]["value"], "vip", "{rule}");
    assert!(top[2]["value"].is_null(), "{rule}");
    for v in top {
        assert_eq!(v["error"], 0);
        let hash = v["value_hash"].as_str().unwrap();
        assert!(hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()));
    }
    assert_ne!(top[0]["value_hash"], top[2]["value_hash"]);

    // A minute later the last minute still holds them; two minutes later nothing.
    clock.advance(Duration::from_secs(60));
    let later = shown(addr);
    assert_eq!(later["top_blocked"], rule["top_blocked"]);
    clock.advance(Duration::from_secs(60));
    assert_eq!(shown(addr)["top_blocked"], serde_json::json!([]));

    rules::load(RuleSet::default()).unwrap();
    drop(dash);
}

#[test]
fn values_the_layer_supplied_are_shown_blocked_by_their_text() {
    use sentinel_runtime::tower::{ConnectInfo, SentinelLayer};
    use tower::ServiceExt;

    const ROUTE: &str = "GET:/dash-layer/{id}";
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_hotspot_rules(vec![HotspotRule::qps(ROUTE, 0, 1.0)]).unwrap();
    let app = axum::Router::new()
        .route("/dash-layer/{id}", axum::routing::get(|| async { "ok" }))
        .layer(SentinelLayer::new().client_ip(0));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let send = |peer: &str, n: usize| {
        let peer: SocketAddr = peer.parse().unwrap();
        let statuses: Vec<u16> = (0..n)
            .map(|_| {
                let mut request = axum::http::Request::get("/dash-layer/7")
                    .body(axum::body::Body::empty())
                    .unwrap();
                request.extensions_mut().insert(ConnectInfo(peer));
                let response = runtime.block_on(app.clone().oneshot(request)).unwrap();
                response.status().as_u16()
            })
            .collect();
        assert_eq!(
            statuses.iter().filter(|&&s| s == 200).count(),
            1,
            "{statuses:?}"
        );
    };
    send("10.9.8.7:1000", 4);
    send("[2001:db8:1:2:aaaa::1]:1000", 3);

    let dash = start(None);
    let r = get(dash.local_addr(), "/api/system");
    assert_eq!(r.status, 200, "{}", r.body);
    let body = r.json();
    let rule = body["hotspot"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == ROUTE)
        .cloned()
        .unwrap_or_else(|| panic!("{body}"));
    let shown: Vec<(String, u64)> = rule["top_blocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let text = v["value"].as_str().unwrap_or("<null>").to_owned();
            (text, v["blocked"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("10.9.8.7".to_owned(), 3),
            ("2001:db8:1:2::/64".to_owned(), 2)
        ],
        "the client's address, and an IPv6 client's /64, as the layer buckets them"
    );
    rules::load(RuleSet::default()).unwrap();
    drop(dash);
}

/// Reads the event stream until `done` says what arrived is enough, for at most 10 s.
struct Events {
    stream: TcpStream,
    seen: String,
}

impl Events {
    fn open(addr: SocketAddr) -> Events {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        write!(
            stream,
            "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\r\n",
            bearer()
        )
        .unwrap();
        let mut events = Events {
            stream,
            seen: String::new(),
        };
        // Subscribed once the answer has started.
        events.until(|s| s.contains("\r\n\r\n"));
        assert!(events.seen.starts_with("HTTP/1.1 200"), "{}", events.seen);
        assert!(events
            .seen
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream"));
        events
    }

    fn until(&mut self, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buf = [0u8; 4096];
        while !done(&self.seen) {
            assert!(
                Instant::now() < deadline,
                "timed out; the stream so far:\n{}",
                self.seen
            );
            match self.stream.read(&mut buf) {
                Ok(0) => panic!("stream ended; so far:\n{}", self.seen),
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn the_event_stream_carries_blocks_breaker_transitions_and_rule_refusals() {
    const R: &str = "dash-events-flaky";
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_circuit_breaker_rules(vec![CircuitBreakerRule::error_count(R, 2)
        .min_requests(1)
        .recovery(Duration::from_secs(5))])
    .unwrap();
    let dash = start(None);
    let mut events = Events::open(dash.local_addr());

    // Two errors open the breaker: the transition is sent as it happens.
    for _ in 0..2 {
        entry(R).unwrap().set_error();
    }
    events.until(|s| s.contains(r#""type":"breaker""#));
    assert!(
        events.seen.contains(&format!(r#""resource":"{R}""#)),
        "{}",
        events.seen
    );
    assert!(events.seen.contains(r#""from":"closed""#) && events.seen.contains(r#""to":"open""#));
    let row = get(dash.local_addr(), "/api/resources").json();
    let row = row
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == R)
        .unwrap()
        .clone();
    assert_eq!(row["breaker"], "open");
    let system = get(dash.local_addr(), "/api/system").json();
    let last = system["last_transitions"].as_array().unwrap();
    assert_eq!(last.len(), 1, "{system}");
    assert_eq!(last[0]["resource"], R);
    assert_eq!(
        (last[0]["from"].as_str(), last[0]["to"].as_str()),
        (Some("closed"), Some("open"))
    );

    // Three calls blocked by the open breaker: one `blocks` event at the next second's sample.
    for _ in 0..3 {
        assert!(entry(R).is_err());
    }
    events.until(|s| s.contains(r#""type":"blocks""#));
    assert!(
        events.seen.contains(&format!(
            r#"{{"blocked":3,"by_rule":{{"circuit_breaker":3}},"resource":"{R}"}}"#
        )),
        "{}",
        events.seen
    );

    // A refused load is an event too.
    assert!(rules::load_flow_rules(vec![FlowRule::qps(R, -1.0)]).is_err());
    events.until(|s| s.contains(r#""type":"rule_load""#));
    assert!(
        events.seen.contains(r#""kind":"flow","loaded":false"#),
        "{}",
        events.seen
    );

    // Stopping the dashboard ends the stream.
    drop(dash);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 1024];
    loop {
        assert!(Instant::now() < deadline, "the stream did not end");
        match events.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    rules::load(RuleSet::default()).unwrap();
}

#[test]
fn it_starts_inside_a_tokio_runtime_too() {
    let _clock = MockClock::install();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dash = runtime.block_on(async { start(None) });
    let addr = dash.local_addr();
    // The server is a task of that runtime: it answers while the runtime runs.
    assert_eq!(get(addr, "/api/resources").status, 200);
    drop(dash);
    drop(runtime);
    assert!(TcpStream::connect(addr).is_err());
}

/// The traffic of the rates tests, at one instant: `dash-rates` limited to 6 a second, 2 a
/// second per value of its first parameter, and a shadow limit of 2 a second. Value "a" 5
/// times (2 pass, 3 blocked by the hotspot rule), then 10 values once each (4 pass, 6 blocked
/// by the flow rule). Of the 6 passes, the shadow limit would have blocked 4.
pub(crate) fn rate_traffic(resource: &str) {
    let call = |value: &str| {
        sentinel_runtime::EntryBuilder::new(resource)
            .param(value)
            .enter()
            .is_ok()
    };
    let passed_a = (0..5).filter(|_| call("a")).count();
    let passed_others = (0..10).filter(|i| call(&format!("v{i}"))).count();
    assert_eq!((passed_a, passed_others), (2, 4));
}

/// The rules of the rates tests (see [`rate_traffic`]).
pub(crate) fn rate_rules(resource: &str) -> RuleSet {
    let mut set = RuleSet::default();
    set.flow = vec![
        FlowRule::qps(resource, 6.0),
        FlowRule::qps(resource, 2.0).shadow(true),
    ];
    set.hotspot = vec![HotspotRule::qps(resource, 0, 2.0)];
    set
}

#[test]
fn block_rates_by_kind_add_up_over_one_interval_and_every_limit_is_listed() {
    const R: &str = "dash-rates";
    let clock = MockClock::install();
    rules::load(rate_rules(R)).unwrap();
    drop(
        sentinel_runtime::EntryBuilder::new(R)
            .param("first")
            .enter(),
    );
    // The first call leaves the windows.
    clock.advance(Duration::from_secs(2));
    let dash = start(None);
    let addr = dash.local_addr();
    let row = |addr| {
        let rows = get(addr, "/api/resources?search=dash-rates").json();
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == R)
            .cloned()
            .unwrap_or_else(|| panic!("{R} not in {rows}"))
    };
    // No reading a second old yet: no rates (never a rate over an unknown interval).
    let first = row(addr);
    assert_eq!(first["blocked_per_s"], serde_json::Value::Null, "{first}");
    assert_eq!(first["blocked_by"], serde_json::Value::Null, "{first}");

    // Every limit, with a hotspot rule's per value and the shadow rule's marked.
    assert_eq!(
        first["limits"],
        serde_json::json!([
            {"kind": "flow", "metric": "qps", "limit": 6.0, "per_value": false, "param": null,
             "shadow": false},
            {"kind": "flow", "metric": "qps", "limit": 2.0, "per_value": false, "param": null,
             "shadow": true},
            {"kind": "hotspot", "metric": "qps", "limit": 2.0, "per_value": true, "param": null,
             "param_index": 0, "shadow": false},
        ]),
        "{first}"
    );
    assert_eq!(first["qps_limit"], 6.0);

    // Half a second on, the traffic; half a second later, the rates over that second.
    clock.advance(Duration::from_millis(500));
    rate_traffic(R);
    clock.advance(Duration::from_millis(500));
    let now = row(addr);
    assert_eq!(now["rates_over_s"], 1.0, "{now}");
    assert_eq!(
        now["blocked_by"],
        serde_json::json!({"flow": 6.0, "hotspot": 3.0}),
        "{now}"
    );
    assert_eq!(now["blocked_per_s"], 9.0, "{now}");
    assert_eq!(now["shadow_per_s"], 4.0, "{now}");
    // The same as the running totals say, over the same second.
    let by =
        |row: &serde_json::Value, kind: &str| row["block_total_by_rule"][kind].as_u64().unwrap();
    assert_eq!(
        (
            by(&now, "flow") - by(&first, "flow"),
            by(&now, "hotspot") - by(&first, "hotspot")
        ),
        (6, 3)
    );

    // Two seconds later, with no traffic: over the newest reading a second old (the one just
    // taken), nothing blocked.
    clock.advance(Duration::from_secs(2));
    let quiet = row(addr);
    assert_eq!(quiet["rates_over_s"], 2.0, "{quiet}");
    assert_eq!(quiet["blocked_per_s"], 0.0, "{quiet}");
    assert_eq!(quiet["blocked_by"], serde_json::json!({}), "{quiet}");
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
}
// ---- honest answers from the rules API ----------------------------------------------------

#[path = "../support/memory_source.rs"]
pub(crate) mod memory_source;
use memory_source::MemorySource;

const COMMENTED: &str = "# checkout is limited while the new database warms up\n\
                         flow:\n  - resource: honest-checkout # per second\n    threshold: 9\n";

fn put_as(addr: SocketAddr, content_type: &str, if_match: &str, body: &str) -> Reply {
    request(
        addr,
        "PUT",
        "/api/rules",
        &[
            ("Authorization", &bearer()),
            ("Content-Type", content_type),
            ("If-Match", if_match),
        ],
        body,
    )
}

fn get_yaml(addr: SocketAddr) -> Reply {
    request(
        addr,
        "GET",
        "/api/rules",
        &[("Authorization", &bearer()), ("Accept", "application/yaml")],
        "",
    )
}

#[test]
fn a_put_through_a_source_this_process_does_not_watch_is_written_and_not_applied() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let source = MemorySource::default();
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .token(TOKEN)
        .rules_source(source.clone())
        .start()
        .unwrap();
    let addr = dash.local_addr();

    // Nothing watches the source here: written, and said not to be in force.
    let r = put_as(addr, "application/yaml", "\"v0\"", COMMENTED);
    assert_eq!(r.status, 200, "{}", r.body);
    let b = r.json();
    assert_eq!(
        (&b["applied"], &b["written"]),
        (&false.into(), &true.into()),
        "{b}"
    );
    assert_eq!(b["etag"], "\"v1\"");
    assert_eq!(
        source.document(),
        Some((COMMENTED.to_owned(), 1)),
        "stored as sent"
    );
    assert_eq!(rules::current(), RuleSet::default(), "not in force here");

    // The stored document, byte for byte, with a YAML type and its version.
    let doc = get_yaml(addr);
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body, COMMENTED);
    assert_eq!(doc.header("content-type"), Some("application/yaml"));
    assert_eq!(doc.header("etag"), Some("\"v1\""));

    // Watched: applied once in force, and in force when the answer comes.
    let watcher = rules::watch_source(source.clone()).unwrap();
    assert_eq!(
        rules::flow_rules(),
        vec![FlowRule::qps("honest-checkout", 9.0)]
    );
    let next = COMMENTED.replace("threshold: 9", "threshold: 4");
    let r = put_as(addr, "application/yaml", "\"v1\"", &next);
    assert_eq!(r.status, 200, "{}", r.body);
    let b = r.json();
    assert_eq!(
        (&b["applied"], &b["written"]),
        (&true.into(), &true.into()),
        "{b}"
    );
    assert_eq!(
        rules::flow_rules(),
        vec![FlowRule::qps("honest-checkout", 4.0)]
    );
    assert_eq!(get_yaml(addr).body, next);
    drop(watcher);
    rules::load(RuleSet::default()).unwrap();
}

#[test]
fn a_yaml_rules_file_keeps_its_comments_through_a_save_and_is_shown_as_stored() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("commented");
    let file = dir.join("rules.yaml");
    let dash = start(Some(&file));
    let addr = dash.local_addr();
    // Nothing stored yet: the rules in force, as YAML.
    let first = get_yaml(addr);
    assert_eq!(first.header("content-type"), Some("application/yaml"));
    let tag = first.header("etag").unwrap().to_owned();
    let r = put_as(addr, "application/yaml", &tag, COMMENTED);
    assert_eq!(r.status, 200, "{}", r.body);
    let b = r.json();
    assert_eq!(
        (&b["applied"], &b["written"]),
        (&true.into(), &true.into()),
        "{b}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
    let shown = get_yaml(addr);
    assert_eq!(shown.body, COMMENTED, "byte for byte, comments and all");
    assert_eq!(shown.header("etag"), r.header("etag"));
    // A JSON edit to a YAML file is written as YAML (no comments to keep).
    let json = r#"{"flow": [{"resource": "honest-json", "threshold": 3}]}"#;
    let r = put_as(
        addr,
        "application/json",
        shown.header("etag").unwrap(),
        json,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("resource: honest-json"), "{saved}");
    assert_eq!(get_yaml(addr).body, saved);
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page's editor shows a YAML rules file as it is stored and saves it as YAML: its
/// comments survive an edit made on the page (Debian's Chromium, as `dashboard_browser`).
#[test]
fn the_pages_editor_keeps_a_yaml_documents_comments_through_a_save() {
    use crate::dashboard_browser::{browser, wait_for, Driver};
    use fantoccini::{ClientBuilder, Locator};
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("editor-yaml");
    let file = dir.join("rules.yaml");
    std::fs::write(&file, COMMENTED).unwrap();
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .rules_file(&file)
        .start()
        .unwrap();
    let driver = Driver::start(&driver_path);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", format!("--user-data-dir={}", driver.profile.display()),
                ]
            }),
        );
        let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .expect("a WebDriver session with chromium");
        c.goto(&dash.url()).await.unwrap();
        let text = "return document.getElementById('rules-text').value;";
        wait_for(
            &c,
            Duration::from_secs(10),
            "the document in the editor",
            text,
            |v| v == COMMENTED,
        )
        .await;
        c.execute(
            "var t = document.getElementById('rules-text'); \
             t.value = t.value.replace('threshold: 9', 'threshold: 6'); return null;",
            vec![],
        )
        .await
        .unwrap();
        c.find(Locator::Id("rules-save"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let status = "return document.getElementById('rules-status').textContent;";
        wait_for(&c, Duration::from_secs(5), "the save", status, |v| {
            v == "saved and applied"
        })
        .await;
        c.close().await.unwrap();
    });
    let edited = COMMENTED.replace("threshold: 9", "threshold: 6");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "comments and all"
    );
    assert_eq!(
        rules::flow_rules(),
        vec![FlowRule::qps("honest-checkout", 6.0)]
    );
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
