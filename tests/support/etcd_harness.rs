//! A real etcd (Debian's `etcd-server`) for the etcd source's tests: one member on free
//! loopback ports (client and peer) with its own data directory in a temporary directory,
//! killed by its guard's `Drop`, also when a test fails; `etcdctl` (Debian's `etcd-client`)
//! writes and reads past the source, as an operator would.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sentinel_runtime::rules::source::EtcdSource;

use crate::harness::{free_port, TempDir};

/// Whether `etcd` and `etcdctl` run; without them, `None` after a line saying how to install
/// them, or a panic with `SENTINEL_REQUIRE_SERVERS=1`.
pub fn require_etcd() -> Option<()> {
    let runs = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if runs("etcd", "--version") && runs("etcdctl", "version") {
        return Some(());
    }
    let msg = "skipped: `etcd` or `etcdctl` is not on PATH (install them with `apt-get install \
               etcd-server etcd-client`)";
    if std::env::var("SENTINEL_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("{msg}; SENTINEL_REQUIRE_SERVERS=1 requires them");
    }
    eprintln!("{msg}");
    None
}

/// One etcd member on 127.0.0.1, killed on drop.
pub struct EtcdServer {
    pub client_port: u16,
    child: Option<Child>,
    args: Vec<String>,
    pub dir: TempDir,
}

impl EtcdServer {
    /// Starts one and waits until its JSON gateway answers. A port another process took
    /// between [`free_port`] and etcd's bind is given up for others.
    pub fn start() -> EtcdServer {
        for _ in 0..9 {
            if let Some(server) = Self::try_start() {
                return server;
            }
        }
        panic!("etcd did not start on any of 9 pairs of free ports");
    }

    fn try_start() -> Option<EtcdServer> {
        let dir = TempDir::new("etcd");
        let client_port = free_port();
        let peer_port = free_port();
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let args: Vec<String> = [
            "--name",
            "test",
            "--data-dir",
            &dir.0.join("data").display().to_string(),
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
            "--initial-cluster",
            &format!("test={peer}"),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let mut server = EtcdServer {
            client_port,
            child: None,
            args,
            dir,
        };
        server.spawn().then_some(server)
    }

    /// Starts etcd and waits until it answers a read: false if it exited first (a port was
    /// taken).
    fn spawn(&mut self) -> bool {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.0.join("etcd.log"))
            .expect("etcd's log file");
        let child = Command::new("etcd")
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let probe = EtcdSource::new([self.url()], "/harness/probe").expect("a probe");
        let deadline = Instant::now() + Duration::from_secs(20);
        while probe.get().is_err() {
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().is_ok_and(|exited| exited.is_some()));
            if exited {
                self.child = None;
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not answer on {} within 20 s; its log: {}",
                self.client_port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Its client URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// What etcd wrote to its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("etcd.log")).unwrap_or_default()
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data directory.
    pub fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn(),
            "etcd did not start again on {}: another process took a port; its log: {}",
            self.client_port,
            self.log()
        );
    }

    /// `etcdctl --endpoints url args...` with `stdin`: its output; fails the test if it fails.
    pub fn ctl(&self, args: &[&str], stdin: &[u8]) -> String {
        let mut child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.url()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run etcdctl");
        child
            .stdin
            .take()
            .expect("etcdctl's stdin")
            .write_all(stdin)
            .expect("write to etcdctl");
        let out = child.wait_with_output().expect("etcdctl's output");
        assert!(
            out.status.success(),
            "etcdctl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `etcdctl put key` with `value` (read from stdin: any bytes, any lines).
    pub fn put(&self, key: &str, value: &[u8]) {
        self.ctl(&["put", key], value);
    }

    /// The key's mod revision as `etcdctl get -w json` says it (0: no key).
    pub fn mod_revision(&self, key: &str) -> u64 {
        let out = self.ctl(&["get", key, "-w", "json"], b"");
        let answer: serde_json::Value = serde_json::from_str(&out).expect("etcdctl's JSON");
        answer
            .pointer("/kvs/0/mod_revision")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}
