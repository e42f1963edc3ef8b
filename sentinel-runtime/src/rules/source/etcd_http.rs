//! The plain HTTP/1.1 the etcd source speaks to etcd's JSON gateway: one `POST` per
//! connection (`Connection: close`), the answer read by its `Content-Length`, chunked, or to
//! the end, never past a bound. Blocking, on `std::net`: the source's calls come from a
//! watcher's thread or from the caller's, in or out of an async runtime, so no runtime of its
//! own may be entered (or dropped) there.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest status line, header line or chunk-size line read.
const MAX_LINE: u64 = 8 * 1024;
/// The most header lines read.
const MAX_HEADERS: usize = 100;
/// How often a stream's reader looks whether it is to stop (its socket's read timeout).
const TICK: Duration = Duration::from_millis(200);

/// An etcd endpoint: `http://host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Endpoint {
    host: String,
    port: u16,
    /// The URL as given (without a trailing `/`), for messages.
    pub(super) url: String,
}

impl Endpoint {
    /// `http://host:port` (a trailing `/` allowed; an IPv6 host in brackets). What else is
    /// refused, and why, is the error.
    pub(super) fn parse(url: &str) -> Result<Endpoint, String> {
        let url = url.trim().trim_end_matches('/');
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(if url.starts_with("https://") {
                format!(
                    "{url}: https is not supported (the source speaks plain HTTP to etcd's \
                     gateway: keep etcd's client port on loopback or a private network)"
                )
            } else {
                format!("{url}: expected http://host:port")
            });
        };
        if rest.contains(['/', '@', '?', '#']) {
            return Err(format!(
                "{url}: expected http://host:port (no path, user or query)"
            ));
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => v6.split_once("]:"),
            None => rest.rsplit_once(':'),
        }
        .ok_or_else(|| format!("{url}: expected http://host:port (the port is missing)"))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("{url}: the port must be a number from 1 to 65535"))?;
        if host.is_empty() {
            return Err(format!("{url}: the host is missing"));
        }
        Ok(Endpoint {
            host: host.to_owned(),
            port,
            url: url.to_owned(),
        })
    }

    fn connect(&self, timeout: Duration) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in (self.host.as_str(), self.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_write_timeout(Some(timeout))?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last
            .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the host has no address")))
    }

    /// Sends `POST path` with a JSON `body`.
    fn send(&self, stream: &mut TcpStream, path: &str, body: &[u8]) -> io::Result<()> {
        let host = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let mut request = Vec::with_capacity(head.len() + body.len());
        request.extend_from_slice(head.as_bytes());
        request.extend_from_slice(body);
        stream.write_all(&request)?;
        stream.flush()
    }

    /// `POST path` with `body`: the answer's status and body, each read within `timeout`; a
    /// body over `max` bytes is an error.
    pub(super) fn post(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
        max: usize,
    ) -> io::Result<(u16, Vec<u8>)> {
        let mut stream = self.connect(timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        self.send(&mut stream, path, body)?;
        let mut reader = BufReader::new(stream);
        let (status, framing) = read_head(&mut reader)?;
        let mut answer = Vec::new();
        Body::new(reader, framing)
            .take(max as u64 + 1)
            .read_to_end(&mut answer)?;
        if answer.len() > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the answer is over {max} bytes"),
            ));
        }
        Ok((status, answer))
    }

    /// `POST path` with `body`, for an answer that streams: its status and its body, read
    /// until it ends, fails, or `stop` is set (then reads fail). Connecting and sending take
    /// at most `timeout` each; reading waits for as long as the stream is open.
    pub(super) fn stream(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
        stop: Arc<AtomicBool>,
    ) -> io::Result<(u16, Body<BufReader<Patient>>)> {
        let mut stream = self.connect(timeout)?;
        self.send(&mut stream, path, body)?;
        stream.set_read_timeout(Some(TICK))?;
        let mut reader = BufReader::new(Patient { stream, stop });
        let (status, framing) = read_head(&mut reader)?;
        Ok((status, Body::new(reader, framing)))
    }
}

/// A socket read that waits out its read timeouts until told to stop: the readers above it
/// never see a timeout in the middle of a message.
pub(super) struct Patient {
    stream: TcpStream,
    stop: Arc<AtomicBool>,
}

impl Read for Patient {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(io::Error::other("stopped"));
            }
            match self.stream.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                other => return other,
            }
        }
    }
}

/// How an answer's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    ToEnd,
}

