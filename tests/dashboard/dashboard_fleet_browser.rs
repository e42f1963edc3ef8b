//! The fleet panel in a real browser (Chromium, as `dashboard_browser.rs` drives it) against a
//! real `redis-server`: this process is one instance of a cluster, with a name, a rule watcher
//! and traffic its flow rule blocks; other instances' summaries are written into the store as
//! any writer can. The panel names each instance, says why it blocks (kinds, open breakers,
//! ejected endpoints, shadow rules), which instances lag behind the rules version and then that
//! all run it; a name with a bidi override cannot reorder the figures beside it, and no name
//! widens the page.

// The cluster tests' harness (it allows its own unused parts): its Redis server.
#[path = "../support/redis_harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use fantoccini::ClientBuilder;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::cluster::{Cluster, LIVE_MS};
use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::{self, source::RedisSource};
use serde_json::{json, Value};

use super::dashboard_browser::{browser, wait_for, Driver};

const NS: &str = "fleet-browser";
const API: &str = "fleet-browser-api";
const PAY: &str = "fleet-browser-pay";
const OUT: &str = "fleet-browser-out";
const EVIL: &str = "\u{202E}evil-name\u{202C}";

/// This instance's rules: a flow rule its traffic exceeds, a breaker and an outlier rule that
/// one failed call trips.
fn document() -> String {
    format!(
        "{{\"flow\": [{{\"resource\": \"{API}\", \"threshold\": 5}}], \
         \"circuit_breaker\": [{{\"resource\": \"{PAY}\", \"strategy\": {{\"type\": \
         \"error_count\", \"threshold\": 1}}, \"min_requests\": 1, \"recovery\": \"10m\"}}], \
         \"outlier\": [{{\"resource\": \"{OUT}\", \"strategy\": {{\"type\": \
         \"consecutive_errors\", \"threshold\": 1}}, \"recovery\": \"10m\"}}]}}"
    )
}

/// Writes one summary as any writer to the store can (see `tests/cluster/fleet.rs`).
const WRITE: &str = "local t = redis.call('TIME') \
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
    redis.call('SET', KEYS[2], now .. '|' .. ARGV[2], 'PX', 4750) \
    redis.call('ZADD', KEYS[1], now, ARGV[1]) return 1";

fn resp(args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    out
}

/// The command that writes instance `id`'s summary.
fn write(id: &str, summary: &str) -> String {
    let base = format!("{NS}:fleet");
    let index = format!("{base}:{{{base}}}:index");
    let key = format!("{base}:{{{base}}}:s:{id}");
    resp(&["EVAL", WRITE, "2", &index, &key, id, summary])
}

/// Another instance's summary (the `v2` format of `cluster/fleet.rs`).
fn summary(name: &str, version: u64, pass: u32, rest: &str) -> String {
    format!("v2\t{name}\tother-host\t42\tfingerprint\t{version}\tconnected\t{pass}\t0\t0\n{rest}")
}

