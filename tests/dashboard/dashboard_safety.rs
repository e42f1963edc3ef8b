//! The dashboard on a shared host, as an attacker and a second editor find it: connections
//! bounded (a cap, a header timeout, an idle timeout; event streams with a cap of their own),
//! the service answering on its own port while idle sockets are held against the dashboard's
//! in a process that may open only 256 files, no cookie taken as a credential, rule saves
//! that do not follow planted symlinks, and rules files read back at start.
//!
//! The client is a few lines of HTTP/1.1 over a `TcpStream`. Tests that touch the rules in
//! force hold the mock clock, which also runs them one at a time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::dashboard::{Dashboard, DashboardHandle};
use sentinel_runtime::rules::{self, FlowRule, RuleSet};

#[path = "../support/dash_client.rs"]
mod dash_client;
use dash_client::{
    auth, closed_within, get, names_in, request, temp_dir, used_connection, Reply, Stream, TOKEN,
};

fn start(d: Dashboard) -> DashboardHandle {
    d.bind("127.0.0.1:0".parse().unwrap())
        .token(TOKEN)
        .start()
        .unwrap()
}

// ---- connections ------------------------------------------------------------------------------

/// The environment variable that makes `child_service_with_a_dashboard` the service.
const CHILD: &str = "SENTINEL_DASH_SAFETY_CHILD";

/// The child's side of the next test: a service answering `ok` on its own port (each request
/// opening two files, as a real service's would), with a dashboard (default settings), until
/// its standard input closes (at most two minutes). Ignored: only the next test runs it, in its
/// child process (with `--ignored`).
#[test]
#[ignore = "the child process of four_hundred_idle_connections_do_not_starve_a_service_that_may_open_256_files"]
fn child_service_with_a_dashboard() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "runs only as the child of four_hundred_idle_connections_..."
    );
    let service = TcpListener::bind("127.0.0.1:0").unwrap();
    let service_addr = service.local_addr().unwrap();
    std::thread::spawn(move || loop {
        match service.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 1024];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                // Like most requests of a real service, this one needs files of its own (a
                // log, a database connection): two, open at once.
                let files = (
                    std::fs::File::open("/proc/self/stat"),
                    std::fs::File::open("/proc/self/status"),
                );
                let answer: &[u8] = match files {
                    (Ok(_), Ok(_)) => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    _ => b"HTTP/1.1 503 No Files\r\nContent-Length: 8\r\nConnection: close\r\n\r\nno files",
                };
                let _ = s.write_all(answer);
            }
            // Out of descriptors: that is what the parent looks for; keep trying.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    });
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .token(TOKEN)
        .start()
        .unwrap();
    println!(
        "CHILD-READY dash={} service={service_addr}",
        dash.local_addr()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(120));
    drop(dash);
}

/// Kills the child on drop, also when the test fails.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn four_hundred_idle_connections_do_not_starve_a_service_that_may_open_256_files() {
    let exe = std::env::current_exe().unwrap();
    // The child test's path in this binary: its module (the crate's name left out), then its name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let child_test = format!("{module}::child_service_with_a_dashboard");
    let child = Command::new("prlimit")
        .arg("--nofile=256:256")
        .arg("--")
        .arg(&exe)
        .args([
            "--exact",
            child_test.as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("prlimit (util-linux) runs the child");
    let mut child = Reaped(child);
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The harness may print its "test ... " before it on the same line.
            if let Some((_, rest)) = line.split_once("CHILD-READY ") {
                let _ = tx.send(rest.to_owned());
            }
        }
    });
    let ready = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the child service starts");
    let addr_of = |key: &str| -> SocketAddr {
        ready
            .split(' ')
            .find_map(|kv| kv.strip_prefix(key))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (dash, service) = (addr_of("dash="), addr_of("service="));

    // 400 connections to the dashboard that send nothing, held (past the process's 256 files;
    // a server that stops accepting leaves some of them waiting in its backlog).
    let held: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect_timeout(&dash, Duration::from_secs(1)).ok())
        .collect();
    assert!(held.len() > 256, "only {} connected", held.len());

    // The service still answers on its own port, every time.
    let mut answered = 0;
    for _ in 0..10 {
        let Ok(mut s) = TcpStream::connect_timeout(&service, Duration::from_secs(5)) else {
            continue;
        };
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut got = String::new();
        let _ = s.read_to_string(&mut got);
        if got.ends_with("ok") {
            answered += 1;
        }
    }
    assert_eq!(answered, 10, "the service answered {answered} of 10 while 400 idle connections were held on the dashboard");

    // And the dashboard answers its operator: an idle connection makes room.
    let r = get(dash, "/api/resources");
    assert_eq!(r.status, 200, "{}", r.body);
    drop(held);
    drop(child.0.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the child did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn past_the_cap_the_connection_idle_longest_is_closed_to_make_room() {
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    // The default cap is 64: 64 kept-alive connections, the first idle longest.
    let mut idle: Vec<TcpStream> = (0..64).map(|_| used_connection(addr)).collect();
    let r = get(addr, "/api/resources");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        closed_within(&mut idle[0], Duration::from_secs(10)),
        "the connection idle longest is still open past the cap"
    );
    // The others stay (one more may have made room for this test's own request's successor).
    assert!(!closed_within(&mut idle[63], Duration::from_millis(200)));
}

