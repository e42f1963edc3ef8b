//! What the cluster examples share: a `redis-server` of their own on a free loopback port,
//! and a child process killed when dropped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child process (Redis or an instance) when dropped.
pub struct Kill(pub Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `redis-server` on a free loopback port and waits (at most 5 s) until it listens:
/// the server (stopped when dropped) and its URL, or what went wrong in words.
pub fn start() -> Result<(Kill, String), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let redis = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|_| {
            "this example needs redis-server on PATH: `apt-get install redis-server` \
             (Debian, Ubuntu), `brew install redis` (macOS)"
                .to_owned()
        })?;
    let redis = Kill(redis);
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("redis-server did not start".to_owned());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok((redis, format!("redis://127.0.0.1:{port}")))
}
