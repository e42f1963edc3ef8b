//! Real redis-server processes and instance processes for the cluster tests (and the faults:
//! a TCP proxy that stalls, another writer): each started on a
//! free loopback port in a temporary directory, each killed by its guard's `Drop`, also when a
//! test fails.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Whether `program` runs; without it, `None` after a line saying how to install it, or a panic
/// with `SENTINEL_REQUIRE_SERVERS=1`.
pub fn require(program: &str) -> Option<()> {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some(());
    }
    let msg = format!(
        "skipped: `{program}` is not on PATH (install it with `apt-get install redis-server`, \
         which brings redis-cli too)"
    );
    if std::env::var("SENTINEL_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("{msg}; SENTINEL_REQUIRE_SERVERS=1 requires it");
    }
    eprintln!("{msg}");
    None
}

/// A free loopback port (bound, then released: the server binds it next), never one this
/// process handed out before, nor one 10 000 away from such a port (a Redis Cluster node also
/// listens on its port + 10 000): tests run side by side.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    for _ in 0..10_000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let mut given = GIVEN.lock().unwrap_or_else(PoisonError::into_inner);
        let near = [
            Some(port),
            port.checked_add(10_000),
            port.checked_sub(10_000),
        ];
        // A cluster node's bus port must be a port too.
        if port <= 55_535 && !near.iter().flatten().any(|p| given.contains(p)) {
            given.insert(port);
            return port;
        }
    }
    panic!("no free loopback port at or below 55 535 in 10 000 tries (ip_local_port_range?)");
}

pub fn wall_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sentinel-{tag}-{}-{}-{}",
            std::process::id(),
            wall_us(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A redis-server on 127.0.0.1, killed on drop.
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    args: Vec<String>,
    pub dir: TempDir,
}

impl RedisServer {
    /// Starts one with `extra` arguments (after the port, persistence off and the directory;
    /// a config file path goes first when `config` is given).
    pub fn start(extra: &[&str]) -> RedisServer {
        Self::start_with(None, extra)
    }

    /// Like [`RedisServer::start`], with a config file's text first. A port that another
    /// process took between [`free_port`] and the server's bind is given up for another one.
    pub fn start_with(config: Option<&str>, extra: &[&str]) -> RedisServer {
        for _ in 0..9 {
            if let Some(server) = Self::try_start(config, extra) {
                return server;
            }
        }
        panic!("redis-server did not start on any of 9 free ports");
    }

    fn try_start(config: Option<&str>, extra: &[&str]) -> Option<RedisServer> {
        let dir = TempDir::new("redis");
        let port = free_port();
        let mut args = Vec::new();
        if let Some(text) = config {
            let path = dir.0.join("redis.conf");
            std::fs::write(&path, text).expect("write redis.conf");
            args.push(path.display().to_string());
        }
        for a in [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &dir.0.display().to_string(),
            "--unixsocket",
            &dir.0.join("redis.sock").display().to_string(),
        ] {
            args.push(a.to_owned());
        }
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let mut server = RedisServer {
            port,
            child: None,
            args,
            dir,
        };
        server.spawn().then_some(server)
    }