/// One tokenless client of the lockout test: opens a connection, sends `first` (one byte of a
/// request, a whole request without the token, or nothing), waits until the dashboard closes
/// it (or answers), and opens another, until `stop`.
fn stranger(addr: SocketAddr, first: &'static [u8], stop: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    let mut buf = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
        if s.write_all(first).is_err() {
            continue;
        }
        // Held until the dashboard closes it (or answers a whole request, then closes it).
        while !stop.load(Ordering::Relaxed) {
            match s.read(&mut buf) {
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
    }
}

#[test]
fn tokenless_clients_holding_and_churning_more_connections_than_the_cap_lock_nobody_out() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let whole: &'static [u8] = Box::leak(
        format!("GET /api/rules HTTP/1.1\r\nHost: {addr}\r\n\r\n")
            .into_bytes()
            .into_boxed_slice(),
    );
    // 70 connections that each send one byte and reopen when closed (the cap is 64), 20 that
    // send nothing, and 10 that send whole requests without the token, over and over.
    let firsts: Vec<&'static [u8]> = std::iter::repeat_n(&b"G"[..], 70)
        .chain(std::iter::repeat_n(&b""[..], 20))
        .chain(std::iter::repeat_n(whole, 10))
        .collect();
    let strangers: Vec<_> = firsts
        .into_iter()
        .map(|first| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || stranger(addr, first, &stop))
        })
        .collect();
    // Let them fill every slot.
    std::thread::sleep(Duration::from_millis(500));
    let mut answered = 0;
    let mut times = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let ok = (|| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
            let (n, v) = auth();
            let text = dash_client::request_text(addr, "GET", "/api/rules", &[(n, &v)], "");
            s.write_all(text.as_bytes()).ok()?;
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).ok().filter(|n| *n > 0)?;
                head.extend_from_slice(&buf[..n]);
            }
            Some(head.starts_with(b"HTTP/1.1 200"))
        })()
        .unwrap_or(false);
        let took = started.elapsed();
        if ok && took <= Duration::from_secs(3) {
            answered += 1;
        }
        times.push(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for s in strangers {
        s.join().unwrap();
    }
    assert!(
        answered >= 9,
        "the user with the token was answered {answered} times of 10 within 3 s: {times:?}"
    );
    // The dashboard serves again once they have gone.
    assert_eq!(get(addr, "/api/rules").status, 200);
}