/// One line (without its `\r\n`), at most [`MAX_LINE`] bytes.
fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    reader.take(MAX_LINE).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            if line.len() as u64 >= MAX_LINE {
                "a line of the answer is too long"
            } else {
                "the answer ended early"
            },
        ));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the answer is not text"))
}

/// The status line and headers: the status and how the body ends.
fn read_head(reader: &mut impl BufRead) -> io::Result<(u16, Framing)> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let status_line = read_line(reader)?;
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| bad(format!("not an HTTP answer: {status_line:?}")))?;
    let mut framing = Framing::ToEnd;
    for _ in 0..MAX_HEADERS {
        let line = read_line(reader)?;
        if line.is_empty() {
            return Ok((status, framing));
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            framing = Framing::Chunked;
        } else if name.eq_ignore_ascii_case("content-length") && framing != Framing::Chunked {
            let len = value
                .parse()
                .map_err(|_| bad(format!("a bad Content-Length: {value:?}")))?;
            framing = Framing::Length(len);
        }
    }
    Err(bad(format!("more than {MAX_HEADERS} header lines")))
}

/// An answer's body.
pub(super) enum Body<R> {
    Length(io::Take<R>),
    Chunked {
        inner: R,
        /// Bytes left in the current chunk.
        left: u64,
        done: bool,
    },
    ToEnd(R),
}

impl<R: BufRead> Body<R> {
    fn new(inner: R, framing: Framing) -> Body<R> {
        match framing {
            Framing::Length(len) => Body::Length(inner.take(len)),
            Framing::Chunked => Body::Chunked {
                inner,
                left: 0,
                done: false,
            },
            Framing::ToEnd => Body::ToEnd(inner),
        }
    }
}

impl<R: BufRead> Read for Body<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Body::Length(inner) => {
                let n = inner.read(buf)?;
                if n == 0 && inner.limit() > 0 && !buf.is_empty() {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                Ok(n)
            }
            Body::ToEnd(inner) => inner.read(buf),
            Body::Chunked { inner, left, done } => {
                if *done || buf.is_empty() {
                    return Ok(0);
                }
                if *left == 0 {
                    let line = read_line(inner)?;
                    let size = line.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(size, 16).map_err(|_| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("a bad chunk size: {line:?}"),
                        )
                    })?;
                    if size == 0 {
                        // Trailers, up to the empty line.
                        while !read_line(inner)?.is_empty() {}
                        *done = true;
                        return Ok(0);
                    }
                    *left = size;
                }
                let want = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                let n = inner.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                if *left == 0 && !read_line(inner)?.is_empty() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a chunk is longer than its size",
                    ));
                }
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(raw: &[u8]) -> io::Result<(u16, Vec<u8>)> {
        let mut reader = raw;
        let (status, framing) = read_head(&mut reader)?;
        let mut out = Vec::new();
        Body::new(reader, framing).read_to_end(&mut out)?;
        Ok((status, out))
    }

    #[test]
    fn endpoints_are_plain_http_with_a_host_and_port() {
        let ep = Endpoint::parse("http://127.0.0.1:2379/").expect("an endpoint");
        assert_eq!((ep.host.as_str(), ep.port), ("127.0.0.1", 2379));
        assert_eq!(ep.url, "http://127.0.0.1:2379");
        let v6 = Endpoint::parse("http://[::1]:2379").expect("an IPv6 endpoint");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 2379));
        for (bad, says) in [
            ("https://etcd:2379", "https is not supported"),
            ("etcd:2379", "expected http://host:port"),
            ("http://etcd", "the port is missing"),
            ("http://etcd:0", "1 to 65535"),
            ("http://etcd:99999", "1 to 65535"),
            ("http://:2379", "the host is missing"),
            ("http://user:pw@etcd:2379", "no path, user or query"),
            ("http://etcd:2379/v3", "no path, user or query"),
        ] {
            let err = Endpoint::parse(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn bodies_are_read_by_length_by_chunks_or_to_the_end() {
        let by_length = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloextra";
        assert_eq!(body(by_length).unwrap(), (200, b"hello".to_vec()));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                        3\r\nhel\r\n2;ext=1\r\nlo\r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(body(chunked).unwrap(), (200, b"hello".to_vec()));
        let to_end = b"HTTP/1.0 404 Not Found\r\n\r\ngone";
        assert_eq!(body(to_end).unwrap(), (404, b"gone".to_vec()));
    }

    #[test]
    fn broken_answers_are_errors() {
        for raw in [
            &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        ] {
            assert!(body(raw).is_err(), "{:?}", String::from_utf8_lossy(raw));
        }
        let long = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(9000));
        assert!(body(long.as_bytes()).is_err());
    }
}