/// Sets its flag when dropped: threads of a scope that watch it stop, also when the test
/// panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn the_fleet_panel_says_which_instance_blocks_and_why_and_which_lag() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    if harness::require("redis-server").is_none() {
        return;
    }
    // The rules and the clock are the process's: the tests that load rules here hold the mock
    // clock, one at a time. Held, never advanced: one window, so the flow rule blocks all but
    // its 5 calls, and the breaker and the ejection stay as they are.
    let clock = MockClock::install();
    let redis = harness::RedisServer::start(&[]);
    let source = RedisSource::new(&redis.url(), "fleet-browser-rules").expect("the source");
    let version = source.put(&document(), None).expect("the document");
    let watcher = rules::watch_source(source).expect("the watcher");
    // One failed call each: the breaker opens, the endpoint is ejected.
    if let Ok(e) = sentinel_runtime::entry(PAY) {
        e.set_error();
    }
    if let Ok(e) = sentinel_runtime::EntryBuilder::new(OUT)
        .endpoint("10.9.9.9:80")
        .enter()
    {
        e.set_error();
    }
    let cluster = Cluster::redis(redis.url())
        .namespace(NS)
        .instance_name("browser-real")
        .start()
        .expect("the cluster");
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap();
    // Other instances: one blocking for every reason, one a version behind (until phase 1),
    // one with a name that would reverse the text after it.
    let blocking = summary(
        "checkout-b",
        version,
        80,
        "k\tcircuit_breaker\t4.5\no\tpayments\ne\tpayments\t10.0.0.7:443\n",
    )
    .replace("\t0\t0\n", "\t0\t2.5\n");
    let lagging = summary("checkout-c", version - 1, 10, "");
    let evil = summary(EVIL, version, 123, "");
    let stop = AtomicBool::new(false);
    let phase = AtomicU8::new(0);
    let driver = Driver::start(&driver_path);
    std::thread::scope(|s| {
        // Stops the writer also when an assertion fails (the scope waits for it).
        let _stop = StopOnDrop(&stop);
        s.spawn(|| {
            let mut conn = TcpStream::connect(("127.0.0.1", redis.port)).expect("connect");
            let mut reply = [0u8; 4096];
            while !stop.load(Ordering::Relaxed) {
                let mut batch = vec![write("b", &blocking), write("evil", &evil)];
                if phase.load(Ordering::Relaxed) == 0 {
                    batch.push(write("c", &lagging));
                }
                conn.write_all(batch.concat().as_bytes()).expect("write");
                let mut lines = 0;
                while lines < batch.len() {
                    let k = conn.read(&mut reply).expect("answers");
                    lines += reply[..k].iter().filter(|&&b| b == b'\n').count();
                }
                // This instance's traffic: 20 calls a second, its rule admits 5 (in its one window).
                for _ in 0..20 {
                    drop(sentinel_runtime::entry(API));
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut caps = serde_json::Map::new();
            caps.insert(
                "goog:chromeOptions".into(),
                json!({
                    "binary": chromium,
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--window-size=1400,1100",
                        format!("--user-data-dir={}", driver.profile.display()),
                    ]
                }),
            );
            let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{}", driver.port))
                .await
                .expect("a WebDriver session with chromium");
            c.goto(&dash.url()).await.unwrap();
            let panel = "var p = document.getElementById('fleet-instances'); \
                         return p ? p.innerText : null;";
            let text = wait_for(&c, Duration::from_secs(15), "four instances", panel, |v| {
                v.as_str().is_some_and(|t| {
                    t.contains("browser-real")
                        && t.contains("checkout-b")
                        && t.contains("checkout-c")
                        && t.contains("evil-name")
                })
            })
            .await;
            let text = text.as_str().unwrap_or("");
            // Which one blocks, and why.
            for words in [
                "blocked by: circuit_breaker 4.5/s",
                "breakers open: payments",
                "ejected: 10.0.0.7:443 of payments",
                "shadow rules would block 2.5/s",
                "(this one)",
            ] {
                assert!(text.contains(words), "{words:?} in the panel:\n{text}");
            }
            wait_for(
                &c,
                Duration::from_secs(5),
                "this instance's reason",
                panel,
                |v| {
                    v.as_str().is_some_and(|t| {
                        t.lines()
                            .skip_while(|l| !l.contains("browser-real"))
                            .take(2)
                            .any(|l| {
                                l.contains("blocked by: flow")
                                    && l.contains(&format!("breakers open: {PAY}"))
                                    && l.contains(&format!("ejected: 10.9.9.9:80 of {OUT}"))
                            })
                    })
                },
            )
            .await;
            // The shared limits' refusals by cause: none here (no cluster rule in force).
            let refusals = "return document.getElementById('fleet-refusals').innerText;";
            wait_for(
                &c,
                Duration::from_secs(5),
                "the refusals' line",
                refusals,
                |v| v.as_str() == Some("Shared limits here: no refusals."),
            )
            .await;
            let rules = "return document.getElementById('fleet-rules').innerText;";
            let lag = format!("3 on rules version {version}; lagging (1): checkout-c");
            wait_for(&c, Duration::from_secs(5), "the lagging one", rules, |v| {
                v.as_str().is_some_and(|t| t.contains(&lag))
            })
            .await;

            // The bidi override stays inside its name: the figures follow it, left to right.
            let order = "var li = [].slice.call(document.querySelectorAll('#fleet-instances li'))\
                .filter(function (l) { return l.innerText.indexOf('evil-name') >= 0; })[0]; \
                var name = li.querySelector('.fleet-name').getBoundingClientRect(); \
                var fig = li.querySelector('.fleet-figures'); \
                var r = document.createRange(); r.selectNodeContents(fig); \
                var first = r.getClientRects()[0]; \
                return [name.right, first.left, fig.textContent.indexOf(' 123 pass/s') === 0];";
            let v = c.execute(order, vec![]).await.unwrap();
            let (right, left) = (v[0].as_f64().unwrap_or(1e9), v[1].as_f64().unwrap_or(0.0));
            assert!(
                left >= right - 1.0,
                "the figures start left of the name's end: {v}"
            );
            assert_eq!(v[2], Value::Bool(true), "{v}");
            let wide = "return [document.documentElement.scrollWidth, window.innerWidth];";
            let v = c.execute(wide, vec![]).await.unwrap();
            assert!(
                v[0].as_f64() <= v[1].as_f64(),
                "the page is wider than the window: {v}"
            );

            // The lagging instance stops: all on one version once it leaves the view.
            phase.store(1, Ordering::Relaxed);
            let all = format!("All 3 on rules version {version}.");
            wait_for(
                &c,
                Duration::from_millis(LIVE_MS + 3_000),
                "all on one version",
                rules,
                |v| v.as_str() == Some(all.as_str()),
            )
            .await;
            c.close().await.unwrap();
        });
    });
    drop(dash);
    drop(cluster);
    drop(watcher);
    rules::load(rules::RuleSet::new()).unwrap();
    drop(clock);
}