    /// Starts the server and waits until it listens: false if it exited first (its port was
    /// taken, as another process may take a port between [`free_port`] and the server's bind).
    fn spawn(&mut self) -> bool {
        // A server binds its TCP port before it makes its Unix socket, and exits when the port
        // is taken: the socket file says the port that answers is this server's.
        let socket = self.dir.0.join("redis.sock");
        let _ = std::fs::remove_file(&socket);
        let child = self.child.insert(
            Command::new("redis-server")
                .args(&self.args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server"),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(socket.exists() && TcpStream::connect(("127.0.0.1", self.port)).is_ok()) {
            if child.try_wait().is_ok_and(|exited| exited.is_some()) {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not listen on {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (empty: no persistence).
    pub fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn(),
            "redis-server did not start again on {}: another process took the port",
            self.port
        );
    }

    /// `redis-cli -p port args...`'s output.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Redis Cluster of three masters on loopback, made with `redis-cli --cluster create`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        Self::start_with_replicas(0, 2000)
    }

    /// Three masters with `replicas` replicas each, whose nodes count a node unreachable for
    /// `node_timeout_ms` as failed (a replica then takes over its master's slots).
    pub fn start_with_replicas(replicas: usize, node_timeout_ms: u64) -> RedisCluster {
        let timeout = node_timeout_ms.to_string();
        let nodes: Vec<RedisServer> = (0..3 * (1 + replicas))
            .map(|_| {
                RedisServer::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    &timeout,
                ])
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Every node must see the whole cluster before clients connect (at most 10 s).
        let deadline = Instant::now() + Duration::from_secs(10);
        for node in &nodes {
            while !node.cli(&["cluster", "info"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "the cluster did not become ok");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // And every replica must be in sync with its master (at most 10 s).
        for node in &nodes {
            while node.cli(&["role"]).starts_with("slave")
                && !node
                    .cli(&["info", "replication"])
                    .contains("master_link_status:up")
            {
                assert!(Instant::now() < deadline, "a replica did not sync");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        RedisCluster { nodes }
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}

/// What an instance process printed, with when the harness read it.
#[derive(Debug)]
pub struct Line {
    pub instance: usize,
    pub text: String,
}

/// Instance processes (`cluster_instance`), killed on drop.
pub struct Instances {
    children: Vec<Child>,
    stdins: Vec<ChildStdin>,
    lines: Receiver<Line>,
}

/// What one instance reported at its end.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub fields: std::collections::BTreeMap<String, u64>,
    /// (wall µs, state) of every change.
    pub states: Vec<(u128, String)>,
    /// (ms since go, admitted in the 100 ms, state at the tick).
    pub ticks: Vec<(u64, u64, String)>,
    /// The health at each tick (`connected`, `degraded`, `fallback`), in tick order.
    pub healths: Vec<String>,
    /// The instances and those held back that `status()` said at each tick, in tick order.
    pub counts: Vec<(u64, u64)>,
    /// The admitted calls of each hotspot value (`alice`, `bob`, `carol`) in each tick, in
    /// tick order.
    pub values: Vec<[u64; 3]>,
}

impl Report {
    pub fn get(&self, field: &str) -> u64 {
        self.fields.get(field).copied().unwrap_or(0)
    }
}

/// `field` of each instance's report, in instance order.
pub fn each(reports: &[Report], field: &str) -> Vec<u64> {
    reports.iter().map(|r| r.get(field)).collect()
}

impl Instances {
    /// Starts one process per argument list.
    pub fn spawn(args: &[Vec<String>]) -> Instances {
        Self::spawn_program(env!("CARGO_BIN_EXE_cluster_instance"), args)
    }

    /// Starts one process of `program` per argument list.
    pub fn spawn_program(program: &str, args: &[Vec<String>]) -> Instances {
        let (tx, rx) = channel();
        let mut children = Vec::new();
        let mut stdins = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let mut child = Command::new(program)
                .args(a)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start cluster_instance");
            stdins.push(child.stdin.take().expect("stdin"));
            let stdout = child.stdout.take().expect("stdout");
            let tx = tx.clone();
            std::thread::spawn(move || {
                for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(Line { instance: i, text }).is_err() {
                        break;
                    }
                }
            });
            children.push(child);
        }
        Instances {
            children,
            stdins,
            lines: rx,
        }
    }

    /// The next line that `wanted` takes (others are skipped), if one comes within `limit`.
    pub fn line_within(&self, limit: Duration, wanted: impl Fn(&Line) -> bool) -> Option<Line> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Kills instance `i` (SIGKILL: it cannot say goodbye).
    pub fn kill(&mut self, i: usize) {
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
    }

    /// Waits for every instance's `ready` (at most `limit`), then says `go` to all.
    pub fn go(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut ready = vec![false; self.children.len()];
        while !ready.iter().all(|r| *r) {
            let line = self.next(deadline, "ready");
            if line.text == "ready" {
                ready[line.instance] = true;
            } else {
                panic!(
                    "instance {} said {:?} before ready",
                    line.instance, line.text
                );
            }
        }
        for stdin in &mut self.stdins {
            writeln!(stdin, "go").expect("say go");
            stdin.flush().expect("flush go");
        }
    }

    fn next(&self, deadline: Instant, waiting_for: &str) -> Line {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no {waiting_for} from the instances in time"),
            Err(RecvTimeoutError::Disconnected) => panic!("the instances closed their output"),
        }
    }

    /// Reads every line until each instance said `done` (at most `limit`), calling `on_line`
    /// with each line as it comes.
    pub fn collect(&mut self, limit: Duration, mut on_line: impl FnMut(&Line)) -> Vec<Report> {
        let deadline = Instant::now() + limit;
        let mut reports = vec![Report::default(); self.children.len()];
        let mut done = vec![false; self.children.len()];
        while !done.iter().all(|d| *d) {
            let line = self.next(deadline, "done");
            on_line(&line);
            let r = &mut reports[line.instance];
            let mut words = line.text.split_whitespace();
            match words.next() {
                Some("state") => {
                    let state = words.next().unwrap_or("").to_owned();
                    let at = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                    r.states.push((at, state));
                }
                Some("tick") => {
                    let ms = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                    let n = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                    r.ticks.push((ms, n, words.next().unwrap_or("").to_owned()));
                    r.healths.push(words.next().unwrap_or("").to_owned());
                    let mut number = || words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                    let counts = (number(), number());
                    r.counts.push(counts);
                    let mut values = [0; 3];
                    let per_value = words.next().unwrap_or("").split(',');
                    for (v, n) in values.iter_mut().zip(per_value) {
                        *v = n.parse().unwrap_or(0);
                    }
                    r.values.push(values);
                }
                Some("done") => {
                    for word in words {
                        if let Some((k, v)) = word.split_once('=') {
                            r.fields.insert(k.to_owned(), v.parse().unwrap_or(0));
                        }
                    }
                    done[line.instance] = true;
                }
                // The fleet's view as the instance sees it (`--watch-fleet`): `on_line` reads it.
                Some("fleet") => {}
                _ => panic!("instance {} said {:?}", line.instance, line.text),
            }
        }
        for child in &mut self.children {
            let _ = child.wait();
        }
        reports
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The arguments of one instance.
pub fn instance_args(
    urls: &[String],
    cluster: bool,
    namespace: &str,
    rest: &[&str],
) -> Vec<String> {
    let mut args = Vec::new();
    for url in urls {
        args.push("--redis".to_owned());
        args.push(url.clone());
    }
    if cluster {
        args.push("--redis-cluster".to_owned());
    }
    args.push("--namespace".to_owned());
    args.push(namespace.to_owned());
    args.extend(rest.iter().map(|s| (*s).to_owned()));
    args
}

/// A TCP proxy on loopback to `upstream` that forwards both ways until stalled: then it holds
/// every byte (and new connections get nothing), as a network partition does. With
/// `delay_us` set it delays every byte that long in each direction, as a slow network does.
pub struct Proxy {
    pub port: u16,
    pub stalled: Arc<AtomicBool>,
    /// How long each chunk is held in each direction, µs (a round trip is twice this).
    pub delay_us: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let stalled = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let delay_us = Arc::new(AtomicU64::new(0));
        let (stalled2, stop2, delay2) = (
            Arc::clone(&stalled),
            Arc::clone(&stop),
            Arc::clone(&delay_us),
        );
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        for (from, to) in [
                            (client.try_clone(), server.try_clone()),
                            (server.try_clone(), client.try_clone()),
                        ] {
                            if let (Ok(from), Ok(to)) = (from, to) {
                                let (stalled, stop, delay) = (
                                    Arc::clone(&stalled2),
                                    Arc::clone(&stop2),
                                    Arc::clone(&delay2),
                                );
                                std::thread::spawn(move || pump(from, to, &stalled, &delay, &stop));
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Proxy {
            port,
            stalled,
            delay_us,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to`, holding what it read while `stalled`, each chunk `delay_us` (as it
/// is when read) after it was read.
fn pump(
    mut from: TcpStream,
    to: TcpStream,
    stalled: &AtomicBool,
    delay_us: &AtomicU64,
    stop: &AtomicBool,
) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(5)));
    let mut buf = [0u8; 16 * 1024];
    // A delay line: chunks are written by a thread of their own when due, in order.
    let (tx, rx) = channel::<(Instant, Vec<u8>)>();
    let writer = {
        let mut to = to.try_clone().ok();
        std::thread::spawn(move || {
            for (due, chunk) in rx {
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let written = to.as_mut().map(|to| to.write_all(&chunk).is_ok());
                if written != Some(true) {
                    break;
                }
            }
        })
    };
    while !stop.load(Ordering::Relaxed) {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => break,
        };
        while stalled.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let due = Instant::now() + Duration::from_micros(delay_us.load(Ordering::Relaxed));
        if tx.send((due, buf[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
    let _ = to.shutdown(Shutdown::Both);
}

/// Writes 1 kB values under fresh keys to Redis on `port`, about `per_sec` a second, until
/// `stop`: other writers that make an LRU store evict.
pub fn write_junk(port: u16, per_sec: u64, stop: &AtomicBool) {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let value = "x".repeat(1_000);
    let batch = 50u64;
    let mut n = 0u64;
    let mut reply = [0u8; 64 * 1024];
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let mut out = String::new();
        for _ in 0..batch {
            let key = format!("junk:{n}");
            n += 1;
            out.push_str(&format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            ));
        }
        if conn.write_all(out.as_bytes()).is_err() {
            return;
        }
        // Each reply is `+OK\r\n` (or an error line): read until `batch` lines came.
        let mut lines = 0;
        while lines < batch {
            match conn.read(&mut reply) {
                Ok(0) | Err(_) => return,
                Ok(k) => lines += reply[..k].iter().filter(|&&b| b == b'\n').count() as u64,
            }
        }
        let due = Duration::from_secs_f64(n as f64 / per_sec as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// The most admitted by all instances together in one second (ten consecutive 100 ms ticks)
/// among the seconds that begin at or after `from_ms` and end by `to_ms` (ms since go).
pub fn busiest_second(reports: &[Report], from_ms: u64, to_ms: u64) -> (u64, u64) {
    busiest_second_of(reports, from_ms, to_ms, |_, n, _| n)
}

/// [`busiest_second`] of the calls of hotspot value `value` (0: `alice`, 1: `bob`, 2: `carol`).
pub fn busiest_second_of_value(
    reports: &[Report],
    value: usize,
    from_ms: u64,
    to_ms: u64,
) -> (u64, u64) {
    busiest_second_of(reports, from_ms, to_ms, |r, _, i| {
        r.values.get(i).map_or(0, |v| v[value])
    })
}

/// [`busiest_second`] of what `admitted(report, admitted in the tick, tick index)` counts.
fn busiest_second_of(
    reports: &[Report],
    from_ms: u64,
    to_ms: u64,
    admitted: impl Fn(&Report, u64, usize) -> u64,
) -> (u64, u64) {
    let mut per_tick = std::collections::BTreeMap::<u64, u64>::new();
    for r in reports {
        for (i, (ms, n, _)) in r.ticks.iter().enumerate() {
            *per_tick.entry(*ms).or_default() += admitted(r, *n, i);
        }
    }
    // Tick `ms` counts the calls of (ms - 100, ms].
    let mut best = (0, 0);
    let mut start = from_ms;
    while start + 1_000 <= to_ms {
        let n: u64 = per_tick
            .range(start + 100..=start + 1_000)
            .map(|(_, n)| n)
            .sum();
        if n > best.0 {
            best = (n, start);
        }
        start += 100;
    }
    best
}

/// Whether some instance reported `health` at a tick within `from_ms..=to_ms`.
pub fn reported(reports: &[Report], health: &str, from_ms: u64, to_ms: u64) -> bool {
    reports.iter().any(|r| {
        r.ticks
            .iter()
            .zip(&r.healths)
            .any(|((ms, _, _), h)| *ms >= from_ms && *ms <= to_ms && h == health)
    })
}