#[test]
fn silent_and_half_sent_connections_are_closed_by_the_timeouts() {
    let header = Duration::from_millis(300);
    let dash = start(
        Dashboard::new()
            .header_timeout(header)
            .idle_timeout(Duration::from_millis(600)),
    );
    let addr = dash.local_addr();
    let opened = Instant::now();
    let mut silent = TcpStream::connect(addr).unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(format!("GET /api/resources HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .unwrap();
    let mut kept = used_connection(addr);
    assert!(
        closed_within(&mut half, Duration::from_secs(10)),
        "a request whose headers never end"
    );
    assert!(
        opened.elapsed() >= header,
        "closed before its header timeout"
    );
    assert!(
        closed_within(&mut silent, Duration::from_secs(10)),
        "a connection that sends nothing"
    );
    assert!(
        closed_within(&mut kept, Duration::from_secs(10)),
        "a kept-alive connection left idle"
    );
    // The dashboard still answers.
    assert_eq!(get(addr, "/api/rules").status, 200);
}

#[test]
fn event_streams_outlive_the_idle_timeout_and_have_a_cap_of_their_own() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dash = start(
        Dashboard::new()
            .max_event_streams(2)
            .max_connections(8)
            .header_timeout(Duration::from_millis(300))
            .idle_timeout(Duration::from_millis(300)),
    );
    let addr = dash.local_addr();
    let mut streams = [Stream::open(addr), Stream::open(addr)];
    let third = get(addr, "/api/events");
    assert_eq!(third.status, 503, "{}", third.body);
    assert!(third.body.contains("at most 2"), "{}", third.body);

    // Past the idle timeout (a silent connection opened now is closed by then), the streams
    // are open and carry the next event.
    let mut silent = TcpStream::connect(addr).unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(10)));
    assert!(rules::load_flow_rules(vec![FlowRule::qps("safety-stream", -1.0)]).is_err());
    for s in &mut streams {
        s.until(|seen| seen.contains(r#""type":"rule_load""#));
    }

    // A stream closed makes room for another.
    drop(streams);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = get(addr, "/api/events");
        if r.status != 503 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a closed stream's place was not freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn limits_out_of_range_are_refused_naming_the_setting() {
    for (d, field) in [
        (Dashboard::new().max_connections(1), "max_connections"),
        (Dashboard::new().max_event_streams(0), "max_event_streams"),
        (
            Dashboard::new().max_connections(4).max_event_streams(4),
            "max_event_streams",
        ),
        (
            Dashboard::new().header_timeout(Duration::ZERO),
            "header_timeout",
        ),
        (
            Dashboard::new().idle_timeout(Duration::from_secs(3600)),
            "idle_timeout",
        ),
    ] {
        let err = d.bind("127.0.0.1:0".parse().unwrap()).start().unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
}

// ---- saves ------------------------------------------------------------------------------------

/// Puts `body` as the new rule set, with the version in force.
fn put_rules(addr: SocketAddr, body: &str) -> Reply {
    let etag = get(addr, "/api/rules").header("etag").unwrap().to_owned();
    let (n, v) = auth();
    request(
        addr,
        "PUT",
        "/api/rules",
        &[(n, &v), ("If-Match", &etag)],
        body,
    )
}

const EDIT: &str = r#"{"flow": [{"resource": "safety-saved", "threshold": 7}]}"#;

#[test]
fn a_symlink_planted_at_the_temporary_name_is_not_followed() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("planted");
    let file = dir.join("rules.json");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "not yours").unwrap();
    let dash = start(Dashboard::new().rules_file(&file));
    // Planted after start, at the name a save used to write (`.NAME.dashboard-<pid>.tmp`).
    let planted = dir.join(format!(".rules.json.dashboard-{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();

    let r = put_rules(dash.local_addr(), EDIT);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "not yours");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the rules file is not a regular file"
    );
    assert_eq!(
        RuleSet::from_path(&file).unwrap(),
        RuleSet::from_json(EDIT).unwrap()
    );
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlinked_rules_file_stays_a_link_and_its_target_is_replaced() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("linked");
    // A ConfigMap-style mount: the path the service is given is a link into another
    // directory.
    let (real, mount) = (dir.join("data"), dir.join("mount"));
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::write(real.join("rules.json"), "{}").unwrap();
    let link = mount.join("rules.json");
    std::os::unix::fs::symlink("../data/rules.json", &link).unwrap();
    let dash = start(Dashboard::new().rules_file(&link));

    let r = put_rules(dash.local_addr(), EDIT);
    assert_eq!(r.status, 200, "{}", r.body);
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    assert_eq!(
        RuleSet::from_path(real.join("rules.json")).unwrap(),
        RuleSet::from_json(EDIT).unwrap()
    );
    assert_eq!(names_in(&real), ["rules.json"]);
    assert_eq!(names_in(&mount), ["rules.json"]);
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn temporary_copies_left_by_an_interrupted_save_are_removed_at_start() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("stale");
    let file = dir.join("rules.yaml");
    for name in [
        ".rules.yaml.dashboard-4242.tmp",
        ".rules.yaml.dashboard-9f8e7d6c5b4a39281706f5e4d3c2b1a0.tmp",
        ".other.yaml.dashboard-4242.tmp",
        "notes.tmp",
    ] {
        std::fs::write(dir.join(name), "half").unwrap();
    }
    let dash = start(Dashboard::new().rules_file(&file));
    assert_eq!(
        names_in(&dir),
        [".other.yaml.dashboard-4242.tmp", "notes.tmp"]
    );
    drop(dash);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- documents are versions -------------------------------------------------------------------

#[test]
fn the_rules_file_is_in_force_after_a_restart() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("restart");
    let file = dir.join("rules.yaml");
    let dash = start(Dashboard::new().rules_file(&file));
    let r = put_rules(dash.local_addr(), EDIT);
    assert_eq!(r.status, 200, "{}", r.body);
    drop(dash);
    // The process restarts: its coded rules are in force until the dashboard starts.
    rules::load(RuleSet::default()).unwrap();
    let dash = start(Dashboard::new().rules_file(&file));
    assert_eq!(rules::current(), RuleSet::from_json(EDIT).unwrap());
    drop(dash);
    rules::load(RuleSet::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_invalid_rules_file_fails_start_naming_the_field() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dir = temp_dir("invalid");
    let file = dir.join("rules.json");
    std::fs::write(
        &file,
        r#"{"flow": [{"resource": "safety-bad", "threshold": -1}]}"#,
    )
    .unwrap();
    let err = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .rules_file(&file)
        .start()
        .map(|_| ())
        .expect_err("an invalid rules file starts the dashboard");
    let text = err.to_string();
    assert!(
        text.contains("threshold") && text.contains("rules.json"),
        "{text}"
    );
    assert_eq!(rules::current(), RuleSet::default());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn if_match_star_is_refused_like_a_missing_version() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dash = start(Dashboard::new());
    let (n, v) = auth();
    let r = request(
        dash.local_addr(),
        "PUT",
        "/api/rules",
        &[(n, &v), ("If-Match", "*")],
        EDIT,
    );
    assert_eq!(r.status, 428, "{}", r.body);
    assert_eq!(rules::current(), RuleSet::default());
}

// ---- no cookie is a credential ----------------------------------------------------------------

#[test]
fn a_cookie_alone_gets_401_on_every_api_path_whatever_its_value() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    drop(sentinel_runtime::entry("safety-cookie"));
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    let etag = get(addr, "/api/rules").header("etag").unwrap().to_owned();
    // The cookie the page used to set, and others carrying the token.
    let cookies = [
        format!("sentinel_dashboard_{}={TOKEN}", addr.port()),
        format!("token={TOKEN}; sentinel={TOKEN}"),
    ];
    for cookie in &cookies {
        for (method, path) in [
            ("GET", "/api/resources"),
            ("GET", "/api/system"),
            ("GET", "/api/rules"),
            ("GET", "/api/events"),
            ("GET", "/api/resources/safety-cookie/history"),
            ("PUT", "/api/rules"),
        ] {
            let r = request(
                addr,
                method,
                path,
                &[("Cookie", cookie), ("If-Match", &etag)],
                EDIT,
            );
            assert_eq!(r.status, 401, "{method} {path} with {cookie}: {}", r.body);
        }
    }
    assert_eq!(rules::current(), RuleSet::default());
}

