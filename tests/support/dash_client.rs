//! A small HTTP/1.1 client for the dashboard's tests (`dashboard_safety`): requests on their
//! own connections with every header chosen, kept-alive connections, event streams read with
//! a bound, and the temporary directories the save tests use.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "safety-token-0123456789abcdef";

pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }
}

/// The text of one request (`Host` is the bound address).
pub fn request_text(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req
}

/// Reads one answer (its head, and a body of `Content-Length` bytes) off `stream`.
pub fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut buf).expect("an answer");
        assert!(
            n > 0,
            "closed before an answer: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let status = head[9..12].parse().expect("a status");
    let mut reply = Reply {
        status,
        head,
        body: String::new(),
    };
    let len: usize = reply
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = raw[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut buf).expect("the body");
        assert!(n > 0, "closed in the body");
        body.extend_from_slice(&buf[..n]);
    }
    reply.body = String::from_utf8_lossy(&body).into_owned();
    reply
}

/// One request on its own connection, closed after the answer.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut all = headers.to_vec();
    all.push(("Connection", "close"));
    stream
        .write_all(request_text(addr, method, path, &all, body).as_bytes())
        .unwrap();
    read_reply(&mut stream)
}

pub fn auth() -> (&'static str, String) {
    ("Authorization", format!("Bearer {TOKEN}"))
}

pub fn get(addr: SocketAddr, path: &str) -> Reply {
    let (n, v) = auth();
    request(addr, "GET", path, &[(n, &v)], "")
}

/// A kept-alive connection that has made one request and read its answer.
pub fn used_connection(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (n, v) = auth();
    stream
        .write_all(request_text(addr, "GET", "/api/rules", &[(n, &v)], "").as_bytes())
        .unwrap();
    assert_eq!(read_reply(&mut stream).status, 200);
    stream
}

/// Whether the server has closed `stream`, waiting at most `within`.
pub fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// An event stream being read.
pub struct Stream {
    pub stream: TcpStream,
    pub seen: String,
}

impl Stream {
    pub fn open(addr: SocketAddr) -> Stream {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let (n, v) = auth();
        let text = request_text(
            addr,
            "GET",
            "/api/events",
            &[(n, &v), ("Accept", "text/event-stream")],
            "",
        );
        stream.write_all(text.as_bytes()).unwrap();
        let mut s = Stream {
            stream,
            seen: String::new(),
        };
        s.until(|seen| seen.contains("\r\n\r\n"));
        assert!(s.seen.starts_with("HTTP/1.1 200"), "{}", s.seen);
        s
    }

    pub fn until(&mut self, done: impl Fn(&str) -> bool) {
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
                Err(e) => panic!("{e}; so far:\n{}", self.seen),
            }
        }
    }
}

pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sentinel-dash-safety-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
