//! A `redis-server` of a unit test's own, reached through a Unix socket in a temporary
//! directory (no port to race for), for the tests of the store's scripts
//! (`script_tests.rs`, `fleet_script_tests.rs`). Skipped without `redis-server` on `PATH`,
//! unless `SENTINEL_REQUIRE_SERVERS=1`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ::redis::Connection;

/// A `redis-server` of this test's own, stopped and its directory removed when dropped.
pub(super) struct Server {
    child: Child,
    dir: PathBuf,
}

impl Server {
    /// Starts one in a temporary directory named after `name` (unique among the tests of one
    /// process), or `None` (after saying why) when `redis-server` is not installed.
    pub(super) fn start(name: &str) -> Option<Server> {
        let dir = std::env::temp_dir().join(format!("sentinel-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let socket = dir.join("redis.sock");
        let spawned = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&socket)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            let msg = "skipped: `redis-server` is not on PATH (apt-get install redis-server)";
            assert!(
                std::env::var("SENTINEL_REQUIRE_SERVERS").as_deref() != Ok("1"),
                "{msg}; SENTINEL_REQUIRE_SERVERS=1 requires it"
            );
            eprintln!("{msg}");
            return None;
        };
        Some(Server { child, dir })
    }

    /// A connection, once the server answers (at most 10 s).
    pub(super) fn connect(&self) -> Connection {
        let url = format!("redis+unix://{}", self.dir.join("redis.sock").display());
        let client = ::redis::Client::open(url).expect("a valid socket URL");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut conn) = client.get_connection()
                && ::redis::cmd("PING").query::<String>(&mut conn).is_ok()
            {
                return conn;
            }
            assert!(Instant::now() < deadline, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