#[test]
fn the_link_carries_the_token_in_its_fragment_and_never_in_a_query() {
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    assert_eq!(dash.url(), format!("http://{addr}/#token={TOKEN}"));
    // A token in a query string is refused, and no cookie is set.
    for path in [
        format!("/?token={TOKEN}"),
        format!("/api/resources?token={TOKEN}"),
    ] {
        let r = request(addr, "GET", &path, &[], "");
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.header("set-cookie"), None, "{path}");
        assert!(!r.body.contains(TOKEN));
    }
    // The page itself holds no token and no data.
    let page = request(addr, "GET", "/", &[], "");
    assert_eq!(page.status, 200);
    assert!(!page.body.contains(TOKEN));
    assert_eq!(page.header("set-cookie"), None);
}

// ---- what on-call needs -----------------------------------------------------------------------

fn row_of(addr: SocketAddr, path: &str, resource: &str) -> serde_json::Value {
    let r = get(addr, path);
    assert_eq!(r.status, 200, "{}", r.body);
    let rows: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["resource"] == resource)
        .cloned()
        .unwrap_or_else(|| panic!("{resource} not in {rows}"))
}

#[test]
fn each_resource_shows_the_qps_limit_in_force_beside_its_traffic() {
    const R: &str = "safety-limited";
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_flow_rules(vec![
        FlowRule::qps(R, 8.0),
        FlowRule::qps(R, 5.0),
        FlowRule::concurrency(R, 3),
        // Shadow rules limit nothing: not the limits in force.
        FlowRule::qps(R, 1.0).shadow(true),
        FlowRule::concurrency(R, 1).shadow(true),
    ])
    .unwrap();
    drop(sentinel_runtime::entry(R));
    // The second call passes the rules in force; the shadow 1/s rule would have refused it.
    drop(sentinel_runtime::entry(R));
    drop(sentinel_runtime::entry("safety-unlimited"));
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    // By search: another test's 210 busy resources may push these out of the busiest 200.
    let row = row_of(addr, &format!("/api/resources?search={R}"), R);
    assert_eq!(row["qps_limit"], 5.0, "{row}");
    assert_eq!(row["concurrency_limit"], 3, "{row}");
    assert_eq!(row["shadow_block_total"], 1, "{row}");
    assert_eq!(row["shadow_block_total_by_rule"]["flow"], 1, "{row}");
    let free = row_of(
        addr,
        "/api/resources?search=safety-unlimited",
        "safety-unlimited",
    );
    assert!(free["qps_limit"].is_null(), "{free}");
    rules::load(RuleSet::default()).unwrap();
}

#[test]
fn a_search_finds_resources_outside_the_busiest_200() {
    let _clock = MockClock::install();
    for i in 0..210 {
        let name = format!("safety-busy-{i:03}");
        for _ in 0..3 {
            drop(sentinel_runtime::entry(&name));
        }
    }
    drop(sentinel_runtime::entry("safety-Quiet-One"));
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    let r = get(addr, "/api/resources");
    assert!(
        !r.body.contains("safety-Quiet-One"),
        "the test needs it outside the 200"
    );
    let r = get(addr, "/api/resources?search=quiet-o");
    assert_eq!(r.status, 200, "{}", r.body);
    let rows: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["resource"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["safety-Quiet-One"]);
    assert_eq!(r.header("x-sentinel-resources-matched"), Some("1"));
    // Percent-encoded, and bounded.
    let r = get(addr, "/api/resources?search=safety%2Dbusy%2D20");
    assert_eq!(
        r.header("x-sentinel-resources-matched"),
        Some("10"),
        "{}",
        r.body
    );
    let long = "x".repeat(300);
    assert_eq!(
        get(addr, &format!("/api/resources?search={long}")).status,
        400
    );
}

#[test]
fn breaker_transitions_are_told_in_words_with_the_count_that_tripped_them() {
    const R: &str = "safety-breaker-words";
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_circuit_breaker_rules(vec![
        sentinel_runtime::rules::CircuitBreakerRule::error_count(R, 2)
            .min_requests(1)
            .recovery(Duration::from_secs(5)),
    ])
    .unwrap();
    let dash = start(Dashboard::new());
    let mut events = Stream::open(dash.local_addr());
    for _ in 0..2 {
        sentinel_runtime::entry(R).unwrap().set_error();
    }
    let words = "OPENED: 2 errors within 1 s reached its limit of 2; calls are refused for 5 s, \
                 then probed";
    events.until(|s| s.contains(r#""type":"breaker""#));
    assert!(events.seen.contains(words), "{}", events.seen);
    let system = get(dash.local_addr(), "/api/system");
    assert!(system.body.contains(words), "{}", system.body);
    rules::load(RuleSet::default()).unwrap();
}

#[test]
fn a_named_hotspot_parameter_is_shown_by_its_name() {
    const R: &str = "safety-hot-named";
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    rules::load_hotspot_rules(vec![sentinel_runtime::rules::HotspotRule::qps_by_name(
        R, "user", 1.0,
    )])
    .unwrap();
    for _ in 0..3 {
        let _ = sentinel_runtime::EntryBuilder::new(R)
            .param_names(&["region", "user"])
            .param("eu")
            .param("alice")
            .enter();
    }
    let dash = start(Dashboard::new());
    let system: serde_json::Value =
        serde_json::from_str(&get(dash.local_addr(), "/api/system").body).unwrap();
    let rule = system["hotspot"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == R)
        .cloned()
        .unwrap_or_else(|| panic!("{system}"));
    assert_eq!(rule["param"], "user", "{rule}");
    assert_eq!(rule["param_index"], 1, "{rule}");
    rules::load(RuleSet::default()).unwrap();
}

#[test]
fn the_process_cpu_is_sampled_while_the_page_is_open_without_a_system_rule() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    // Work the process hard while the page polls; no system rule is loaded.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let (seen, last) = loop {
        let system: serde_json::Value =
            serde_json::from_str(&get(addr, "/api/system").body).unwrap();
        let cpu = system["cpu_usage"].as_f64().unwrap_or(0.0);
        if cpu > 0.1 || Instant::now() > deadline {
            break (cpu, system);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    busy.join().unwrap();
    assert!(seen > 0.1, "CPU {seen} while a thread spun: {last}");
    assert!(last["cpu_source"].is_string(), "{last}");
}

// ---- hostile documents and small leaks ---------------------------------------------------------

#[path = "../support/expanding_yaml.rs"]
mod expanding_yaml;
use crate::dashboard::memory_source::MemorySource;

#[test]
fn a_yaml_document_that_expands_to_400_mb_gets_422_naming_the_budget_and_nothing_changes() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    let etag = get(addr, "/api/rules").header("etag").unwrap().to_owned();
    let (n, v) = auth();
    let r = request(
        addr,
        "PUT",
        "/api/rules",
        &[
            (n, &v),
            ("If-Match", &etag),
            ("Content-Type", "application/yaml"),
        ],
        &expanding_yaml::expanding_yaml(),
    );
    assert_eq!(r.status, 422, "{:.300}", r.body);
    assert!(r.body.contains("more than 16 MiB"), "{:.300}", r.body);
    assert!(r.body.len() < 4_000, "the answer is {} bytes", r.body.len());
    assert_eq!(rules::current(), RuleSet::default());
}

#[test]
fn a_stale_if_match_is_a_conflict_before_the_body_is_read_and_an_empty_one_is_no_version() {
    let _clock = MockClock::install();
    rules::load(RuleSet::default()).unwrap();
    let source = MemorySource::default();
    source.set("flow: []\n", 3);
    let through_source = start(Dashboard::new().rules_source(source.clone()));
    let in_process = start(Dashboard::new());
    let (n, v) = auth();
    // A bad body with a stale version: the version is what is wrong (a parse would say 422).
    let bad = "flow:\n  - resource: stale\n    threshold: -1\n";
    let r = request(
        through_source.local_addr(),
        "PUT",
        "/api/rules",
        &[
            (n, &v),
            ("If-Match", "\"v2\""),
            ("Content-Type", "application/yaml"),
        ],
        bad,
    );
    assert_eq!(
        (r.status, r.header("etag")),
        (409, Some("\"v3\"")),
        "{}",
        r.body
    );
    assert_eq!(source.document(), Some(("flow: []\n".to_owned(), 3)));
    // An empty If-Match names no version: 428, as a missing one, on both kinds of dashboard.
    for dash in [&through_source, &in_process] {
        let r = request(
            dash.local_addr(),
            "PUT",
            "/api/rules",
            &[(n, &v), ("If-Match", "")],
            EDIT,
        );
        assert_eq!(r.status, 428, "{}", r.body);
    }
    assert_eq!(source.document(), Some(("flow: []\n".to_owned(), 3)));
    assert_eq!(rules::current(), RuleSet::default());
}

#[test]
fn every_spelling_of_a_token_query_parameter_and_a_malformed_escape_get_400() {
    let dash = start(Dashboard::new());
    let addr = dash.local_addr();
    for query in [
        "token=x",
        "TOKEN=x",
        "Token=x",
        "%74oken=x",
        "%54%4F%4B%45%4E=x",
        "a=1&toKen",
        "tok%65n=x&search=a",
    ] {
        let r = get(addr, &format!("/api/resources?{query}"));
        assert_eq!(r.status, 400, "?{query}: {}", r.body);
        assert!(r.body.contains("query string"), "?{query}: {}", r.body);
    }
    for query in ["search=%zz", "search=a%2", "search=%", "search=%ff"] {
        let r = get(addr, &format!("/api/resources?{query}"));
        assert_eq!(r.status, 400, "?{query}: {}", r.body);
        assert!(r.body.contains("search"), "?{query}: {}", r.body);
    }
    // Near misses are not the token.
    for query in ["tokens=1", "search=token", "search=%41"] {
        assert_eq!(
            get(addr, &format!("/api/resources?{query}")).status,
            200,
            "?{query}"
        );
    }
}

#[test]
fn the_builders_debug_form_never_shows_the_token() {
    let secret = "a-secret-token-nobody-logs-0123";
    let shown = format!("{:?}", Dashboard::new().token(secret));
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains("token: \"…\""), "{shown}");
    // Without a token of its own (a random one is drawn at start), it says so.
    assert!(format!("{:?}", Dashboard::new()).contains("token: None"));
}
